import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRun, executeBench } from '../../src/bench/runner.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { benchResponder } from '../helpers/bench-panel.js';
import { runCli } from '../helpers/cli.js';
import { closesAfterEach } from '../helpers/lifecycle.js';
import { simModels, testPreset } from '../helpers/panel.js';
import { agentIds, items, scripts } from './fixture.js';

const track = closesAfterEach();

describe('a bench on a pool that loses a host', () => {
  it.each([
    ['a baseline answer', 'answer'],
    ["a debate's judge", 'caveats'],
  ])('answers the calls that found the host gone on the other host when %s finds it first, says so once, and finishes the run sealed', async (_first, field) => {
    const preset = testPreset(agentIds, { protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 10 } });
    let b: SimHandle | null = null;
    let gone = false;
    const panelB = benchResponder(items, scripts, agentIds);
    b = await startSimulator({
      models: simModels(preset),
      numParallel: 4,
      respond: (req) => {
        // B is switched off when the first request of that kind (read from its schema's fields) reaches it: that call finds it gone first.
        const first = field in ((req.format as { properties?: object } | null)?.properties ?? {});
        if (first && !gone) {
          gone = true;
          void b!.kill();
        }
        return panelB.respond(req);
      },
    });
    const killed = b;
    track({ close: () => killed.close() });
    const a = track(await startSimulator({ models: simModels(preset), numParallel: 4, respond: benchResponder(items, scripts, agentIds).respond }));
    const db = join(mkdtempSync(join(tmpdir(), 'conclave-bench-pool-')), 'bench.db');
    const store = track(openStore(db));
    const runId = createRun({ store, suite: 'fixture', items, presets: [{ preset, source: 'test' }], host: a.url, hosts: [{ url: b.url, numParallel: 4 }, { url: a.url, numParallel: 4 }], seed: 0, limit: 2 });
    const notices: string[] = [];
    const outcome = await executeBench({ store, runId, notice: (m) => notices.push(m) });

    expect(outcome.trialsDone).toBe(2);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain(`Host ${b.url} left the pool`);
    store.close();
    const verify = await runCli(['verify', runId, '--db', db], process.cwd());
    expect(verify.code).toBe(0);
  });
});
