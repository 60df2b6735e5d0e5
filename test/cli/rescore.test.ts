import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReport } from '../../src/bench/report.js';
import type { DebateRescore, RunRescore } from '../../src/bench/rescore.js';
import { loadBenchData } from '../../src/store/bench.js';
import { type BenchSetup, setupBench } from '../bench/fixture.js';
import { runCli } from '../helpers/cli.js';

let dir: string;
let db: string;
let bench: BenchSetup;
let runId: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-rescore-'));
  db = join(dir, 'bench.db');
  bench = await setupBench({ dbPath: db });
  runId = await bench.start();
}, 120_000);

afterAll(async () => {
  await bench.close();
  rmSync(dir, { recursive: true, force: true });
});

const debateOf = (itemId: string): string => loadBenchData(bench.store, runId).trials.find((t) => t.itemId === itemId)!.debateId!;

describe('conclave rescore RUN', () => {
  it('lists every rule with accuracy and compute, the recorded ones equal to the bench report\'s figures, without calling the server', async () => {
    const requestsBefore = bench.sim.counters().requests;
    const seenBefore = bench.seen.length;
    const { code, stdout, stderr } = await runCli(['rescore', runId.slice(0, 12), '--json', '--db', db], dir);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const rescore = JSON.parse(stdout) as RunRescore;
    expect(bench.sim.counters().requests).toBe(requestsBefore);
    expect(bench.seen.length).toBe(seenBefore);

    const names = rescore.rules.map((r) => r.rule);
    expect(names).toEqual(expect.arrayContaining(['stop:recorded', 'stop:threshold@0.60', 'stop:rounds=0', 'stop:rounds=2', 'stop:unanimous', 'stop:settled', 'synthesizer', 'majority:final', 'majority:round0', 'majority:round=1', 'free-mad', 'cluster-vote', 'ems:panel', 'ems:reliability']));

    const report = buildReport(loadBenchData(bench.store, runId));
    for (const [rule, condition] of [['majority:final', 'debate-vote'], ['majority:round0', 'round0-vote'], ['synthesizer', 'debate-synth']] as const) {
      const figure = rescore.rules.find((r) => r.rule === rule)!;
      const stats = report.conditions.find((c) => c.condition === condition)!;
      expect(figure.condition).toBe(condition);
      expect({ n: figure.n, accuracy: figure.accuracy, ciLow: figure.ciLow, ciHigh: figure.ciHigh, callsPerItem: figure.callsPerItem, tokensPerItem: figure.tokensPerItem }).toEqual({
        n: stats.n,
        accuracy: stats.accuracy,
        ciLow: stats.ciLow,
        ciHigh: stats.ciHigh,
        callsPerItem: stats.callsPerItem,
        tokensPerItem: stats.tokensPerItem,
      });
    }
    // The fixture's hand-worked outcomes: round-0 majority 3/4, final majority 3/4, the synthesizer 2/4.
    expect(rescore.rules.find((r) => r.rule === 'majority:round0')!.correct).toBe(3);
    expect(rescore.rules.find((r) => r.rule === 'synthesizer')!.correct).toBe(2);
    expect(rescore.own['test-panel']).toBe('synthesizer');
    // Two critique rounds ran only on i4; i1 stopped at round 0, i2 and i3 at round 1.
    const twoRounds = rescore.rules.find((r) => r.rule === 'stop:rounds=2')!;
    expect(twoRounds.n).toBe(1);
    expect(twoRounds.unavailable).toMatch(/^needs round 2, which never ran/);
    const gpu = rescore.rules.find((r) => r.rule === 'majority:final')!.gpuSecondsPerItem;
    expect(gpu).toBeGreaterThan(0);
  });

  it('refuses (exit 6) a debate or a run whose record was edited after it was written, naming the debate and the edit', async () => {
    const file = join(dir, 'edited.db');
    const own = await setupBench({ dbPath: file });
    try {
      const run = await own.start({ limit: 2 });
      const edited = loadBenchData(own.store, run).trials[0]!.debateId!;
      // A judge's round-0 score raised by hand: a threshold rule would then stop at round 0 and report that as the panel's doing.
      own.store.use('edit a judge score', (_db, sqlite) => sqlite.prepare('update rounds set convergence = 0.99 where debate_id = ? and round = 0').run(edited));
      for (const target of [edited, run]) {
        const { code, stdout, stderr } = await runCli(['rescore', target, '--db', file], dir);
        expect(code).toBe(6);
        expect(stdout).toBe('');
        expect(stderr).toContain(`1 debate to re-score does not match its hashes: \`${edited}\` (a \`rounds\` row (0) was edited). Nothing was re-scored.`);
        expect(stderr).toContain('conclave verify --all');
        expect(stderr).not.toMatch(/\n\s+at /);
      }
      // The run's report reads the same debates: it refuses them too.
      const report = await runCli(['bench', 'report', run, '--db', file], dir);
      expect([report.code, report.stdout]).toEqual([6, '']);
      expect(report.stderr).toContain(`1 debate to report on does not match its hashes: \`${edited}\` (a \`rounds\` row (0) was edited). No report was written.`);
    } finally {
      await own.close();
    }
  });

  it('leaves every sealed debate verifying afterwards', async () => {
    await runCli(['rescore', runId, '--db', db], dir);
    const { code, stdout } = await runCli(['verify', '--all', '--db', db], dir);
    expect(code).toBe(0);
    expect(stdout).not.toMatch(/BROKEN/);
  });

  it('prints a table per preset naming the best rule at no more tokens than the run\'s own scoring', async () => {
    const { code, stdout } = await runCli(['rescore', runId, '--db', db, '--rule', 'majority:round0', '--rule', 'synthesizer'], dir);
    expect(code).toBe(0);
    expect(stdout).toMatch(/majority:round0 +4\/4 +75\.0%/);
    expect(stdout).not.toMatch(/free-mad/);
    expect(stdout).toMatch(/Best at no more tokens than the own scoring: majority:round0/);
  });

  it('reports the run\'s own scoring, each rule against it, and the best rule within its tokens, whichever rules --rule shows', async () => {
    const all = JSON.parse((await runCli(['rescore', runId, '--json', '--db', db], dir)).stdout) as RunRescore;
    const own = all.rules.find((r) => r.rule === 'synthesizer')!;
    expect(all.own['test-panel']).toBe('synthesizer');

    const { code, stdout } = await runCli(['rescore', runId, '--json', '--db', db, '--rule', 'majority:round=2', '--rule', 'majority:round0'], dir);
    expect(code).toBe(0);
    const some = JSON.parse(stdout) as RunRescore;
    expect(some.rules.map((r) => r.rule)).toEqual(['majority:round0', 'majority:round=2']);
    expect(some.own['test-panel']).toBe('synthesizer');
    // The figures shown, paired differences against the synthesizer included, are those of the full run.
    for (const figure of some.rules) {
      expect(figure.vsOwn).not.toBeNull();
      expect(figure).toEqual(all.rules.find((r) => r.rule === figure.rule));
    }
    expect(some.best['test-panel']).toMatchObject({ ownAccuracy: own.accuracy, ownTokensPerItem: own.tokensPerItem });
    const shown = some.rules.filter((f) => f.n === f.items && f.tokensPerItem! <= own.tokensPerItem!);
    expect(shown.map((f) => f.rule)).toContain(some.best['test-panel']!.rule);

    const text = await runCli(['rescore', runId, '--db', db, '--rule', 'majority:round=2', '--rule', 'majority:round0'], dir);
    expect(text.stdout).toMatch(/own scoring: synthesizer/);
    expect(text.stdout).toMatch(/majority:round0 +4\/4 +75\.0% +\S+ +[+-]\d+\.\d \[/);
    expect(text.stdout).toMatch(new RegExp(`own 50\\.0% at ${own.tokensPerItem!.toFixed(0)}\\)`));
  });

  it('refuses an unknown rule, naming the rules there are', async () => {
    const { code, stderr } = await runCli(['rescore', runId, '--db', db, '--rule', 'majority:round9'], dir);
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/No rule named `majority:round9`/);
    expect(stderr).toMatch(/majority:round0/);
  });

  it('takes a judge threshold as any number in (0, 1] to two decimals, and says the scale when given a percent', async () => {
    // i2's judge scored 0.2 at round 0 and 0.9 at round 1: a threshold off the sweep, written loosely, is the rule it names.
    const id = debateOf('i2');
    const { code, stdout, stderr } = await runCli(['rescore', id, '--json', '--db', db, '--rule', 'stop:threshold@.2', '--rule', 'stop:threshold@0.9'], dir);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const r = JSON.parse(stdout) as DebateRescore;
    expect(r.rules.map((x) => [x.rule, x.stopRound, x.decision])).toEqual([
      ['stop:threshold@0.20', 0, '5'],
      ['stop:threshold@0.90', 1, '-5'],
    ]);
    const run = JSON.parse((await runCli(['rescore', runId, '--json', '--db', db, '--rule', 'stop:threshold@0.2'], dir)).stdout) as RunRescore;
    expect(run.rules.map((x) => x.rule)).toContain('stop:threshold@0.20');

    const percent = await runCli(['rescore', id, '--db', db, '--rule', 'stop:threshold@85'], dir);
    expect(percent.code).toBe(2);
    expect(percent.stderr).toMatch(/No rule named `stop:threshold@85`/);
    expect(percent.stderr).toMatch(/0–1 scale: `stop:threshold@0\.85` for 85%/);
    expect(percent.stderr).not.toMatch(/\n\s+at /);
  });

  it('says when an id names neither a debate nor a bench run', async () => {
    const { code, stderr } = await runCli(['rescore', 'zzz-nothing', '--db', db], dir);
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/no debate or bench run `zzz-nothing`/);
  });
});

