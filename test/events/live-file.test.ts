import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { runCli } from '../helpers/cli.js';
import { scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

describe('the live file of a running debate', () => {
  it('is neither written nor removed outside the live folder when a record handed over names its debate `../victim/package`', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-live-id-'));
    const db = join(dir, 'record.db');
    const victim = join(dir, 'victim', 'package.json');
    mkdirSync(join(dir, 'victim'));
    writeFileSync(victim, '{"name":"precious"}\n');
    const preset = testPreset(['a', 'b'], { protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 60 } });
    const script = scriptedResponder([0.3, 0.9]);
    const stop = new AbortController();
    let interrupting = true;
    const sim = await startSimulator({
      models: simModels(preset),
      tokenMs: 1,
      respond: async (req) => {
        // The first run is stopped at its first judge call, so the record holds a debate to resume.
        if (interrupting && stageOf(req) === 'judge') stop.abort();
        return script.respond(req);
      },
    });
    try {
      // Someone else's record: a sealed debate with an id Conclave never makes.
      const store = openStore(db);
      await runDebate({ question: 'Q?', preset, host: sim.url, recorder: recorder(store), id: '../victim/package', signal: stop.signal }).catch(() => undefined);
      store.close();
      interrupting = false;
      expect((await runCli(['verify', '../victim/package', '--db', db], dir)).code).toBe(0);
      const resumed = await runCli(['resume', '../victim/package', '--db', db, '--host', sim.url, '--quiet'], dir);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(readFileSync(victim, 'utf8')).toBe('{"name":"precious"}\n');
    } finally {
      await sim.close();
    }
  });
});
