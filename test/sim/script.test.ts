import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ollama } from 'ollama';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadSimScript, startSimulator } from '../../src/sim/index.js';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'conclave-sim-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function script(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

describe('loadSimScript', () => {
  it('serves scripted replies in order, cycles them, and leaves other models on the default', async () => {
    const path = await script(
      'debate.yaml',
      [
        'models: [alpha, { name: beta, sizeBytes: 2000000000 }]',
        'vramGiB: 8',
        'numParallel: 2',
        'replies:',
        '  alpha:',
        '    - first answer',
        '    - { content: second answer }',
      ].join('\n'),
    );
    const options = await loadSimScript(path);
    expect(options).toMatchObject({ vramBytes: 8 * 1024 ** 3, numParallel: 2, models: [{ name: 'alpha' }, { name: 'beta', sizeBytes: 2e9 }] });

    const sim = await startSimulator(options);
    try {
      const client = new Ollama({ host: sim.url });
      const messages = [{ role: 'user', content: 'go' }];
      const contents = [];
      for (let i = 0; i < 3; i++) contents.push((await client.chat({ model: 'alpha', messages })).message.content);
      expect(contents).toEqual(['first answer', 'second answer', 'first answer']);
      const beta = await client.chat({ model: 'beta', messages });
      expect(beta.message.content).toContain('beta');
    } finally {
      await sim.close();
    }
  });

  it('reads JSON scripts too', async () => {
    const path = await script('s.json', JSON.stringify({ models: ['m'], loadMs: 5, replies: { m: [{ error: 'boom', failAfterTokens: 1 }] } }));
    const options = await loadSimScript(path);
    expect(options.loadMs).toBe(5);
    expect(options.respond).toBeTypeOf('function');
  });

  it('rejects an unknown field and names the file and the field path', async () => {
    const path = await script('bad.yaml', 'models: [alpha]\nreplies:\n  alpha:\n    - { content: hi, colour: red }\n');
    await expect(loadSimScript(path)).rejects.toThrow(`Sim script ${path}: unknown field replies.alpha[0].colour`);
  });

  it('rejects a wrongly typed field, naming its path', async () => {
    const path = await script('bad.yaml', 'models: [alpha]\nvramGiB: lots\n');
    await expect(loadSimScript(path)).rejects.toThrow(/bad\.yaml: vramGiB: /);
  });

  it('rejects replies for a model the script does not declare', async () => {
    const path = await script('bad.yaml', 'models: [alpha]\nreplies:\n  gamma: [hello]\n');
    await expect(loadSimScript(path)).rejects.toThrow('replies.gamma: no model named "gamma" in models');
  });

  it('names the file when it cannot be read', async () => {
    await expect(loadSimScript(join(dir, 'missing.yaml'))).rejects.toThrow(/Cannot read sim script .*missing\.yaml/);
  });
});
