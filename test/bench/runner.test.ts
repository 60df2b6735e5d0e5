import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BenchReport, buildReport } from '../../src/bench/report.js';
import { renderBenchMarkdown, renderBenchSummary } from '../../src/bench/markdown.js';
import { CONDITION_LABELS } from '../../src/bench/conditions.js';
import { conditionRows } from '../../src/bench/tables.js';
import { bootstrapCI, pairedBootstrapDiff } from '../../src/bench/stats.js';
import { type BenchData, loadBenchData } from '../../src/store/bench.js';
import { type BenchSetup, items, setupBench } from './fixture.js';

let bench: BenchSetup;
let data: BenchData;
let report: BenchReport;

beforeAll(async () => {
  bench = await setupBench();
  const runId = await bench.start();
  data = loadBenchData(bench.store, runId);
  report = buildReport(data);
});

afterAll(async () => {
  await bench?.close();
});

const condition = (name: string, variant = '') => report.conditions.find((c) => c.condition === name && c.variant === variant)!;
const trial = (itemId: string) => data.trials.find((t) => t.itemId === itemId)!;
const result = (itemId: string, name: string, variant = '') => trial(itemId).results.find((r) => r.condition === name && r.variant === variant)!;

describe('a bench run against a scripted panel', () => {
  it('scores each condition as worked out by hand', () => {
    const scores = Object.fromEntries(report.conditions.filter((c) => c.available).map((c) => [c.variant ? `${c.condition}:${c.variant}` : c.condition, `${c.correct}/${c.n}`]));
    expect(scores).toEqual({
      'single:a': '3/4',
      'single:b': '3/4',
      'single:c': '1/4',
      sc: '3/4',
      'self-correction': '3/4',
      'round0-vote': '3/4',
      parallel: '2/4',
      'debate-vote': '3/4',
      'debate-synth': '2/4',
    });
    expect(condition('debate-synth').accuracy).toBe(0.5);
    expect(condition('single', 'c').accuracy).toBe(0.25);
  });

  it('charges the parallel condition the round-0 calls and its own synthesis call, which reads round 0 alone', () => {
    const openings = (id: string) => bench.store.getDebate(trial(id).debateId!).calls.filter((c) => c.stage === 'opening').length;
    for (const id of ['i1', 'i2', 'i3', 'i4']) {
      expect(result(id, 'parallel').calls).toBe(openings(id) + 1);
      expect(result(id, 'parallel').callIds).toHaveLength(1);
    }
    const synths = bench.seen.filter((r) => 'triggersToRevisit' in ((r.format as { properties?: object } | null)?.properties ?? {}));
    const roundZeroOnly = synths.filter((r) => !/## Round 1/.test(r.messages.at(-1)?.content ?? ''));
    // One synthesis per item for the debate, one for the parallel condition (i1 ends after round 0, so both read round 0 only).
    expect(synths).toHaveLength(8);
    expect(roundZeroOnly.length).toBeGreaterThanOrEqual(4);
  });

  it('reads every answer per item as scripted, including the sign of negative numbers', () => {
    expect(['i1', 'i2', 'i3', 'i4'].map((id) => result(id, 'debate-vote').answer)).toEqual(['10', '-5', '8', '3']);
    expect(['i1', 'i2', 'i3', 'i4'].map((id) => result(id, 'round0-vote').answer)).toEqual(['10', '5', '7', '3']);
    expect(['i1', 'i2', 'i3', 'i4'].map((id) => result(id, 'sc').answer)).toEqual(['10', '-5', '7', '2']);
    expect(['i1', 'i2', 'i3', 'i4'].map((id) => result(id, 'debate-synth').answer)).toEqual(['10', '-5', '8', null]);
  });

  it('gives 95% bootstrap intervals that match the seeded bootstrap of the same results', () => {
    const vote = condition('debate-vote');
    expect([vote.ciLow, vote.ciHigh]).toEqual([0.25, 1]);
    const expected = bootstrapCI([true, true, false, true], { seed: 0, iterations: 2000 });
    expect([vote.ciLow, vote.ciHigh]).toEqual([expected.low, expected.high]);
    expect([condition('debate-synth').ciLow, condition('debate-synth').ciHigh]).toEqual([0, 1]);
    expect([condition('single', 'c').ciLow, condition('single', 'c').ciHigh]).toEqual([0, 0.75]);
  });

  it('gives paired bootstrap intervals for differences between conditions on the same items', () => {
    const d = report.differences.find((x) => x.scope === 'test-panel' && x.a === 'debate + synthesizer' && x.b === 'self-consistency@k')!;
    expect(d.n).toBe(4);
    expect(d.diff).toBe(-0.25);
    const expected = pairedBootstrapDiff([true, true, false, false], [true, true, true, false], { seed: 0, iterations: 2000 });
    expect([d.ciLow, d.ciHigh]).toEqual([expected.low, expected.high]);
    expect([d.ciLow, d.ciHigh]).toEqual([-0.75, 0]);
  });

  it('gives accuracy by round, carrying the final positions of debates that stopped early', () => {
    expect(report.byRound.map((r) => [r.round, r.majority, r.debatesReaching])).toEqual([
      [0, 0.75, 4],
      [1, 0.75, 3],
      [2, 0.75, 1],
    ]);
    expect(report.byRound.map((r) => r.agentMean)).toEqual([7 / 12, 7 / 12, 2 / 3].map((x) => expect.closeTo(x, 12)));
  });

  it('measures conformity: adoption of the round-0 majority, right-to-wrong flips by direction, and error correlation', () => {
    // i1: c stays outside the majority 10; i2 and i4 have no round-0 majority; i3: b and c leave the right 7 for 8, away from the majority.
    // Round 0, both wrong: a and c on i2 (5 and 3), b and c on i4 (none and 2): never the same wrong answer.
    const c = report.conformity[0]!;
    expect(c).toMatchObject({ outsideMajority: 1, joinedMajority: 0, majorityAdoption: 0, rightToWrongToMajority: 0, rightToWrongAway: 2, sameWrongShare: 0, meanCorrelation: 0, effectiveVoters: 3 });
    expect(c.pairs.map((p) => [p.a, p.b, p.bothWrong, p.sameWrong])).toEqual([
      ['a', 'b', 0, 0],
      ['a', 'c', 1, 0],
      ['b', 'c', 1, 0],
    ]);
    expect(renderBenchMarkdown(report)).toMatch(/## Conformity and independence[\s\S]*\| 1 \| 0 \| 0\.0% \| 0 \| 2 \| 0\.0% \| 0\.00 \| 3\.00 \|/);
  });

  it('counts flips from round 0 to the final round per agent and for the majority', () => {
    const flips = report.flips[0]!;
    expect(flips.agents).toEqual({ rightToRight: 5, rightToWrong: 2, wrongToRight: 3, wrongToWrong: 2 });
    expect(flips.majority).toEqual({ rightToRight: 2, rightToWrong: 1, wrongToRight: 1, wrongToWrong: 0 });
  });

  it('runs self-consistency with k equal to the debater turns the debate made, on the same model mix', () => {
    expect(data.trials.map((t) => t.agentTurns)).toEqual([3, 6, 6, 9]);
    // i4 has one unparseable sample, repaired once: 9 samples, 10 calls.
    expect(['i1', 'i2', 'i3', 'i4'].map((id) => result(id, 'sc').calls)).toEqual([3, 6, 6, 10]);
    for (const t of data.trials) {
      const samples = t.answers.filter((a) => a.source === 'sc');
      expect(samples).toHaveLength(t.agentTurns!);
      const debate = bench.store.getDebate(t.debateId!);
      const debaterCalls = debate.calls.filter((c) => (c.stage === 'opening' || c.stage === 'critique') && c.attempt === 0);
      expect(debaterCalls).toHaveLength(t.agentTurns!);
      // The same number of calls per model as the debate's agents made.
      const perModel = (models: string[]) => Object.fromEntries(['model-0:1b', 'model-1:1b', 'model-2:1b'].map((m) => [m, models.filter((x) => x === m).length]));
      expect(perModel(samples.map((s) => s.model))).toEqual(perModel(debaterCalls.map((c) => c.model)));
    }
    expect(report.run.meanK['test-panel']).toBe(6);
  });

  it('reports the calls and tokens each condition spent per item', () => {
    expect(condition('single', 'a').callsPerItem).toBe(1);
    expect(condition('single', 'b').callsPerItem).toBe(1.25);
    expect(condition('sc').callsPerItem).toBe(25 / 4);
    expect(condition('round0-vote').callsPerItem).toBe(3);
    // Agent turns plus one judge call per round: (3+1) + (6+2) + (6+2) + (9+3).
    expect(condition('debate-vote').callsPerItem).toBe(32 / 4);
    expect(condition('debate-synth').callsPerItem).toBe(36 / 4);
    for (const c of report.conditions.filter((x) => x.available)) expect(c.tokensPerItem).toBeGreaterThan(0);
  });

  it('counts an unparseable answer as wrong after exactly one repair request, and records the failure per model and round', () => {
    const single = result('i4', 'single', 'b');
    expect(single.answer).toBeNull();
    expect(single.correct).toBe(false);
    expect(single.calls).toBe(2);
    const parse = (model: string, stage: string) => report.parseFailures.find((p) => p.model === model && p.stage === stage)!;
    expect(parse('model-1:1b', 'round 0')).toMatchObject({ answers: 4, unparsed: 1, errors: 0, rate: 0.25 });
    expect(parse('model-1:1b', 'round 1')).toMatchObject({ answers: 3, unparsed: 0, rate: 0 });
    expect(parse('model-1:1b', 'single')).toMatchObject({ answers: 4, unparsed: 1, rate: 0.25 });
    expect(parse('model-0:1b', 'self-consistency')).toMatchObject({ answers: 8, unparsed: 1, rate: 0.125 });
    expect(parse('synth:1b', 'synthesis')).toMatchObject({ answers: 4, unparsed: 1, rate: 0.25 });
    const repairs = bench.seen.filter((r) => r.messages.some((m) => m.role === 'assistant') && r.messages[1]!.content.includes(items[3]!.question));
    expect(repairs).toHaveLength(2);
  });

  it('reports rounds saved by early exit and the share of early exits that converged on a wrong answer', () => {
    expect(report.earlyExit[0]).toEqual({
      preset: 'test-panel',
      debates: 4,
      maxRounds: 2,
      earlyExits: 3,
      roundsSaved: 4,
      roundsSavedShare: 0.5,
      wrongExits: 1,
      wrongExitShare: 1 / 3,
    });
  });

  it('reports how often a minority position the synthesizer kept was the correct one', () => {
    expect(report.minority[0]).toEqual({ preset: 'test-panel', itemsWithMinority: 3, positions: 4, correct: 1, share: 0.25, rescues: 1 });
  });

  it('reports latency, tokens and tokens per second per model', () => {
    const agent = report.models.find((m) => m.model === 'model-0:1b')!;
    // Debate turns (4+3+1) + single answers (4) + samples with one repair (9) + self-correction revisions (0+1+1+2): 25 calls.
    expect(agent.calls).toBe(25);
    expect(agent.meanLatencyMs).toBeGreaterThanOrEqual(0);
    expect(agent.meanCompletionTokens).toBeGreaterThan(0);
    expect(agent.tokensPerSecond).toBeGreaterThan(0);
    expect(report.models.map((m) => m.model)).toEqual(['judge:1b', 'model-0:1b', 'model-1:1b', 'model-2:1b', 'synth:1b']);
  });

  it('links every item to its recorded debate, whose question asks for a final answer', () => {
    for (const t of data.trials) {
      const debate = bench.store.getDebate(t.debateId!);
      const item = items.find((i) => i.id === t.itemId)!;
      expect(debate.question).toContain(item.question);
      expect(debate.question).toContain('Final answer: N');
      expect(debate.status).toBe('completed');
    }
    expect(data.trials.map((t) => t.exitReason)).toEqual(['converged', 'converged', 'converged', 'max_rounds']);
  });

  it('asks single agents and samples for JSON with an answer field, in their own persona', () => {
    const answerCalls = bench.seen.filter((r) => 'answer' in ((r.format as { properties?: object } | null)?.properties ?? {}));
    // 4 items × 3 agents single + 24 samples (k summed over items) + 2 repairs + 12 self-correction revisions (critique turns summed over items).
    expect(answerCalls).toHaveLength(12 + 24 + 2 + 12);
    expect(answerCalls.every((r) => /^You are agent [abc]\.$/.test(r.messages[0]!.content))).toBe(true);
  });

  it('runs the self-correction control with exactly the agent calls the debate made, per item and per agent', () => {
    const revisions = bench.seen.filter((r) => /This is revision \d+\./.test(r.messages.at(-1)?.content ?? ''));
    for (const t of data.trials) {
      const item = items.find((i) => i.id === t.itemId)!;
      const debate = bench.store.getDebate(t.debateId!);
      for (const agentId of ['a', 'b', 'c']) {
        const debater = debate.calls.filter((c) => c.agentId === agentId && (c.stage === 'opening' || c.stage === 'critique') && c.attempt === 0).length;
        const openings = debate.calls.filter((c) => c.agentId === agentId && c.stage === 'opening' && c.attempt === 0).length;
        const own = revisions.filter((r) => r.messages[0]!.content === `You are agent ${agentId}.` && r.messages.at(-1)!.content.includes(item.question));
        expect(openings + own.length).toBe(debater);
      }
    }
    // No repair was needed, so the control's calls per item are the debate's debater calls: k.
    expect(['i1', 'i2', 'i3', 'i4'].map((id) => result(id, 'self-correction').calls)).toEqual(data.trials.map((t) => t.agentTurns));
    expect(data.trials.map((t) => t.agentTurns)).toEqual([3, 6, 6, 9]);
    expect(['i1', 'i2', 'i3', 'i4'].map((id) => result(id, 'self-correction').callIds.length)).toEqual([0, 3, 3, 6]);
  });

  it('shows each revision only the agent\'s own previous answer, and never that peers exist', () => {
    const revisions = bench.seen.filter((r) => /This is revision \d+\./.test(r.messages.at(-1)?.content ?? ''));
    expect(revisions).toHaveLength(12);
    for (const r of revisions) {
      const text = r.messages.map((m) => m.content).join('\n');
      expect(text).not.toMatch(/panel|peer|other|agreement|critique/i);
      const own = /^You are agent ([abc])\.$/.exec(r.messages[0]!.content)![1]!;
      for (const other of ['a', 'b', 'c'].filter((x) => x !== own)) expect(text).not.toContain(`agent ${other}`);
    }
    // The same agents' critique prompts do carry their peers, so the check above would see them.
    expect(bench.seen.filter((r) => 'updatedPosition' in ((r.format as { properties?: object } | null)?.properties ?? {})).every((r) => /other panelists/.test(r.messages.at(-1)!.content))).toBe(true);
    // i2: agent a revises its own round-0 5, not its peers' -5 and 3.
    const a2 = revisions.find((r) => r.messages[0]!.content === 'You are agent a.' && r.messages.at(-1)!.content.includes(items[1]!.question))!;
    expect(a2.messages.at(-1)!.content).toContain('Your answer so far:\nI worked it through. Final answer: 5');
    expect(a2.messages.at(-1)!.content).not.toMatch(/Final answer: (-5|3)\b/);
    // i4: b's second revision starts from its first (3), not from round 0.
    const b4 = revisions.filter((r) => r.messages[0]!.content === 'You are agent b.' && r.messages.at(-1)!.content.includes(items[3]!.question));
    expect(b4.map((r) => /This is revision (\d)/.exec(r.messages.at(-1)!.content)![1])).toEqual(['1', '2']);
    expect(b4[1]!.messages.at(-1)!.content).toContain('Final answer: 3');
  });

  it('votes the last answers of the self-correction control, falling back to round 0 where the debate ran no critique', () => {
    expect(['i1', 'i2', 'i3', 'i4'].map((id) => result(id, 'self-correction').answer)).toEqual(['10', '5', '7', '3']);
    const revised = trial('i4').answers.filter((a) => a.source === 'self-correction');
    expect(revised.map((a) => `${a.round}/${a.agentId}=${a.answer}`)).toEqual(['1/a=3', '1/b=3', '1/c=2', '2/a=3', '2/b=3', '2/c=2']);
    expect(report.parseFailures.find((p) => p.model === 'model-1:1b' && p.stage === 'self-correction')).toMatchObject({ answers: 4, unparsed: 0 });
  });

  it('reports debate − self-correction as a paired difference on the same items, in the table and the terminal summary', () => {
    const d = report.differences.find((x) => x.scope === 'test-panel' && x.a === 'debate + majority' && x.b === CONDITION_LABELS['self-correction'])!;
    expect(d.n).toBe(4);
    // Debate ✓ ✓ ✗ ✓ against self-correction ✓ ✗ ✓ ✓, item by item.
    const expected = pairedBootstrapDiff([true, true, false, true], [true, false, true, true], { seed: 0, iterations: 2000 });
    expect([d.diff, d.ciLow, d.ciHigh]).toEqual([0, expected.low, expected.high]);
    expect(renderBenchMarkdown(report)).toContain(`| test-panel | debate + majority − ${CONDITION_LABELS['self-correction']} | 0.0 pp |`);
    expect(renderBenchSummary(report)).toMatch(/test-panel: debate \+ majority − self-correction \(no peers\) = 0\.0 pp \(95% CI .*, 4 items\): what the peers add/);
  });

  it('says a run recorded before the self-correction control existed did not measure it, rather than that it has no items', () => {
    const older = { ...data, trials: data.trials.map((t) => ({ ...t, results: t.results.filter((r) => r.condition !== 'self-correction') })) };
    const row = buildReport(older, { iterations: 10 }).conditions.find((c) => c.condition === 'self-correction')!;
    expect(row).toMatchObject({ available: false, note: 'not measured in this run (recorded before this condition existed)' });
  });

  it('reports the cluster vote as unavailable, with the reason, for a preset without voting', () => {
    expect(condition('cluster-vote')).toMatchObject({ available: false, accuracy: null, note: 'the preset has no voting block' });
    // In the tables the reason stands beside "unavailable", not in the tokens/item column.
    const row = conditionRows([condition('cluster-vote')])[0]!;
    expect(row.slice(2)).toEqual(['unavailable: the preset has no voting block', '–', '–', '–', '–']);
  });
});
