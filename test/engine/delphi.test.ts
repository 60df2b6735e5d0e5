import { afterEach, describe, expect, it } from 'vitest';
import type { DebateEvent } from '../../src/engine/events.js';
import type { ProtocolStep } from '../../src/engine/protocol-events.js';
import { estimateRun } from '../../src/engine/dry-run.js';
import { recorder } from '../../src/engine/recorder.js';
import { planResume, resumeDebate } from '../../src/engine/resume.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { InterruptedError } from '../../src/errors.js';
import { delphiConfidence } from '../../src/protocol/confidence.js';
import { optionalBeforeRequired } from '../../src/protocol/grammar.js';
import { delphiStop, shuffled, summarize } from '../../src/protocol/delphi.js';
import { renderCard } from '../../src/render/card.js';
import { confidenceOf } from '../../src/render/confidence.js';
import { debateDocument } from '../../src/render/document.js';
import { liveRenderer } from '../../src/render/live.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import { storedEvents } from '../../src/render/replay.js';
import { plainStyle } from '../../src/render/style.js';
import { debatePage } from '../../src/serve/debate-page.js';
import { type SimHandle, type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store, StoredDebate } from '../../src/store/store.js';
import { capture } from '../helpers/cli.js';
import { judgedIdsOf, judgedRoundOf, reply, simModels, testPreset } from '../helpers/panel.js';

let sim: SimHandle | null = null;
let store: Store | null = null;

afterEach(async () => {
  store?.close();
  store = null;
  await sim?.close();
  sim = null;
});

// Ids that no prompt text would contain by chance; personas that name no one.
const IDS = ['alder-unit', 'birch-unit', 'cedar-unit'];
const PERSONAS = ['You weigh costs first.', 'You plan for growth.', 'You look for the hidden risk.'];
// The numbers each panelist gives by round: the interquartile range goes 40, 20, 10, 10.
const ESTIMATES = [
  [10, 30, 40, 40, 40],
  [50, 50, 50, 50, 50],
  [90, 70, 60, 60, 60],
];

function delphiPreset(maxRounds: number) {
  return testPreset(IDS, {
    agents: IDS.map((id, i) => ({ id, model: `model-${i}:1b`, persona: PERSONAS[i]! })),
    protocol: { kind: 'delphi', maxRounds, convergenceThreshold: 0.85, callTimeoutSeconds: 30 },
  } as never);
}

const text = (req: { messages: { content: string }[] }): string => req.messages.map((m) => m.content).join('\n');
const seatOf = (req: SimRequest): number => Number(/^model-(\d+):/.exec(req.model)?.[1] ?? -1);
const delphiRoundOf = (req: SimRequest): number => Number(/This is Delphi round (\d+)/.exec(req.messages.at(-1)?.content ?? '')?.[1] ?? 0);
const isPanel = (req: SimRequest): boolean => 'answer' in ((req.format as { properties?: object } | null)?.properties ?? {});
const isJudge = (req: SimRequest): boolean => 'caveats' in ((req.format as { properties?: object } | null)?.properties ?? {});
const answerText = (seat: number, round: number): string => `The figure is ${ESTIMATES[seat]![round]}, by my count in round ${round}.`;

/** A panel that answers with ESTIMATES (or with no number), and a judge whose stances are given per round. */
function panel(opts: { numeric: boolean; stances?: Record<number, string[][]>; hold?: (req: SimRequest) => SimReply | undefined }) {
  const seen: SimRequest[] = [];
  const respond = (req: SimRequest): SimReply => {
    seen.push(req);
    const held = opts.hold?.(req);
    if (held !== undefined) return held;
    if (isPanel(req)) {
      const seat = seatOf(req);
      const round = delphiRoundOf(req);
      const asks = 'estimate' in ((req.format as { properties?: object }).properties ?? {});
      return JSON.stringify({
        answer: opts.numeric ? answerText(seat, round) : `Option ${['A', 'B', 'C'][seat]} as I see it in round ${round}.`,
        ...(asks ? { estimate: opts.numeric ? ESTIMATES[seat]![round] : null } : {}),
        reason: `Reason of seat ${seat} in round ${round}.`,
        confidence: 60,
      });
    }
    if (isJudge(req)) {
      const ids = judgedIdsOf(req);
      const groups = opts.stances?.[judgedRoundOf(req)] ?? [ids];
      const stances = groups.map((agents, i) => ({ id: `S${i + 1}`, summary: `stance ${i + 1}`, agents: agents.filter((a) => ids.includes(a)) })).filter((s) => s.agents.length);
      return JSON.stringify({ ...JSON.parse(reply.judge(0.5)), stances });
    }
    return reply.synthesis([], IDS);
  };
  return { respond, seen };
}