describe('bench report', () => {
  it('has a section of rules re-scored from the record in JSON, Markdown and HTML, with the chart and its Pareto front', async () => {
    const json = await runCli(['bench', 'report', runId, '--format', 'json', '--db', db], dir);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as ReturnType<typeof buildReport>;
    const final = report.rules!.rules.find((r) => r.rule === 'majority:final')!;
    const condition = report.conditions.find((c) => c.condition === 'debate-vote')!;
    expect(final.accuracy).toBe(condition.accuracy);
    expect(report.rules!.best['test-panel']).not.toBeNull();
    const md = await runCli(['bench', 'report', runId, '--db', db], dir);
    expect(md.stdout).toMatch(/## Rules re-scored from the record/);
    expect(md.stdout).toMatch(/best at equal or lower compute than its own scoring \(synthesizer/);
    const html = await runCli(['bench', 'report', runId, '--format', 'html', '--db', db], dir);
    const section = html.stdout.slice(html.stdout.indexOf('<h2 id="rules">'));
    expect(section).toMatch(/<svg[^>]*aria-label="Accuracy against tokens per item for every rule"/);
    expect(section).toMatch(/on the Pareto front/);
  });
});

describe('conclave rescore ID', () => {
  it('gives each rule\'s stopping round and decision for one debate, graded as its bench item', async () => {
    const id = debateOf('i2');
    const { code, stdout, stderr } = await runCli(['rescore', id, '--json', '--db', db], dir);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const r = JSON.parse(stdout) as DebateRescore;
    expect(r.debate.id).toBe(id);
    expect(r.item).toEqual({ runId, itemId: 'i2', gold: '-5' });
    const rule = (name: string) => r.rules.find((x) => x.rule === name)!;
    // i2: round 0 is 5 −5 3, round 1 is −5 −5 3, the judge stopped after round 1 (0.2, then 0.9 ≥ 0.85).
    expect(rule('stop:recorded')).toMatchObject({ stopRound: 1, decision: '-5', correct: true });
    expect(rule('stop:rounds=0')).toMatchObject({ stopRound: 0, decision: '5', correct: false });
    expect(rule('majority:round0')).toMatchObject({ stopRound: 0, decision: '5', correct: false });
    expect(rule('stop:threshold@0.95')).toMatchObject({ available: false, stopRound: null, why: 'needs round 2, which never ran: the debate stopped after round 1 (converged)' });
    expect(rule('ems:panel')).toMatchObject({ stopRound: 0, note: '3 of 3 agents called' });
    expect(rule('synthesizer').spent!.calls).toBeGreaterThan(rule('stop:rounds=0').spent!.calls);
  });
});

describe('conclave rescore DEBATE without stances', () => {
  it('says the majority rules have nothing to count, in words that read', async () => {
    const db2 = join(dir, 'parallel.db');
    const demo = await runCli(['demo', '--preset', 'parallel', '--db', db2, '--token-ms', '0', '--json'], dir);
    expect(demo.code).toBe(0);
    const { id } = JSON.parse(demo.stdout) as { id: string };
    const { code, stdout } = await runCli(['rescore', id, '--db', db2], dir);
    expect(code).toBe(0);
    expect(stdout).toContain('Majority rules unavailable: no stances recorded');
    expect(stdout).not.toContain('Counted by unavailable');
  });
});
