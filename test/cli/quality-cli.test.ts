import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { runCli } from '../helpers/cli.js';
import { agentOf, isRetry, reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

let dir = '';
let sim: SimHandle;
let presetFile = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-quality-'));
  const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 1, convergenceThreshold: 0.85, callTimeoutSeconds: 10 } as never });
  presetFile = join(dir, 'panel.json');
  writeFileSync(presetFile, JSON.stringify(preset));
  // b's first answer is retried, c's answers are rejected.
  const panel = scriptedResponder([0.2], (req) => {
    if (agentOf(req) === 'c') return reply.rejected('Zanzibar', stageOf(req) === 'critique' ? 'critique' : 'opening');
    if (agentOf(req) === 'b' && stageOf(req) === 'opening' && !isRetry(req)) return reply.weak();
    return undefined;
  });
  sim = await startSimulator({ models: simModels(preset), respond: panel.respond });
});

afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('quality indicators on the command line', () => {
  it('warns during the run, and shows the ratings in the card, show, replay, exports and a bundle that verifies', async () => {
    const db = join(dir, 'c.db');
    const ran = await runCli(['run', 'Should we do A?', '--preset', presetFile, '--host', sim.url, '--db', db], dir);
    expect(ran.code).toBe(0);
    expect(ran.stderr).toContain('warning: b, opening 0: quality 35 (RETRY), asking again once with the question alone');
    expect(ran.stderr).toContain('warning: c, opening 0: quality 0 (REJECT), its answer is left out');
    // c's seat got the orchestrator's fallback each round; the simulated panel answered it as c, so it was rejected too.
    expect(ran.stdout).toContain('QUALITY\n  8 results rated');
    expect(ran.stdout).toContain('- b answer, round 0: 100 PASS after a retry');
    const id = /debate (\S+) · completed/.exec(ran.stdout)![1]!;

    const shown = await runCli(['show', id, '--db', db], dir);
    expect(shown.stdout).toContain('### b (`model-1:1b`), confidence 0.60, quality 100 PASS after a retry');
    expect(shown.stdout).toContain('- c, critique, round 1: **10 REJECT**, left out: the reply was cut off at num_predict (−35)');
    const replayed = await runCli(['replay', id, '--db', db], dir);
    expect(replayed.stdout).toContain('◆ b answer, round 0: quality 35 RETRY (asked again)');
    const asJson = JSON.parse((await runCli(['show', id, '--db', db, '--json'], dir)).stdout) as { quality: { stage: string; agentId: string; try: number; action: string }[] };
    expect(asJson.quality.filter((q) => q.stage !== 'fallback').map((q) => `${q.agentId}:${q.try}:${q.action}`)).toEqual(['a:0:PASS', 'b:0:RETRY', 'b:1:PASS', 'c:0:REJECT', 'a:0:PASS', 'b:0:PASS', 'c:0:REJECT']);
    expect(asJson.quality.filter((q) => q.stage === 'fallback').map((q) => `${q.agentId}:${q.try}:${q.action}`)).toEqual(['c:0:REJECT', 'c:0:REJECT']);
    const md = (await runCli(['export', id, '--format', 'md', '--db', db], dir)).stdout;
    expect(md).toContain('## Quality');
    expect(md).toMatch(/- c, answer, round 0: \*\*0 REJECT\*\*, left out: /);

    expect((await runCli(['verify', id, '--db', db], dir)).code).toBe(0);
    const bundle = join(dir, 'debate.bundle.json');
    expect((await runCli(['export', id, '--format', 'bundle', '--out', bundle, '--db', db], dir)).code).toBe(0);
    const other = join(dir, 'other.db');
    expect((await runCli(['import', bundle, '--db', other], dir)).code).toBe(0);
    const imported = JSON.parse((await runCli(['show', id, '--db', other, '--json'], dir)).stdout) as { quality: unknown[] };
    expect(imported.quality).toEqual(asJson.quality);
    expect((await runCli(['verify', id, '--db', other], dir)).code).toBe(0);
  });
});
