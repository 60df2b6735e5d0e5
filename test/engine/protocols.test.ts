import { afterEach, describe, expect, it } from 'vitest';
import type { DebateEvent } from '../../src/engine/events.js';
import type { ProtocolStep } from '../../src/engine/protocol-events.js';
import { protocolFor } from '../../src/engine/protocols/index.js';
import { recorder } from '../../src/engine/recorder.js';
import { resynthesize } from '../../src/engine/resynthesize.js';
import { Runner } from '../../src/engine/runner.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { InterruptedError } from '../../src/errors.js';
import { debateDocument } from '../../src/render/document.js';
import { liveRenderer } from '../../src/render/live.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import { renderCard } from '../../src/render/card.js';
import { storedEvents } from '../../src/render/replay.js';
import { debatePage } from '../../src/serve/debate-page.js';
import { plainStyle } from '../../src/render/style.js';
import { type SimHandle, type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { capture } from '../helpers/cli.js';
import { agentOf, playersOf, reply, roundOf, scriptedResponder, simModels, stageOf, subQuestionOf, testPreset } from '../helpers/panel.js';

let sim: SimHandle | null = null;
let store: Store | null = null;

afterEach(async () => {
  store?.close();
  store = null;
  await sim?.close();
  sim = null;
});

async function setup(agentIds: string[], protocol: Record<string, unknown>, override?: (req: SimRequest) => SimReply | undefined) {
  const preset = testPreset(agentIds, { protocol: { maxRounds: 3, convergenceThreshold: 0.85, callTimeoutSeconds: 10, ...protocol } as never });
  const script = scriptedResponder([0.2], override);
  sim = await startSimulator({ models: simModels(preset), respond: script.respond });
  store = openStore(':memory:');
  const events: DebateEvent[] = [];
  const run = (extra: Partial<Parameters<typeof runDebate>[0]> = {}) =>
    runDebate({ question: 'Should we do A?', preset, host: sim!.url, recorder: recorder(store!), listeners: [(e) => events.push(e)], ...extra });
  return { preset, seen: script.seen, events, run, store: store! };
}

const stepsOf = (s: Store, id: string): ProtocolStep[] => (s.getDebate(id).steps ?? []).map((x) => x.step);
const lastPrompt = (req: SimRequest): string => req.messages.at(-1)?.content ?? '';

/** Openings with set confidences, so the seeding is known. */
function confident(conf: Record<string, number>) {
  return (req: SimRequest): SimReply | undefined => {
    const agent = agentOf(req)!;
    if (stageOf(req) === 'opening') return JSON.stringify({ position: `${agent}-r0`, reasoning: `${agent} reasons`, confidence: Math.round((conf[agent] ?? 0.5) * 100) });
    if (stageOf(req) === 'critique') return reply.critique(agent, `${agent}-r${roundOf(req)}`);
    return undefined;
  };
}

describe('parallel protocol', () => {
  it('has every agent answer once, then the synthesizer read every answer, with no critique and no judge', async () => {
    const { run, seen, store } = await setup(['a', 'b', 'c'], { kind: 'parallel' }, (req) =>
      stageOf(req) === 'opening' ? reply.opening(agentOf(req)!, `${agentOf(req)} holds position ${agentOf(req)}`) : undefined,
    );
    const result = await run();
    expect(result.status).toBe('completed');
    expect(result.exitReason).toBe('answered');
    expect(seen.map(stageOf)).toEqual(['opening', 'opening', 'opening', 'synthesis']);
    const synth = lastPrompt(seen.at(-1)!);
    for (const id of ['a', 'b', 'c']) expect(synth).toContain(`${id} holds position ${id}`);
    expect(store.getDebate(result.id).calls).toHaveLength(4);
  });
});

describe('tournament protocol', () => {
  it('seeds by round-0 confidence, pairs top against bottom, and records the seeding', async () => {
    const { run, store } = await setup(['a', 'b', 'c', 'd'], { kind: 'tournament' }, confident({ a: 0.6, b: 0.9, c: 0.7, d: 0.8 }));
    const result = await run();
    const brackets = stepsOf(store, result.id).filter((s) => s.kind === 'bracket');
    expect(brackets[0]).toMatchObject({ round: 1, seeding: ['b', 'd', 'c', 'a'], pairings: [{ a: 'b', b: 'a' }, { a: 'd', b: 'c' }] });
  });

  it('has each side of a match critique only its opponent, once, and lets the judge name only one of the two', async () => {
    const { run, seen } = await setup(['a', 'b', 'c', 'd'], { kind: 'tournament' }, confident({ a: 0.9, b: 0.8, c: 0.7, d: 0.6 }));
    await run();
    const round1 = seen.filter((r) => stageOf(r) === 'critique' && roundOf(r) === 1);
    expect(round1.map(agentOf).sort()).toEqual(['a', 'b', 'c', 'd']);
    const opponent: Record<string, string> = { a: 'd', d: 'a', b: 'c', c: 'b' };
    for (const req of round1) {
      const me = agentOf(req)!;
      const prompt = lastPrompt(req);
      expect(prompt).toContain(`[${opponent[me]}]`);
      for (const other of ['a', 'b', 'c', 'd'].filter((x) => x !== me && x !== opponent[me])) expect(prompt).not.toContain(`[${other}]`);
    }
    const verdicts = seen.filter((r) => stageOf(r) === 'verdict');
    expect(verdicts.slice(0, 2).map((r) => playersOf(r).sort())).toEqual(expect.arrayContaining([['a', 'd'], ['b', 'c']]));
  });

  it('never calls a loser again, and runs the matches of a bracket round side by side', async () => {
    // The judge always picks the second player: the lower seed wins every match.
    const { run, seen, store } = await setup(['a', 'b', 'c', 'd'], { kind: 'tournament' }, (req) => {
      if (stageOf(req) === 'verdict') return reply.verdict(playersOf(req)[1]!);
      return confident({ a: 0.9, b: 0.8, c: 0.7, d: 0.6 })(req);
    });
    const result = await run();
    const verdicts = stepsOf(store, result.id).filter((s): s is Extract<ProtocolStep, { kind: 'verdict' }> => s.kind === 'verdict');
    const losers = verdicts.map((v) => ({ round: v.round, loser: v.winner === v.a ? v.b : v.a }));
    expect(losers.filter((l) => l.round === 1).map((l) => l.loser).sort()).toEqual(['a', 'b']);
    for (const { round, loser } of losers) {
      const later = seen.filter((r) => agentOf(r) === loser && stageOf(r) === 'critique' && roundOf(r) > round);
      expect(later).toEqual([]);
    }
    // Both round-1 matches had their critiques sent before the first verdict was asked for.
    const firstVerdict = seen.findIndex((r) => stageOf(r) === 'verdict');
    const round1 = seen.map((r, i) => ({ r, i })).filter(({ r }) => stageOf(r) === 'critique' && roundOf(r) === 1);
    expect(round1).toHaveLength(4);
    for (const { i } of round1) expect(i).toBeLessThan(firstVerdict);
    const champion = stepsOf(store, result.id).find((s) => s.kind === 'champion');
    expect(champion).toMatchObject({ kind: 'champion', agentId: 'd', runnerUp: 'c' });
  });

  it('gives the top seed a bye when the count is odd, and writes the card from the final', async () => {
    const { run, seen, store } = await setup(['a', 'b', 'c'], { kind: 'tournament' }, confident({ a: 0.9, b: 0.8, c: 0.7 }));
    const result = await run();
    expect(result.exitReason).toBe('champion');
    const steps = stepsOf(store, result.id);
    expect(steps.find((s) => s.kind === 'bracket')).toMatchObject({ round: 1, pairings: [{ a: 'a', b: null }, { a: 'b', b: 'c' }] });
    expect(seen.filter((r) => stageOf(r) === 'critique' && roundOf(r) === 1).map(agentOf).sort()).toEqual(['b', 'c']);
    // Default verdicts pick the first player: b beats c, then a beats b.
    const champion = steps.find((s) => s.kind === 'champion');
    expect(champion).toMatchObject({ agentId: 'a', runnerUp: 'b', position: 'a-r2' });
    const synth = lastPrompt(seen.find((r) => stageOf(r) === 'synthesis')!);
    expect(synth).toContain('a-r2');
    expect(synth).toContain('b-r2');
    expect(synth).not.toContain('c-r1');
    expect(synth).toContain('Champion: a');
    expect(synth).toContain('Panelists: a, b');
    expect(seen.filter((r) => stageOf(r) === 'judge')).toEqual([]);
  });

  it('advances the other side by walkover when one side gives no usable critique', async () => {
    const { run, store } = await setup(['a', 'b'], { kind: 'tournament' }, (req) => {
      if (stageOf(req) === 'critique' && agentOf(req) === 'a') return { error: 'runner crashed', status: 500 };
      return confident({ a: 0.9, b: 0.8 })(req);
    });
    const result = await run();
    const verdict = stepsOf(store, result.id).find((s) => s.kind === 'verdict');
    expect(verdict).toMatchObject({ winner: 'b', decidedBy: 'walkover' });
  });

  it('names an agent without a usable round-0 answer as failed in the synthesis and on the card, and no eliminated agent', async () => {
    const { run, seen, store } = await setup(['a', 'b', 'c', 'd', 'e'], { kind: 'tournament' }, (req) => {
      if (stageOf(req) === 'opening' && agentOf(req) === 'e') return { error: 'runner crashed', status: 500 };
      return confident({ a: 0.9, b: 0.8, c: 0.7, d: 0.6, e: 0.5 })(req);
    });
    const result = await run();
    expect(result.status).toBe('completed');
    // e never entered the bracket: four seeds.
    expect(stepsOf(store, result.id).find((s) => s.kind === 'bracket')).toMatchObject({ seeding: ['a', 'b', 'c', 'd'] });
    const failed = result.synthesis?.synthesis?.failedAgents ?? [];
    expect(failed.map((f) => f.agent)).toEqual(['e']);
    expect(failed[0]!.reason).toContain('runner crashed');
    const synth = lastPrompt(seen.find((r) => stageOf(r) === 'synthesis')!);
    expect(synth).toMatch(/Panelists with no usable final answer: e \([^)]*runner crashed/);
    expect(renderCard(store.getDebate(result.id))).toMatch(/AGENTS WITHOUT A FINAL ANSWER\n  - e: [^\n]*runner crashed/);
    // The footer counts the four seeded, not the five on the panel.
    expect(renderCard(store.getDebate(result.id)).replace(/\s+/g, ' ')).toContain('tournament of 4 agents (1 of 5 without a usable round-0 answer) · 2 bracket rounds');
  });

  it('stops when interrupted during a match, keeping what was recorded', async () => {
    const controller = new AbortController();
    const { run, store } = await setup(['a', 'b', 'c', 'd'], { kind: 'tournament' }, (req) => {
      if (stageOf(req) === 'verdict') controller.abort();
      return confident({ a: 0.9, b: 0.8, c: 0.7, d: 0.6 })(req);
    });
    await expect(run({ signal: controller.signal })).rejects.toBeInstanceOf(InterruptedError);
    const [summary] = store.listDebates();
    const d = store.getDebate(summary!.id);
    expect(d.status).toBe('interrupted');
    expect(d.turns.filter((t) => t.round === 1).length).toBeGreaterThan(0);
    expect(renderMarkdown(d)).toContain('## Bracket');
  });
});

describe('decompose protocol', () => {
  const parts = [
    { question: 'first part?', dependsOn: [] },
    { question: 'second part?', dependsOn: [] },
    { question: 'third part?', dependsOn: [1] },
    { question: 'fourth part?', dependsOn: [2, 3] },
  ];

  it('has the decomposer split, the others answer in turn and in dependency order, and the decomposer reassemble from every part', async () => {
    const { run, seen, store } = await setup(['lead', 'x', 'y'], { kind: 'decompose', decomposer: 'lead' }, (req) =>
      stageOf(req) === 'split' ? reply.split(parts) : undefined,
    );
    const result = await run();
    expect(result.exitReason).toBe('reassembled');
    expect(result.status).toBe('completed');
    expect(agentOf(seen[0]!)).toBe('lead');
    expect(stageOf(seen[0]!)).toBe('split');
    const subs = seen.filter((r) => stageOf(r) === 'subanswer');
    expect(subs.map((r) => [subQuestionOf(r), agentOf(r)]).sort()).toEqual([
      [1, 'x'],
      [2, 'y'],
      [3, 'x'],
      [4, 'y'],
    ]);
    const at = (n: number): number => seen.findIndex((r) => stageOf(r) === 'subanswer' && subQuestionOf(r) === n);
    expect(at(3)).toBeGreaterThan(at(1));
    expect(at(4)).toBeGreaterThan(at(3));
    expect(at(4)).toBeGreaterThan(at(2));
    const prompt = (n: number): string => lastPrompt(seen[at(n)]!);
    expect(prompt(1)).not.toContain('answers sub-question');
    expect(prompt(3)).toContain('x answers sub-question 1');
    expect(prompt(3)).not.toContain('y answers sub-question 2');
    expect(prompt(4)).toContain('y answers sub-question 2');
    expect(prompt(4)).toContain('x answers sub-question 3');
    const last = seen.at(-1)!;
    expect(agentOf(last)).toBe('lead');
    expect(stageOf(last)).toBe('synthesis');
    for (const n of [1, 2, 3, 4]) expect(lastPrompt(last)).toContain(`answers sub-question ${n}`);
    expect(seen.filter((r) => agentOf(r) === 'lead')).toHaveLength(2);
    expect(seen.filter((r) => r.model === 'judge:1b' || r.model === 'synth:1b')).toEqual([]);
    expect(store.getDebate(result.id).synthesis?.status).toBe('ok');
  });

  it('drops a dependency on a later sub-question and notes it', async () => {
    const { run, seen, store } = await setup(['lead', 'x'], { kind: 'decompose' }, (req) =>
      stageOf(req) === 'split' ? reply.split([{ question: 'one?', dependsOn: [2] }, { question: 'two?', dependsOn: [1, 2] }]) : undefined,
    );
    const result = await run();
    const split = stepsOf(store, result.id).find((s): s is Extract<ProtocolStep, { kind: 'split' }> => s.kind === 'split')!;
    expect(split.subQuestions.map((s) => s.dependsOn)).toEqual([[], [1]]);
    expect(split.notes).toHaveLength(2);
    expect(split.notes[0]).toContain('sub-question 1');
    expect(lastPrompt(seen.find((r) => stageOf(r) === 'subanswer' && subQuestionOf(r) === 1)!)).not.toContain('answers sub-question');
  });

  it('shortens the answers a sub-question depends on to fit its num_ctx, and records that it did', async () => {
    const long = `x answers sub-question 1: ${'a long line of detail. '.repeat(250)}`;
    const { run, seen, store, preset } = await setup(['lead', 'x', 'y'], { kind: 'decompose', maxAnswerTokens: 2000 }, (req) => {
      if (stageOf(req) === 'split') return reply.split([{ question: 'one?', dependsOn: [] }, { question: 'two?', dependsOn: [1] }]);
      if (stageOf(req) === 'subanswer' && subQuestionOf(req) === 1) return reply.opening('x', long);
      return undefined;
    });
    preset.agents[2]!.options = { num_ctx: 2560 };
    const result = await run();
    const prompt = lastPrompt(seen.find((r) => stageOf(r) === 'subanswer' && subQuestionOf(r) === 2)!);
    expect(prompt).toContain('(shortened to fit)');
    expect(prompt.length).toBeLessThan(long.length);
    const call = store.getDebate(result.id).calls.find((c) => c.stage === 'subanswer' && c.round === 2)!;
    expect(call.options.num_ctx).toBe(2560);
    expect(call.truncation).toContain('shortened');
  });

  it('stops when interrupted while the parts are answered, keeping the split on the record', async () => {
    const controller = new AbortController();
    const { run, seen, store } = await setup(['lead', 'x', 'y'], { kind: 'decompose' }, (req) => {
      if (stageOf(req) === 'split') return reply.split(parts);
      if (stageOf(req) === 'subanswer' && subQuestionOf(req) === 2) controller.abort();
      return undefined;
    });
    await expect(run({ signal: controller.signal })).rejects.toBeInstanceOf(InterruptedError);
    const d = store.getDebate(store.listDebates()[0]!.id);
    expect(d.status).toBe('interrupted');
    expect((d.steps ?? []).map((s) => s.step.kind)).toContain('split');
    expect(seen.filter((r) => stageOf(r) === 'synthesis')).toEqual([]);
    expect(renderMarkdown(d)).toContain('## Decomposition by lead');
  });

  it('keeps a decomposition whose reassembly failed, and lets `synthesize` finish it with the decomposer', async () => {
    let failReassembly = true;
    const { run, seen, store } = await setup(['lead', 'x', 'y'], { kind: 'decompose' }, (req) => {
      if (stageOf(req) === 'split') return reply.split(parts);
      if (stageOf(req) === 'synthesis' && failReassembly) return { error: 'model crashed', status: 500 };
      return undefined;
    });
    const result = await run();
    expect(result.status).toBe('unsynthesized');
    // Its parts stand, but nothing answers the whole question: LOW, said on the card, in the document and the viewer.
    const unassembled = store.getDebate(result.id);
    expect(debateDocument(unassembled).confidence).toMatchObject({ level: 'low', rule: 'decompose' });
    expect(renderCard(unassembled, { ...plainStyle, columns: 200 })).toContain('LOW: the reassembly failed');
    expect(debatePage(unassembled, null)).toContain('Confidence: LOW (');
    failReassembly = false;
    const before = seen.length;
    const { debate } = await resynthesize({ store, id: result.id, host: sim!.url });
    expect(debate.status).toBe('completed');
    const again = seen.slice(before);
    expect(again.map(agentOf)).toEqual(['lead']);
    expect(again[0]!.model).toBe('model-0:1b');
    for (const n of [1, 2, 3, 4]) expect(lastPrompt(again[0]!)).toContain(`answers sub-question ${n}`);
    expect(debate.calls.at(-1)).toMatchObject({ stage: 'reassembly', agentId: 'lead' });
  });

  it("has the decomposer write a fallback for a failed part, marked as such, and runs the parts after it on that", async () => {
    const { run, seen, store } = await setup(['lead', 'x', 'y'], { kind: 'decompose' }, (req) => {
      if (stageOf(req) === 'split') return reply.split(parts);
      if (stageOf(req) === 'subanswer' && subQuestionOf(req) === 1 && agentOf(req) !== 'lead') return { error: 'model crashed', status: 500 };
      return undefined;
    });
    const result = await run();
    const fallbackCall = seen.find((r) => stageOf(r) === 'subanswer' && agentOf(r) === 'lead')!;
    expect(lastPrompt(fallbackCall)).toContain('x, who was assigned sub-question 1, gave no usable answer');
    const answers = stepsOf(store, result.id).filter((s): s is Extract<ProtocolStep, { kind: 'subanswer' }> => s.kind === 'subanswer');
    expect(answers.find((a) => a.index === 1)).toMatchObject({ status: 'ok', agentId: 'lead', fallback: { failedAgent: 'x' } });
    expect(answers.map((a) => a.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
    // Part 3 depends on part 1: it runs, with the fallback in its prompt.
    expect(lastPrompt(seen.find((r) => stageOf(r) === 'subanswer' && subQuestionOf(r) === 3)!)).toContain('sub-question 1 (lead)');
    const reassembly = lastPrompt(seen.at(-1)!);
    expect(reassembly).toContain('Fallback analysis by lead (you), after x gave no usable answer');
    const d = store.getDebate(result.id);
    expect(renderMarkdown(d)).toContain('_fallback analysis by lead, after x gave no usable answer');
    expect(renderCard(d, { ...plainStyle, columns: 200 })).toContain('fallback analysis by lead, after x gave no usable answer');
    expect(debatePage(d, null)).toContain('<em>fallback analysis by lead, after x gave no usable answer');
  });

  it('skips a sub-question whose dependency failed and whose fallback failed too, with the reason, and tells the reassembly', async () => {
    const { run, seen, store } = await setup(['lead', 'x', 'y'], { kind: 'decompose' }, (req) => {
      if (stageOf(req) === 'split') return reply.split(parts);
      if (stageOf(req) === 'subanswer' && subQuestionOf(req) === 1) return { error: 'model crashed', status: 500 };
      return undefined;
    });
    const result = await run();
    // Part 1's crashed runner is asked three times (one send, two resends), then the decomposer's fallback as often; part 3, which needs it, never.
    expect(seen.filter((r) => stageOf(r) === 'subanswer').map(subQuestionOf).sort()).toEqual([1, 1, 1, 1, 1, 1, 2]);
    expect(stepsOf(store, result.id).find((s) => s.kind === 'subanswer' && s.index === 1)).toMatchObject({ status: 'failed', reason: expect.stringContaining('the fallback by lead failed too') });
    const answers = stepsOf(store, result.id).filter((s): s is Extract<ProtocolStep, { kind: 'subanswer' }> => s.kind === 'subanswer');
    expect(answers.find((a) => a.index === 3)).toMatchObject({ status: 'skipped', reason: expect.stringContaining('sub-question 1') });
    expect(answers.find((a) => a.index === 4)).toMatchObject({ status: 'skipped', reason: expect.stringContaining('sub-question 3') });
    const reassembly = lastPrompt(seen.at(-1)!);
    expect(reassembly).toContain('Sub-questions without an answer');
    expect(reassembly).toContain('sub-question 3 (x), skipped');
  });
});

describe('recorded protocols', () => {
  const cases = [
    { kind: 'parallel', agents: ['a', 'b', 'c'], md: '## Round 0: independent answers', live: 'Round 0 · independent answers', page: 'protocol <strong>parallel</strong>' },
    { kind: 'tournament', agents: ['a', 'b', 'c'], md: '## Bracket', live: 'judge: a beats b', page: '<section id="bracket">' },
    { kind: 'decompose', agents: ['a', 'b', 'c'], md: '## Decomposition by a', live: '1. part one?', page: '<section id="decomposition">' },
  ] as const;
  for (const c of cases) {
    it(`replays, shows and exports a ${c.kind} run from the record alone`, async () => {
      const { run, store, events } = await setup([...c.agents], { kind: c.kind });
      const result = await run();
      const d = store.getDebate(result.id);
      const replayed = capture();
      const render = liveRenderer(replayed, { ...plainStyle, live: false });
      for (const e of storedEvents(d)) render(e);
      render.close();
      expect(replayed.text).toContain(c.live);
      expect(storedEvents(d).filter((e) => e.type === 'protocol.step')).toHaveLength(events.filter((e) => e.type === 'protocol.step').length);
      expect(renderMarkdown(d)).toContain(c.md);
      expect(debatePage(d, null)).toContain(c.page);
      const doc = debateDocument(d) as { protocol: { kind: string; steps: unknown[] } };
      expect(doc.protocol.kind).toBe(c.kind);
      expect(doc.protocol.steps).toEqual((d.steps ?? []).map((s) => s.step));
    });
  }
});

describe('synthesizer rotation', () => {
  it('takes the panel models in turn, records the choice, and warns when the synthesizer also debates', async () => {
    const { preset } = await setup(['a', 'b'], { kind: 'parallel' });
    const rotating = { ...preset, synthesizer: { rotate: true } };
    const picked: string[] = [];
    for (const turn of [0, 1, 2]) {
      const events: DebateEvent[] = [];
      const result = await runDebate({ question: 'Q?', preset: rotating, host: sim!.url, recorder: recorder(store!), listeners: [(e) => events.push(e)], synthesizerTurn: turn });
      const d = store!.getDebate(result.id);
      picked.push(d.agents.find((x) => x.role === 'synthesizer')!.model);
      expect(d.calls.find((x) => x.stage === 'synthesis')!.model).toBe(picked.at(-1));
      expect((d.steps ?? []).find((s) => s.step.kind === 'synthesizer')?.step).toMatchObject({ turn, candidates: ['model-0:1b', 'model-1:1b'] });
      const started = events.find((e) => e.type === 'debate.started');
      expect(started?.type === 'debate.started' && started.warnings.join('\n')).toContain('favour its own arguments');
    }
    expect(picked).toEqual(['model-0:1b', 'model-1:1b', 'model-0:1b']);
  });
});

describe('starting from stored rounds', () => {
  it('lets the debate go on from a stored round 0 without asking anyone to answer again', async () => {
    const { preset, seen } = await setup(['a', 'b'], { kind: 'debate', maxRounds: 1 });
    const stored = ['a', 'b'].map((id, i) => ({
      round: 0,
      agentId: id,
      model: `model-${i}:1b`,
      status: 'ok' as const,
      position: `${id} stored answer`,
      confidence: 0.5,
      opening: { position: `${id} stored answer`, reasoning: 'kept', confidence: 0.5 },
      critique: null,
      error: null,
    }));
    const debate = protocolFor('debate');
    const runner = await Runner.start({ question: 'Should we do A?', preset, host: sim!.url, recorder: recorder(store!) }, 'resumed-1', {
      ...debate.shape(preset, []),
      synthesizer: null,
    });
    const outcome = await debate.run(runner, [{ round: 0, turns: stored, judgement: null }]);
    runner.complete(outcome);
    expect(seen.map(stageOf)).toEqual(['judge', 'critique', 'critique', 'judge', 'synthesis']);
    for (const req of seen.filter((r) => stageOf(r) === 'critique')) expect(lastPrompt(req)).toContain(`${agentOf(req)} stored answer`);
    expect(outcome.rounds.map((r) => r.round)).toEqual([0, 1]);
  });
});
