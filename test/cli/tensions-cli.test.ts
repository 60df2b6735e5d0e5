import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { simModels, testPreset } from '../helpers/panel.js';
import { tensionResponder } from '../helpers/tensions.js';
import { runCli } from '../helpers/cli.js';

let dir = '';
let db = '';
let sim: SimHandle | null = null;

const cli = (args: string[]) => runCli(args, dir, 120);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-tensions-cli-'));
  db = join(dir, 'record.db');
});

afterAll(async () => {
  await sim?.close();
});

describe('tension maps in the CLI', () => {
  let demoId = '';

  it('runs the tension-map demo to a full map: tensions by severity, the targeted exchange and the map on the card', async () => {
    const r = await cli(['demo', '--preset', 'tension-map', '--db', db, '--token-ms', '0']);
    expect(r.code).toBe(0);
    demoId = /Stored as (\S+)/.exec(r.stderr)?.[1] ?? '';
    expect(r.stderr).toContain('Tension map · 3 agents · 9 load-bearing claims · 3 pairs in 1 clash call');
    expect(r.stderr).toContain('re-asking only pragmatist and architect about T1');
    expect(r.stderr).toContain('Targeted exchange · T1');
    expect(r.stdout.replace(/\s+/g, ' ')).toContain('TENSION MAP (4 tensions, 2 consensus zones; 2 resolved in the critique rounds; targeted exchange on T1: narrowed, not resolved)');
    // "Round N" only ever names the N-th critique round (or round 0's independent answers).
    for (const m of `${r.stderr}\n${r.stdout}`.matchAll(/Round (\d+)[^\n]*/g)) expect(m[0]).toMatch(/^Round (0 · independent answers|[1-9]\d* · critique)/);
    const order = ['T1 factual 9/10', 'T2 interpretive 6/10', 'T3 interpretive 5/10', 'T4 emphasis 2/10'].map((t) => r.stdout.indexOf(t));
    expect(order[0]).toBeGreaterThan(0);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    // The synthesizer was fed the map and kept the worst clash as a minority position.
    expect(r.stdout).toContain('MINORITY POSITION (architect');
  });

  it('shows the map in show, export and replay of the stored demo', async () => {
    const show = await cli(['show', demoId, '--db', db]);
    expect(show.stdout).toContain('## Tension map');
    expect(show.stdout).toContain('### Targeted exchange on T1 (narrowed, not resolved)');
    const json = JSON.parse((await cli(['export', demoId, '--db', db, '--format', 'json'])).stdout) as {
      tensionMap: { status: string; map: { round: number } };
      calls: { stage: string; round: number; place: string }[];
    };
    expect(json.tensionMap).toMatchObject({ status: 'ok', map: { round: 2 } });
    // The targeted calls keep the last round's number for order, and say where they are in words.
    const targeted = json.calls.filter((c) => c.stage === 'targeted');
    expect(targeted.length).toBeGreaterThan(0);
    for (const c of targeted) expect(c.place).toBe('the targeted exchange');
    for (const c of json.calls.filter((c) => c.stage === 'critique')) expect(c.place).toBe(`round ${c.round}`);
    const replay = await cli(['replay', demoId, '--db', db]);
    expect(replay.stdout).toContain('→ narrowed, not resolved');
    expect(replay.stdout).toContain('TENSION MAP');
  });

  it('counts debates whose map is flagged for review at the foot of list', async () => {
    const before = await cli(['list', '--db', db]);
    expect(before.stdout).not.toContain('flagged for human review');

    const preset = testPreset(['a', 'b', 'c'], { tensions: {} });
    const presetFile = join(dir, 'flagged.json');
    writeFileSync(presetFile, JSON.stringify(preset));
    const long = (agent: string) => `${agent} argues at length. ${'The evidence points one way. '.repeat(40)}`;
    sim = await startSimulator({ models: simModels(preset), respond: tensionResponder({ clashes: [], opening: long }).respond });
    const run = await cli(['run', 'Should we do A?', '--preset', presetFile, '--host', sim.url, '--db', db, '--quiet']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('⚑ FLAGGED FOR HUMAN REVIEW');

    const after = await cli(['list', '--db', db]);
    expect(after.stdout).toMatch(/⚑ 1 debate has a tension map flagged for human review: \S+ listed above/);
    const rows = JSON.parse((await cli(['list', '--db', db, '--json'])).stdout) as { flaggedForReview: boolean }[];
    expect(rows.filter((r) => r.flaggedForReview)).toHaveLength(1);
  });
});
