import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinPresetNames, loadPreset } from '../../src/config/load-preset.js';
import { demoResponder, simModelsFor } from '../../src/sim/demo.js';
import { type SimHandle, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { runCli } from '../helpers/cli.js';
import { scriptedResponder, simModels, testPreset } from '../helpers/panel.js';

let dir = '';
let sim: SimHandle | null = null;

const cli = (args: string[]) => runCli(args, dir);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-protocols-cli-'));
});

afterAll(async () => {
  await sim?.close();
});

describe('protocols from the CLI', () => {
  const demos = [
    { preset: 'parallel', card: 'parallel answers from 3 agents', show: '## Round 0: independent answers', replay: 'Round 0 · independent answers' },
    { preset: 'tournament', card: 'CHAMPION: ', show: '## Bracket', replay: 'Bracket round 1 · matches' },
    { preset: 'decompose', card: 'DECOMPOSITION (by architect)', show: '## Decomposition by architect', replay: 'Split · the decomposer divides the question' },
    { preset: 'delphi', card: 'DELPHI (anonymous rounds, numeric question)', show: '## Delphi rounds', replay: 'Round 1 · anonymous revision' },
  ];
  for (const d of demos) {
    it(`runs the ${d.preset} demo against the simulator, then shows, exports and replays it`, async () => {
      const db = join(dir, `${d.preset}.db`);
      const run = await cli(['demo', '--preset', d.preset, '--db', db, '--token-ms', '0']);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('RECOMMENDATION');
      expect(run.stdout).toContain(d.card);
      // The bracket reads in round order, byes included.
      const bracketRounds = [...run.stdout.matchAll(/^  - round (\d+):/gm)].map((m) => Number(m[1]));
      expect(bracketRounds).toEqual([...bracketRounds].sort((x, y) => x - y));
      if (d.preset === 'tournament') expect(run.stdout).toMatch(/round 1: \S+ had a bye\n  - round 2:/);
      const id = /Stored as (\S+)/.exec(run.stderr)?.[1] ?? '';
      expect((await cli(['show', id, '--db', db])).stdout).toContain(d.show);
      // A minority position is credited to an agent that argued it in that round.
      const stored = JSON.parse((await cli(['show', id, '--db', db, '--json'])).stdout) as {
        synthesis: { minorityPositions: { agent: string; round: number; argument: string }[] } | null;
        rounds: { round: number; turns: { agentId: string; position: string | null }[] }[];
      };
      for (const m of stored.synthesis?.minorityPositions ?? []) {
        const said = stored.rounds.find((r) => r.round === m.round)?.turns.find((t) => t.agentId === m.agent)?.position ?? '';
        expect(said.split(' ')[0], `${m.agent} in round ${m.round}: ${said}`).toBe(m.argument.split(' ')[0]);
      }
      const doc = JSON.parse((await cli(['export', id, '--db', db, '--format', 'json'])).stdout) as { protocol: { kind: string; steps: unknown[] } };
      expect(doc.protocol.kind).toBe(d.preset);
      const replay = await cli(['replay', id, '--db', db]);
      expect(replay.code).toBe(0);
      expect(replay.stdout).toContain(d.replay);
      expect(replay.stdout).toContain(d.card);
      // The exit reads as it did live, in words, not as a raw code.
      const stopped = /Stopped: .*/.exec(run.stderr)?.[0];
      expect(stopped).toBeDefined();
      expect(replay.stdout).toContain(stopped);
      expect(replay.stdout).not.toMatch(/Stopped: .* · (answered|champion|reassembled|filtered)\n/);
      // The protocol's steps are sealed with the rest, and travel in a bundle.
      expect((await cli(['verify', id, '--db', db])).stdout).toContain('sealed');
      const bundle = join(dir, `${d.preset}.bundle`);
      expect((await cli(['export', id, '--db', db, '--format', 'bundle', '--out', bundle])).code).toBe(0);
      const other = join(dir, `${d.preset}-imported.db`);
      expect((await cli(['import', bundle, '--db', other])).code).toBe(0);
      expect((await cli(['show', id, '--db', other])).stdout).toContain(d.show);
    });
  }

  it('runs the code-review pipeline against the simulator as `conclave sim` serves it, then shows, exports and replays its report', async () => {
    const presets = builtinPresetNames().map((n) => loadPreset(n).preset);
    const demo = demoResponder(presets);
    const seen: SimRequest[] = [];
    const pipelineSim = await startSimulator({ models: simModelsFor(presets), respond: (req) => (seen.push(req), demo(req)) });
    try {
      const db = join(dir, 'code-review.db');
      const run = await cli(['run', 'Review this change', '--preset', 'code-review', '--host', pipelineSim.url, '--db', db]);
      expect(run.code).toBe(0);
      // The demo panel's speculative blocking concern (65) is downgraded; the sure one (80, merged at 85) stays blocking.
      expect(run.stdout).toMatch(/BLOCKING FINDINGS \(1\)\n  - F1 \[BLOCKING, confidence 85\] The migration adds owner_id/);
      expect(run.stdout).toContain('raised by correctness, operations');
      expect(run.stdout).toMatch(/F2 \[not blocking, confidence 65, downgraded \(blocking below 70\)\]/);
      expect(run.stdout).toContain('operations/O1 at confidence 65');
      // The card fits the terminal: its footer wraps, so read it with its line breaks undone.
      expect(run.stdout.replace(/\n +/g, ' ')).toContain('review pipeline · 1 lead, 1 analyst, 2 reviewers · 4 findings, 1 blocking · 1 downgraded');
      expect(run.stderr).toContain('downgraded: operations/O1 was blocking at confidence 65 (< 70)');
      // The correctness reviewer's blocking observation at 80 is kept as it came.
      expect(run.stderr).toContain('C1 [BLOCKING, confidence 80]');
      const first = (r: SimRequest) => r.messages.find((m) => m.role === 'user')?.content ?? '';
      const reviews = seen.filter((r) => first(r).includes('You are a reviewer.'));
      expect(reviews).toHaveLength(2);
      for (const r of reviews) expect(first(r)).toContain('Check that every new column can be added to a table that already has rows.');
      const id = /Stored as (\S+)/.exec(run.stderr)?.[1] ?? '';
      expect((await cli(['show', id, '--db', db])).stdout).toContain('## Review report');
      const doc = JSON.parse((await cli(['export', id, '--db', db, '--format', 'json'])).stdout) as { protocol: { kind: string; report: { blocking: { raisedBy: string[] }[] } } };
      expect(doc.protocol.kind).toBe('pipeline');
      expect(doc.protocol.report.blocking.map((f) => f.raisedBy)).toEqual([['correctness', 'operations']]);
      const replay = await cli(['replay', id, '--db', db]);
      expect(replay.code).toBe(0);
      expect(replay.stdout).toContain('Review · the reviewers, each with the plan');
      expect(replay.stdout).toContain('BLOCKING FINDINGS (1)');
      expect((await cli(['verify', id, '--db', db])).stdout).toContain('sealed');
    } finally {
      await pipelineSim.close();
    }
  });

  it('reviews an attached file with code-review: every role but the filter reads it, the record keeps it, a second run against the same simulator works too', async () => {
    const presets = builtinPresetNames().map((n) => loadPreset(n).preset);
    const demo = demoResponder(presets);
    const seen: SimRequest[] = [];
    const pipelineSim = await startSimulator({ models: simModelsFor(presets), respond: (req) => (seen.push(req), demo(req)) });
    try {
      const diff = join(dir, 'change.diff');
      writeFileSync(diff, ['--- a/migrations/0042.sql', '+++ b/migrations/0042.sql', '+ALTER TABLE projects ADD COLUMN owner_id INTEGER NOT NULL; -- DIFF-MARKER', ''].join('\n'));
      const db = join(dir, 'code-review-attached.db');
      for (const attempt of [1, 2]) {
        seen.length = 0;
        const run = await cli(['run', 'Review this change', '--preset', 'code-review', '--host', pipelineSim.url, '--db', db, '--attach', diff]);
        expect(run.code, `run ${attempt}: ${run.stderr}`).toBe(0);
        expect(run.stdout).toMatch(/ATTACHED MATERIAL\n  change\.diff \(\d+ bytes, sha256 [0-9a-f]{12}…\)/);
        const all = (r: SimRequest) => r.messages.map((m) => m.content).join('\n');
        const filterAsk = (r: SimRequest) => all(r).includes('You are the filter of this review');
        const readers = seen.filter((r) => all(r).includes('DIFF-MARKER'));
        // The lead, the analyst and both reviewers read it, whole; the filter reads the reviews only.
        expect(readers).toHaveLength(4);
        expect(readers.every((r) => all(r).includes('[change.diff, whole,'))).toBe(true);
        expect(seen.filter(filterAsk)).toHaveLength(1);
        expect(seen.filter(filterAsk).some((r) => all(r).includes('DIFF-MARKER'))).toBe(false);
        const id = /Stored as (\S+)/.exec(run.stderr)?.[1] ?? '';
        const doc = JSON.parse((await cli(['show', id, '--db', db, '--json'])).stdout) as { attachments: { name: string; content: string }[] };
        expect(doc.attachments.map((a) => a.name)).toEqual(['change.diff']);
        expect(doc.attachments[0]!.content).toContain('DIFF-MARKER');
        expect((await cli(['verify', id, '--db', db])).code).toBe(0);
      }
    } finally {
      await pipelineSim.close();
    }
  });

  it('takes the rotating synthesizer from the record: a different panel model each run, named on the card', async () => {
    const preset = testPreset(['a', 'b'], { synthesizer: { rotate: true }, protocol: { kind: 'parallel' } as never });
    const file = join(dir, 'rotating.json');
    writeFileSync(file, JSON.stringify(preset));
    sim = await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.9]).respond });
    const db = join(dir, 'rotation.db');
    const cards: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await cli(['run', 'Q?', '--preset', file, '--host', sim.url, '--db', db]);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain('favour its own arguments');
      cards.push(/Synthesized by (\S+)/.exec(r.stdout)?.[1] ?? '');
    }
    expect(cards).toEqual(['model-0:1b', 'model-1:1b', 'model-0:1b']);
  });
});
