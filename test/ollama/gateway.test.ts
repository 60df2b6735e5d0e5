import { describe, expect, it } from 'vitest';
import { Gateway } from '../../src/ollama/gateway.js';
import { startSimulator } from '../../src/sim/index.js';
import { closesAfterEach } from '../helpers/lifecycle.js';

const track = closesAfterEach();

// Chat calls are tested for both gateways in test/backend/gateways.test.ts.
describe('the Ollama gateway', () => {
  it('reads the facts endpoints: tags, ps, show and version', async () => {
    const sim = track(await startSimulator({ models: [{ name: 'llama3.2' }], respond: () => 'x' }));
    const gw = new Gateway(sim.url);
    expect((await gw.tags()).map((t) => t.name)).toEqual(['llama3.2:latest']);
    expect(await gw.ps()).toEqual([]);
    expect((await gw.show('llama3.2')).contextLength).toBe(8192);
    expect(await gw.version()).toMatch(/^\d+\.\d+/);
  });
});