async function run(maxRounds: number, numeric: boolean, stances?: Record<number, string[][]>) {
  const preset = delphiPreset(maxRounds);
  const script = panel({ numeric, ...(stances ? { stances } : {}) });
  sim = await startSimulator({ models: simModels(preset), respond: script.respond });
  store = openStore(':memory:');
  const result = await runDebate({ question: 'At how many writes per second should we leave SQLite?', preset, host: sim.url, recorder: recorder(store) });
  return { result, seen: script.seen, debate: store.getDebate(result.id) };
}

const stepsOf = (d: StoredDebate) => (d.steps ?? []).map((s) => s.step);
const delphiSteps = (d: StoredDebate) => stepsOf(d).filter((s): s is Extract<ProtocolStep, { kind: 'delphi' }> => s.kind === 'delphi');
const resultOf = (d: StoredDebate) => stepsOf(d).find((s): s is Extract<ProtocolStep, { kind: 'delphi-result' }> => s.kind === 'delphi-result')!;

describe('the delphi protocol', () => {
  it.each([true, false])('names no panelist, model or persona of a peer in any prompt from round 1 on, read back from the record (numeric: %s)', async (numeric) => {
    const [a, b, c] = IDS as [string, string, string];
    const { debate, seen } = await run(5, numeric, { 0: [[a], [b], [c]], 1: [[a, b], [c]], 2: [[a, b], [c]] });
    // Every schema sent lists its required properties first, so the grammar writes what is read.
    for (const req of seen) expect(optionalBeforeRequired(req.format)).toEqual([]);
    const agents = debate.preset.agents;
    const later = debate.calls.filter((c) => c.round >= 1);
    // Every call of the run is a panelist's, the synthesizer's, or (for a question with no number) the judge's, who groups by id.
    expect(new Set(debate.calls.map((c) => c.agentId))).toEqual(new Set([...IDS, 'synthesizer', ...(numeric ? [] : ['judge'])]));
    const panelCalls = later.filter((c) => IDS.includes(c.agentId));
    expect(panelCalls).toHaveLength(numeric ? 9 : 6);
    for (const call of panelCalls) {
      const prompt = text(call);
      for (const a of agents) {
        expect(prompt).not.toContain(a.id);
        if (a.id === call.agentId) continue;
        expect(prompt).not.toContain(a.model);
        expect(prompt).not.toContain(a.persona!);
      }
    }
  });

  it("shows each panelist the others' answers in the recorded seeded order, with the median and quartiles of the last round", async () => {
    const { seen, debate } = await run(5, true);
    const steps = delphiSteps(debate);
    for (const req of seen.filter((r) => isPanel(r) && delphiRoundOf(r) >= 1)) {
      const round = delphiRoundOf(req);
      const self = IDS[seatOf(req)]!;
      const shown = steps.find((s) => s.round === round)!.shown.find((s) => s.agentId === self)!;
      expect([...shown.order].sort()).toEqual(IDS.filter((id) => id !== self).sort());
      // The recorded order is the order the others' answers appear in.
      const prompt = req.messages.at(-1)!.content;
      const places = shown.order.map((id) => prompt.indexOf(`Answer ${shown.order.indexOf(id) + 1}:\n${answerText(IDS.indexOf(id), round - 1)}`));
      expect(places.every((p) => p > 0)).toBe(true);
      expect([...places].sort((x, y) => x - y)).toEqual(places);
      const numbers = summarize(ESTIMATES.map((e) => e[round - 1]!))!;
      expect(prompt).toContain(`median ${numbers.median}, lower quartile ${numbers.q1}, upper quartile ${numbers.q3}`);
    }
  });

  it('stops when the interquartile range stops narrowing, and the result is the median', async () => {
    const { result, debate, seen } = await run(5, true);
    expect(result.status).toBe('completed');
    expect(debate.exitReason).toBe('stable');
    expect(delphiSteps(debate).map((s) => s.spread)).toEqual([40, 20, 10, 10]);
    expect(seen.filter(isJudge)).toHaveLength(0);
    const res = resultOf(debate);
    expect(res.summary).toMatchObject({ median: 50, q1: 45, q3: 55 });
    expect(res.stopped).toContain('stopped narrowing in round 3');
    const synthesis = seen.find((r) => 'triggersToRevisit' in ((r.format as { properties?: object }).properties ?? {}))!;
    expect(synthesis.messages.at(-1)!.content).toContain("the median of the final round's estimates is 50");
    expect(debate.calls).toHaveLength(4 * 3 + 1);
    // No round was judged, yet the record counts the three anonymous rounds held (list, JSON).
    expect(debate.roundsCompleted).toBe(3);
  });

  it('stops at maxRounds while the spread still narrows', async () => {
    const { debate } = await run(1, true);
    expect(debate.exitReason).toBe('max_rounds');
    expect(resultOf(debate).summary?.median).toBe(50);
    expect(debate.calls).toHaveLength(2 * 3 + 1);
  });

  it("reads a question with no number by the judge's stances, stops when the modal share stops growing, and keeps the other stances", async () => {
    const [a, b, c] = IDS as [string, string, string];
    const { debate, seen } = await run(5, false, { 0: [[a], [b], [c]], 1: [[a, b], [c]], 2: [[a, b], [c]] });
    expect(debate.exitReason).toBe('stable');
    expect(seen.filter(isJudge).map(judgedRoundOf)).toEqual([0, 1, 2]);
    // Later rounds ask for no number.
    expect(seen.filter((r) => isPanel(r) && delphiRoundOf(r) > 0).every((r) => !('estimate' in ((r.format as { properties?: object }).properties ?? {})))).toBe(true);
    const res = resultOf(debate);
    expect(res.numeric).toBe(false);
    expect(res.mode).toMatchObject({ stance: 'S1', agents: [a, b], tie: false });
    expect(res.mode?.others.map((o) => o.agents)).toEqual([[c]]);
    const synthesis = seen.find((r) => 'triggersToRevisit' in ((r.format as { properties?: object }).properties ?? {}))!;
    expect(synthesis.messages.at(-1)!.content).toContain('Keep every other stance as dissent');
    expect(confidenceOf(debate)).toMatchObject({ rule: 'delphi', level: 'medium' });
  });

  it('calls no judge on a round with fewer than two usable answers, stops revising there and takes the result from the round before', async () => {
    const [a, b, c] = IDS as [string, string, string];
    const preset = delphiPreset(4);
    // From round 2 on, two of the three panelists give unusable replies (after their repair too).
    const script = panel({ numeric: false, stances: { 0: [[a], [b], [c]], 1: [[a, b], [c]] }, hold: (req) => (isPanel(req) && /This is Delphi round [2-9]/.test(text(req)) && seatOf(req) !== 0 ? 'not json' : undefined) });
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    store = openStore(':memory:');
    const result = await runDebate({ question: 'Which store should we pick?', preset, host: sim.url, recorder: recorder(store) });
    const debate = store.getDebate(result.id);
    // Judged rounds 0 and 1; round 2 (one usable answer) has no judge call and no score, and no round 3 is asked.
    expect(script.seen.filter(isJudge).map(judgedRoundOf)).toEqual([0, 1]);
    expect(script.seen.filter((r) => isPanel(r) && /This is Delphi round 3/.test(text(r)))).toHaveLength(0);
    expect(debate.calls.filter((c) => c.agentId === 'judge').map((c) => c.round)).toEqual([0, 1]);
    expect(debate.rounds.find((r) => r.round === 2)?.convergence ?? null).toBeNull();
    const spreads = delphiSteps(debate).map((s) => s.spread);
    expect(spreads[0]).toBeCloseTo(2 / 3);
    expect(spreads[1]).toBeCloseTo(1 / 3);
    expect(spreads[2]).toBeNull();
    expect(debate.exitReason).toBe('too_few_answers');
    const res = resultOf(debate);
    expect(res.stopped).toBe('round 2 had 1 usable answer of 3, so the revising stopped; the result is that of round 1');
    expect(res.mode).toMatchObject({ agents: [a, b] });
    expect(res.of).toBe(3);
    // The synthesizer reads the rounds up to round 1, where every panelist answered.
    const synthesis = script.seen.find((r) => 'triggersToRevisit' in ((r.format as { properties?: object }).properties ?? {}))!;
    expect(text(synthesis)).not.toContain('## Round 2');
    expect(text(synthesis)).toContain('Every panelist answered.');
    const card = renderCard(debate).replace(/\s+/g, ' ');
    expect(card).toContain('too few usable answers');
    expect(card).not.toMatch(/convergence r0 [\d.]+ → r1 [\d.]+ → r2/);
  });

  it('shows its rounds and result on the card, in Markdown, in the JSON document and in the viewer', async () => {
    const { debate } = await run(5, true);
    const card = renderCard(debate).replace(/\s+/g, ' ');
    expect(card).toContain('DELPHI (anonymous rounds, numeric question)');
    expect(card).toContain('round 1: median 50 (quartiles 40–60, 3 numbers), IQR 20');
    expect(card).toContain('result: median 50 (quartiles 45–55; 3 of 3 answers gave a number)');
    expect(card).toContain('CONFIDENCE: MEDIUM (IQR 10 = 20% of the median, 3/3 answers gave a number, spread narrowed)');
    expect(renderMarkdown(debate)).toContain('**Result:** median 50 (quartiles 45–55; 3 of 3 answers gave a number).');
    const doc = debateDocument(debate) as { protocol: { kind: string; steps: ProtocolStep[] }; exitReason: string };
    expect(doc.protocol.kind).toBe('delphi');
    expect(doc.protocol.steps.filter((s) => s.kind === 'delphi')).toHaveLength(4);
    expect(debatePage(debate, null)).toContain('<section id="delphi">');
  });

  it('goes on from an interrupted run: reuses the finished calls of the cut round, asks only the rest, in the same order', async () => {
    const preset = delphiPreset(5);
    let stopped = false;
    const script = panel({ numeric: true, hold: (req) => (!stopped && isPanel(req) && delphiRoundOf(req) === 2 && seatOf(req) === 2 ? { content: '{}', delayMs: 60_000 } : undefined) });
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    store = openStore(':memory:');
    const controller = new AbortController();
    let done = 0;
    const stopAfterTwo = (e: DebateEvent): void => {
      if (e.type === 'call.finished' && e.call.round === 2 && e.call.status === 'ok' && ++done === 2) controller.abort();
    };
    const error = await runDebate({ question: 'At how many writes per second should we leave SQLite?', preset, host: sim.url, recorder: recorder(store), listeners: [stopAfterTwo], signal: controller.signal }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(InterruptedError);
    stopped = true;
    const stored = store.getDebate(store.listDebates()[0]!.id);
    const cut = script.seen.find((r) => isPanel(r) && delphiRoundOf(r) === 2 && seatOf(r) === 2)!;
    const plan = planResume(stored);
    expect(plan.from.map((r) => r.round)).toEqual([0, 1]);
    expect(plan.point.roundsCompleted).toBe(1);
    expect([...plan.recorded.keys()].sort()).toEqual([IDS[0], IDS[1]]);

    const before = script.seen.length;
    const result = await resumeDebate(stored, { host: sim.url, recorder: recorder(store, { resume: plan.point }) }, plan);
    expect(result.status).toBe('completed');
    const asked = script.seen.slice(before).filter(isPanel);
    expect(asked.filter((r) => delphiRoundOf(r) === 2).map(seatOf)).toEqual([2]);
    // The resumed prompt is the one the cut call was sent: the same seeded order.
    expect(asked.find((r) => delphiRoundOf(r) === 2)!.messages).toEqual(cut.messages);
    const after = store.getDebate(stored.id);
    expect(after.exitReason).toBe('stable');
    expect(after.roundsCompleted).toBe(3);
    // One step per round: the cut round recorded none before the interruption.
    expect(delphiSteps(after).map((s) => [s.round, s.spread])).toEqual([[0, 40], [1, 20], [2, 10], [3, 10]]);
    expect(resultOf(after).summary?.median).toBe(50);
    expect(store.verifyDebate(stored.id).state).toBe('sealed');
  });
});

/** A numeric panel whose seats give the same estimate every round, written into the reply as given. */
async function fixedPanel(estimates: string[]) {
  const ids = IDS.slice(0, estimates.length);
  const preset = testPreset(ids, {
    agents: ids.map((id, i) => ({ id, model: `model-${i}:1b`, persona: PERSONAS[i]! })),
    protocol: { kind: 'delphi', maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 30 },
  } as never);
  const seen: SimRequest[] = [];
  const respond = (req: SimRequest): SimReply => {
    seen.push(req);
    if (isPanel(req)) return `{"answer":"The rate is as I estimate.","estimate":${estimates[seatOf(req)]},"reason":"From the logs.","confidence":50}`;
    return reply.synthesis([], ids);
  };
  sim = await startSimulator({ models: simModels(preset), respond });
  store = openStore(':memory:');
  const live = capture(200);
  const view = liveRenderer(live, plainStyle);
  const result = await runDebate({ question: 'What is the probability a request fails?', preset, host: sim.url, recorder: recorder(store), listeners: [view] });
  view.close();
  return { result, seen, live: live.text, debate: store.getDebate(result.id) };
}

/** Every view of a stored debate that prints the rounds: the card, Markdown, the viewer's page and a replay. */
function everyView(d: StoredDebate): string[] {
  const replay = capture(200);
  const view = liveRenderer(replay, plainStyle);
  for (const e of storedEvents(d)) view(e);
  view.close();
  return [renderCard(d), renderMarkdown(d), debatePage(d, null), replay.text];
}

describe('delphi with estimates at the edges of a double', () => {
  it('finds the median 0 of two finite estimates at ±1.5e308, records finite figures, and stops when the spread holds', async () => {
    const { result, debate, live } = await fixedPanel(['-1.5e308', '1.5e308']);
    expect(result.status).toBe('completed');
    expect(debate.exitReason).toBe('stable');
    expect(delphiSteps(debate).map((s) => [s.summary, s.spread])).toEqual([
      [{ n: 2, median: 0, q1: -7.5e307, q3: 7.5e307, iqr: 1.5e308 }, 1.5e308],
      [{ n: 2, median: 0, q1: -7.5e307, q3: 7.5e307, iqr: 1.5e308 }, 1.5e308],
    ]);
    expect(resultOf(debate).spreads).toEqual([1.5e308, 1.5e308]);
    expect(live).toContain('round 0: median 0 (quartiles -7.5e+307–7.5e+307, 2 numbers) · IQR 1.5e+308');
    expect(live).not.toMatch(/NaN|Infinity/);
    for (const text of everyView(debate)) {
      expect(text).toContain('median 0 (quartiles -7.5e+307–7.5e+307');
      expect(text).not.toMatch(/NaN|Infinity/);
    }
    expect(JSON.stringify(debateDocument(debate))).toContain('"summary":{"n":2,"median":0,"q1":-7.5e+307,"q3":7.5e+307,"iqr":1.5e+308}');
    expect(confidenceOf(debate)).toMatchObject({ rule: 'delphi', level: 'low' });
  });

  it('shows estimates of 0.0002 to 0.0004 as written in the prompts, the views and the confidence', async () => {
    const { debate, seen } = await fixedPanel(['0.0002', '0.0003', '0.0004']);
    const revisions = seen.filter((r) => isPanel(r) && delphiRoundOf(r) === 1).map((r) => r.messages.at(-1)!.content);
    expect(revisions).toHaveLength(3);
    for (const prompt of revisions) {
      expect(prompt).toContain('median 0.0003, lower quartile 0.00025, upper quartile 0.00035');
      expect(prompt).toMatch(/Estimate: 0\.000[234]/);
      expect(prompt).not.toContain('Estimate: 0\n');
    }
    const card = renderCard(debate).replace(/\s+/g, ' ');
    expect(card).toContain('round 0: median 0.0003 (quartiles 0.00025–0.00035, 3 numbers), IQR 0.0001');
    expect(card).toContain('CONFIDENCE: LOW (IQR 0.0001 = 33% of the median');
  });

  it('renders a record written with null figures (Infinity and NaN stored by JSON) in every view, rated LOW', async () => {
    const { debate } = await fixedPanel(['-1.5e308', '1.5e308']);
    // What the rounds stored before the fix: Infinity for the median and quartiles, NaN for the spread.
    const broken = { n: 2, median: Infinity, q1: Infinity, q3: Infinity, iqr: Number.NaN };
    const old: StoredDebate = JSON.parse(
      JSON.stringify({
        ...debate,
        steps: (debate.steps ?? []).map((s) =>
          s.step.kind === 'delphi'
            ? { ...s, step: { ...s.step, summary: broken, spread: Number.NaN } }
            : s.step.kind === 'delphi-result'
              ? { ...s, step: { ...s.step, summary: broken, spreads: s.step.spreads.map(() => Number.NaN) } }
              : s,
        ),
      }),
    ) as StoredDebate;
    expect(delphiSteps(old)[0]!.summary).toMatchObject({ median: null, q1: null, q3: null, iqr: null });
    for (const text of everyView(old)) expect(text).toContain('no summary');
    expect(() => debateDocument(old)).not.toThrow();
    expect(confidenceOf(old)).toMatchObject({ rule: 'delphi', level: 'low' });
  });
});

describe('the rules of delphi', () => {
  it('gives the same order for the same seed and different orders across seeds', () => {
    const items = ['p', 'q', 'r', 's'];
    expect(shuffled(items, 'd:1:p')).toEqual(shuffled(items, 'd:1:p'));
    const orders = new Set(Array.from({ length: 40 }, (_, i) => shuffled(items, `d:${i}:p`).join('')));
    expect(orders.size).toBeGreaterThan(8);
    for (const o of orders) expect([...o].sort().join('')).toBe('pqrs');
  });

  it('measures quartiles by interpolation and stops on a spread that did not narrow, none left, or the round limit', () => {
    expect(summarize([10, 50, 90])).toEqual({ n: 3, median: 50, q1: 30, q3: 70, iqr: 40 });
    expect(summarize([1, 2, 3, 4])).toMatchObject({ median: 2.5, q1: 1.75, q3: 3.25 });
    expect(delphiStop([40, 20], 1, 4)).toBeNull();
    expect(delphiStop([40, 20, 25], 2, 4)?.reason).toBe('stable');
    expect(delphiStop([40, null, 30], 2, 4)).toBeNull();
    expect(delphiStop([40, 0], 1, 4)?.detail).toContain('no spread left');
    expect(delphiStop([40, 20], 1, 1)?.reason).toBe('max_rounds');
  });

  it('plans at most n calls per round, the judge per round and the synthesis for --dry-run', () => {
    const estimate = estimateRun(delphiPreset(2), 'How many?', () => null);
    expect(estimate.calls).toBe(3 * 3 + 3 + 1);
    expect(estimate.groups.filter((g) => g.what.endsWith('anonymous rounds')).map((g) => g.calls)).toEqual([2, 2, 2]);
  });

  it('rates a final spread: narrow is HIGH, a missing number caps it, too few numbers is LOW', () => {
    const base = { numeric: true, modalShare: null, firstSpread: 40, finalSpread: 4, threshold: 0.85 };
    expect(delphiConfidence({ ...base, summary: { n: 3, median: 50, q1: 48, q3: 52 }, of: 3 }).level).toBe('high');
    expect(delphiConfidence({ ...base, summary: { n: 3, median: 50, q1: 48, q3: 52 }, of: 4 }).level).toBe('medium');
    expect(delphiConfidence({ ...base, summary: { n: 3, median: 50, q1: 30, q3: 70 }, of: 3 }).level).toBe('low');
    expect(delphiConfidence({ ...base, summary: { n: 1, median: 50, q1: 50, q3: 50 }, of: 3 }).level).toBe('low');
    expect(delphiConfidence({ ...base, numeric: false, summary: null, modalShare: 0.5, of: 4 }).level).toBe('low');
    // HIGH needs two model families, unless nobody had to move.
    const narrow = { ...base, summary: { n: 3, median: 50, q1: 48, q3: 52 }, of: 3 };
    const one = delphiConfidence({ ...narrow, families: ['qwen', 'qwen', 'qwen'] });
    expect(one.level).toBe('medium');
    expect(one.lowered.join(' ')).toContain('within one model family (qwen)');
    expect(delphiConfidence({ ...narrow, families: ['qwen', 'llama', 'qwen'] }).level).toBe('high');
    expect(delphiConfidence({ ...narrow, families: [null, null, null] }).level).toBe('medium');
    expect(delphiConfidence({ ...narrow, families: ['qwen', 'qwen', 'qwen'], firstSpread: 4, finalSpread: 4 }).level).toBe('high');
    // Round 0 gave fewer than two numbers, so its spread was not measured: nothing shows the panel did not move.
    const unmeasured = delphiConfidence({ ...narrow, families: ['qwen', 'qwen', 'qwen'], firstSpread: null });
    expect(unmeasured.level).toBe('medium');
    expect(unmeasured.lowered).toEqual(['MEDIUM at most: the panel reached its result within one model family (qwen), from a round 0 whose spread was not measured, which is not independent support.']);
    expect(delphiConfidence({ ...narrow, families: ['qwen', 'llama', 'qwen'], firstSpread: null }).level).toBe('high');
  });
});
