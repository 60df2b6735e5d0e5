import { afterEach, describe, expect, it } from 'vitest';
import { parsePreset } from '../../src/config/load-preset.js';
import type { DebateEvent } from '../../src/engine/events.js';
import type { ProtocolStep } from '../../src/engine/protocol-events.js';
import { recorder } from '../../src/engine/recorder.js';
import { planResume, resumeDebate } from '../../src/engine/resume.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { DebateFailedError, InterruptedError } from '../../src/errors.js';
import { oxfordConfidence } from '../../src/protocol/confidence.js';
import { assignSides, frameMotion } from '../../src/protocol/oxford.js';
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
import type { Store } from '../../src/store/store.js';
import { capture } from '../helpers/cli.js';
import { agentOf, reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

let sim: SimHandle | null = null;
let store: Store | null = null;

afterEach(async () => {
  store?.close();
  store = null;
  await sim?.close();
  sim = null;
});

const prompt = (req: SimRequest): string => req.messages.at(-1)?.content ?? '';
const phaseOf = (req: SimRequest): string | null => /This is your (opening speech|rebuttal|closing speech)/.exec(prompt(req))?.[1]?.split(' ')[0] ?? null;
const oxfordPreset = (ids = ['a', 'b', 'c', 'd']) => testPreset(ids, { protocol: { kind: 'oxford', callTimeoutSeconds: 10 } as never });

/** A verdict against the motion: b's argument decides it, a's is the for side's best. */
const verdict = (winner = 'against', margin = 70): string =>
  JSON.stringify({
    strongestFor: { speaker: 'a', argument: 'a-best-for' },
    strongestAgainst: { speaker: 'b', argument: 'b-best-against' },
    winner,
    reasons: ['the against side answered the cost argument'],
    margin,
  });

/** Every speech says who made it in which phase (`a-opening`), so a prompt shows whose speeches it carries. */
function speeches(judge: (req: SimRequest, n: number) => SimReply = () => verdict()) {
  let verdicts = 0;
  return scriptedResponder([0.5], (req) => {
    const agent = agentOf(req) ?? 'x';
    if (stageOf(req) === 'opening') return reply.opening(agent, `${agent}-opening`);
    if (stageOf(req) === 'critique') return reply.critique(agent, `${agent}-${phaseOf(req)}`);
    if (stageOf(req) === 'verdict') return judge(req, ++verdicts);
    if (stageOf(req) === 'synthesis') return reply.synthesis([{ agent: 'a', round: 0 }], ['b', 'd']);
    return undefined;
  });
}

async function run(preset = oxfordPreset(), script = speeches(), question = 'Should we do A?') {
  sim = await startSimulator({ models: simModels(preset), respond: script.respond });
  store = openStore(':memory:');
  const result = await runDebate({ question, preset, host: sim.url, recorder: recorder(store) });
  return { result, seen: script.seen, debate: store.getDebate(result.id) };
}

const stepsOf = (steps: { step: ProtocolStep }[] | undefined) => (steps ?? []).map((s) => s.step);

describe('the Oxford protocol', () => {
  it('alternates sides in panel order and runs openings, rebuttals and closings, each speaker reading only the other side', async () => {
    const { seen, result, debate } = await run();
    expect(result.status).toBe('completed');
    expect(result.exitReason).toBe('verdict');
    const speechesOf = (phase: string) => seen.filter((r) => phaseOf(r) === phase);
    expect(speechesOf('opening').map(agentOf).sort()).toEqual(['a', 'b', 'c', 'd']);
    expect(speechesOf('rebuttal').map(agentOf).sort()).toEqual(['a', 'b', 'c', 'd']);
    expect(speechesOf('closing').map(agentOf).sort()).toEqual(['a', 'b', 'c', 'd']);
    // a and c speak for, b and d against.
    for (const r of speechesOf('opening')) expect(prompt(r)).toContain(`You speak ${['a', 'c'].includes(agentOf(r)!) ? 'FOR' : 'AGAINST'} the motion.`);
    const of = (phase: string, agent: string) => prompt(speechesOf(phase).find((r) => agentOf(r) === agent)!);
    // A rebuttal answers the other side's openings, with its own; never a teammate's.
    expect(of('rebuttal', 'a')).toContain('b-opening');
    expect(of('rebuttal', 'a')).toContain('d-opening');
    expect(of('rebuttal', 'a')).toContain('a-opening');
    expect(of('rebuttal', 'a')).not.toContain('c-opening');
    // A closing answers the other side's rebuttals, with its own rebuttal.
    expect(of('closing', 'b')).toContain('a-rebuttal');
    expect(of('closing', 'b')).toContain('c-rebuttal');
    expect(of('closing', 'b')).toContain('b-rebuttal');
    expect(of('closing', 'b')).not.toContain('d-');
    // The speeches are rounds 0, 1 and 2 of the record.
    expect([0, 1, 2].map((round) => debate.turns.filter((t) => t.round === round && t.status === 'ok').length)).toEqual([4, 4, 4]);
    const motion = stepsOf(debate.steps).find((s) => s.kind === 'motion');
    expect(motion).toMatchObject({ for: ['a', 'c'], against: ['b', 'd'], assigned: 'alternated', framing: 'yes-no' });
    expect(seen.filter((r) => stageOf(r) === 'verdict')).toHaveLength(1);
  });

  it('asks the judge for a side from an enum, each strongest argument from that side, and records the winner\'s as decisive', async () => {
    const { seen, debate } = await run();
    const format = seen.find((r) => stageOf(r) === 'verdict')!.format as { properties: Record<string, { enum?: string[]; properties?: { speaker: { enum: string[] } } }>; required: string[] };
    expect(format.properties.winner!.enum).toEqual(['for', 'against']);
    expect(format.properties.strongestFor!.properties!.speaker.enum).toEqual(['a', 'c']);
    expect(format.properties.strongestAgainst!.properties!.speaker.enum).toEqual(['b', 'd']);
    const ruling = stepsOf(debate.steps).find((s) => s.kind === 'ruling');
    expect(ruling).toMatchObject({
      round: 2,
      error: null,
      ruling: { winner: 'against', margin: 0.7, decisive: { side: 'against', speaker: 'b', argument: 'b-best-against' }, losingBest: { side: 'for', speaker: 'a', argument: 'a-best-for' } },
    });
  });

  it("puts the losing side's best point in the synthesis prompt and shows it on the card, in Markdown, the viewer and the JSON document", async () => {
    const { seen, debate } = await run();
    const synthesis = prompt(seen.find((r) => stageOf(r) === 'synthesis')!);
    expect(synthesis).toContain("The losing side's best point (a, for): a-best-for");
    expect(synthesis).toContain('Keep the losing side\'s best point as a minority position, credited to a');
    const card = renderCard(debate).replace(/\s+/g, ' ');
    expect(card).toContain('VERDICT: AGAINST the motion, margin 70/100');
    expect(card).toContain("losing side's best point: a (for): a-best-for");
    expect(card).toContain('decisive argument: b (against): b-best-against');
    // Sides are assigned, so no stances are measured: the card must not report a majority nobody joined.
    expect(card).toContain('stances: none recorded');
    expect(card).not.toContain('joined the majority');
    const markdown = renderMarkdown(debate);
    expect(markdown).toContain("- **The losing side's best point:** a (for): a-best-for");
    expect(markdown).toContain('## Rebuttals: each speaker answers the other side\'s openings');
    expect(markdown).toMatch(/### b \(against\) \(`model-1:1b`\)/);
    expect(debatePage(debate, null)).toContain('<section id="oxford">');
    const doc = debateDocument(debate) as { protocol: { kind: string; steps: ProtocolStep[] } };
    expect(doc.protocol.kind).toBe('oxford');
    expect(doc.protocol.steps.map((s) => s.kind)).toEqual(expect.arrayContaining(['motion', 'ruling']));
    expect(confidenceOf(debate)).toMatchObject({ rule: 'oxford', level: 'medium', score: 0.7, restsOn: ['b', 'd'] });
  });

  it('names a side\'s best argument only among its speakers who gave a usable speech, and goes on without the one who gave none', async () => {
    const base = speeches();
    const script = { seen: base.seen, respond: (req: SimRequest): SimReply => (agentOf(req) === 'c' ? (base.seen.push(req), 'not json') : base.respond(req)) };
    const { seen, result, debate } = await run(oxfordPreset(), script);
    expect(result.status).toBe('completed');
    const format = seen.find((r) => stageOf(r) === 'verdict')!.format as { properties: Record<string, { properties?: { speaker: { enum: string[] } } }> };
    expect(format.properties.strongestFor!.properties!.speaker.enum).toEqual(['a']);
    expect(format.properties.strongestAgainst!.properties!.speaker.enum).toEqual(['b', 'd']);
    expect(debate.turns.filter((t) => t.agentId === 'c').map((t) => t.status)).toEqual(['invalid', 'invalid', 'invalid']);
  });

  it('frames an open question for both sides and warns that a motion would be sharper', async () => {
    const preset = oxfordPreset(['a', 'b']);
    const script = speeches();
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    store = openStore(':memory:');
    const warnings: string[] = [];
    const listen = (e: DebateEvent): void => void (e.type === 'warning' && warnings.push(e.message));
    await runDebate({ question: 'Which database should we use?', preset, host: sim.url, recorder: recorder(store), listeners: [listen] });
    expect(warnings.some((w) => w.startsWith('the question is open, not a yes/no motion'))).toBe(true);
    const speechPrompts = script.seen.filter((r) => phaseOf(r) !== null);
    expect(speechPrompts).toHaveLength(6);
    for (const r of speechPrompts) {
      expect(prompt(r)).toContain('Motion: This house would act on the most direct answer to: Which database should we use?');
      expect(prompt(r)).toContain('The for side argues for the most direct course of action the question names or implies');
    }
  });

  it('replays the phases, the motion and the verdict from the record alone', async () => {
    const { debate } = await run();
    const out = capture();
    const render = liveRenderer(out, { ...plainStyle, live: false });
    for (const e of storedEvents(debate)) render(e);
    render.close();
    const text = out.text.replace(/\s+/g, ' ');
    // The motion opens round 0: the live view prints it before the round's title, a replay after it.
    expect(text).toContain('motion: This house says yes to: Should we do A?');
    const order = ['Openings · each side', 'Rebuttals · each speaker', 'Closings · each speaker', 'verdict: AGAINST the motion, margin 70/100', "losing side's best point: a (for): a-best-for"].map((x) => text.indexOf(x));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((x, y) => x - y)).toEqual(order);
  });

  it('repairs a verdict whose side is not for or against, and reads the repaired one', async () => {
    const script = speeches((req, n) => (n === 1 ? JSON.stringify({ ...JSON.parse(verdict()), winner: 'pro' }) : verdict('for', 80)));
    const { seen, debate } = await run(oxfordPreset(), script);
    const asked = seen.filter((r) => stageOf(r) === 'verdict');
    expect(asked).toHaveLength(2);
    expect(prompt(asked[1]!)).toContain('That reply could not be used');
    const ruling = stepsOf(debate.steps).find((s) => s.kind === 'ruling');
    expect(ruling).toMatchObject({ ruling: { winner: 'for', decisive: { speaker: 'a' }, losingBest: { speaker: 'b' } } });
  });

  /** Runs a debate that is expected to fail, and returns its error, what the simulator saw and the stored record. */
  async function runFailing(preset: ReturnType<typeof oxfordPreset>, script: ReturnType<typeof speeches>) {
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    store = openStore(':memory:');
    const error = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store) }).catch((err: unknown) => err);
    return { error, seen: script.seen, debate: store.getDebate(store.listDebates()[0]!.id) };
  }

  it('fails the run (exit 5) on a verdict that stays unusable: no side is read from it, the speeches and the error are kept, no synthesis is asked', async () => {
    const script = speeches(() => JSON.stringify({ ...JSON.parse(verdict()), winner: 'For the motion' }));
    const { error, seen, debate } = await runFailing(oxfordPreset(), script);
    expect(error).toBeInstanceOf(DebateFailedError);
    expect((error as DebateFailedError).exitCode).toBe(5);
    expect((error as Error).message).toMatch(/failed: the judge gave no usable verdict on the motion: /);
    expect(debate.status).toBe('failed');
    // Not "the judge gave a verdict on the motion".
    expect(debate.exitReason).toBe('error');
    const ruling = stepsOf(debate.steps).find((s) => s.kind === 'ruling');
    expect(ruling).toMatchObject({ ruling: null });
    expect(ruling?.kind === 'ruling' && ruling.error).toBeTruthy();
    expect(seen.filter((r) => stageOf(r) === 'synthesis')).toEqual([]);
    expect([0, 1, 2].map((round) => debate.turns.filter((t) => t.round === round && t.status === 'ok').length)).toEqual([4, 4, 4]);
    const card = renderCard(debate).replace(/\s+/g, ' ');
    expect(card).toContain('VERDICT: no verdict');
    expect(card).not.toContain('the judge gave a verdict on the motion');
  });

  it('fails the run (exit 5) when the judge fails every call, saying so rather than that it gave a verdict', async () => {
    const script = speeches(() => ({ error: 'model runner has unexpectedly stopped', status: 500 }));
    const { error, debate } = await runFailing(oxfordPreset(), script);
    expect(error).toBeInstanceOf(DebateFailedError);
    expect((error as DebateFailedError).exitCode).toBe(5);
    expect((error as Error).message).toContain('the judge gave no usable verdict on the motion');
    expect(debate.status).toBe('failed');
    expect(debate.exitReason).not.toBe('verdict');
    expect(stepsOf(debate.steps).find((s) => s.kind === 'ruling')).toMatchObject({ ruling: null });
  });

  it('never lets the token budget skip the verdict: it is the run\'s result, like the synthesis', async () => {
    const base = oxfordPreset();
    // The speakers are high priority, so they all run past the smallest budget (1,000 tokens); the judge counts as normal.
    const preset = testPreset([], { agents: base.agents.map((a) => ({ ...a, priority: 'high' })), protocol: { kind: 'oxford', callTimeoutSeconds: 10, tokenBudget: 1000 } as never });
    const { seen, result, debate } = await run(preset);
    expect(result.status).toBe('completed');
    expect(result.exitReason).toBe('verdict');
    expect(seen.filter((r) => stageOf(r) === 'verdict')).toHaveLength(1);
    expect(stepsOf(debate.steps).find((s) => s.kind === 'ruling')).toMatchObject({ error: null, ruling: { winner: 'against' } });
  });

  it('fails the run before the rebuttals when a side gave no usable opening, naming the side and its speakers, and credits no argument to a silent speaker', async () => {
    // a and c speak for, b alone against; b's model fails every call.
    const base = speeches();
    const script = { seen: base.seen, respond: (req: SimRequest): SimReply => (agentOf(req) === 'b' ? (base.seen.push(req), { error: 'model runner has unexpectedly stopped', status: 500 }) : base.respond(req)) };
    const { error, seen, debate } = await runFailing(oxfordPreset(['a', 'b', 'c']), script);
    expect(error).toBeInstanceOf(DebateFailedError);
    expect((error as DebateFailedError).exitCode).toBe(5);
    expect((error as Error).message).toContain('failed: the against side (b) gave no usable opening speech');
    expect((error as Error).message).toMatch(/- b: .*model runner has unexpectedly stopped/);
    expect(debate.status).toBe('failed');
    expect(debate.exitReason).toBe('too_few_answers');
    expect(seen.filter((r) => phaseOf(r) === 'rebuttal' || phaseOf(r) === 'closing')).toEqual([]);
    expect(seen.filter((r) => stageOf(r) === 'verdict' || stageOf(r) === 'synthesis')).toEqual([]);
    expect(stepsOf(debate.steps).filter((s) => s.kind === 'ruling')).toEqual([]);
  });

  it('names every side that gave no usable opening, with all its speakers', async () => {
    // Four speakers, all failing: both sides are silent.
    const base = speeches();
    const script = { seen: base.seen, respond: (req: SimRequest): SimReply => (stageOf(req) === 'opening' ? (base.seen.push(req), 'not json') : base.respond(req)) };
    const { error } = await runFailing(oxfordPreset(), script);
    expect((error as Error).message).toContain('failed: the for side (a, c) and the against side (b, d) gave no usable opening speech');
  });

  it('still judges a side that opened but gave no usable closing, at LOW confidence, naming only its speakers who spoke', async () => {
    // b and d, the against side, open and rebut but give no usable closing.
    const base = speeches();
    // From its closing on, every call of b and d (its repair included) fails.
    const closing = new Set<string>();
    const respond = (req: SimRequest): SimReply => {
      const agent = agentOf(req) ?? '';
      if (['b', 'd'].includes(agent) && phaseOf(req) === 'closing') closing.add(agent);
      return closing.has(agent) ? (base.seen.push(req), { error: 'model runner has unexpectedly stopped', status: 500 }) : base.respond(req);
    };
    const script = { seen: base.seen, respond };
    const { seen, result, debate } = await run(oxfordPreset(), script);
    expect(result.status).toBe('completed');
    const format = seen.find((r) => stageOf(r) === 'verdict')!.format as { properties: Record<string, { properties?: { speaker: { enum: string[] } } }> };
    expect(format.properties.strongestAgainst!.properties!.speaker.enum).toEqual(['b', 'd']);
    expect(debate.turns.filter((t) => t.round === 2 && t.status === 'ok').map((t) => t.agentId)).toEqual(['a', 'c']);
    expect(confidenceOf(debate)).toMatchObject({ level: 'low' });
  });

  it('goes on from an interrupted rebuttal round without asking the openings or the finished rebuttals again', async () => {
    const preset = oxfordPreset();
    let stopped = false;
    const base = speeches();
    const script = {
      seen: base.seen,
      respond: (req: SimRequest): SimReply => {
        if (!stopped && phaseOf(req) === 'rebuttal' && agentOf(req) === 'd') {
          base.seen.push(req);
          return { content: reply.critique('d', 'd-rebuttal'), delayMs: 60_000 };
        }
        return base.respond(req);
      },
    };
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    store = openStore(':memory:');
    const controller = new AbortController();
    let done = 0;
    const stop = (e: DebateEvent): void => {
      if (e.type === 'call.finished' && e.call.stage === 'critique' && e.call.round === 1 && e.call.status === 'ok' && ++done === 3) controller.abort();
    };
    const error = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store), listeners: [stop], signal: controller.signal }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(InterruptedError);
    stopped = true;
    const stored = store.getDebate(store.listDebates()[0]!.id);
    expect(stored.status).toBe('interrupted');
    const plan = planResume(stored);
    expect(plan.from.map((r) => r.round)).toEqual([0]);
    expect([...plan.recorded.keys()].sort()).toEqual(['a', 'b', 'c']);

    const before = script.seen.length;
    const result = await resumeDebate(stored, { host: sim.url, recorder: recorder(store, { resume: plan.point }) }, plan);
    expect(result.status).toBe('completed');
    const asked = script.seen.slice(before);
    expect(asked.filter((r) => phaseOf(r) === 'opening')).toEqual([]);
    expect(asked.filter((r) => phaseOf(r) === 'rebuttal').map(agentOf)).toEqual(['d']);
    expect(asked.filter((r) => phaseOf(r) === 'closing').map(agentOf).sort()).toEqual(['a', 'b', 'c', 'd']);
    const after = store.getDebate(stored.id);
    expect(stepsOf(after.steps).filter((s) => s.kind === 'motion')).toHaveLength(1);
    expect(stepsOf(after.steps).find((s) => s.kind === 'ruling')).toMatchObject({ ruling: { winner: 'against' } });
    expect(store.verifyDebate(stored.id).state).toBe('sealed');
  });
});

describe('sides and motions', () => {
  it('keeps the sides agents name and puts the others on the smaller side, in panel order', () => {
    expect(assignSides([{ id: 'a' }, { id: 'b' }, { id: 'c' }])).toEqual({ for: ['a', 'c'], against: ['b'], assigned: 'alternated' });
    expect(assignSides([{ id: 'a', side: 'for' }, { id: 'b', side: 'for' }, { id: 'c' }, { id: 'd' }])).toEqual({ for: ['a', 'b'], against: ['c', 'd'], assigned: 'mixed' });
    expect(assignSides([{ id: 'a', side: 'against' }, { id: 'b', side: 'for' }])).toEqual({ for: ['b'], against: ['a'], assigned: 'preset' });
  });

  it('refuses a preset with an empty side, and a side on another protocol, naming the fix', () => {
    const agents = [
      { id: 'a', model: 'm:1b', side: 'for' },
      { id: 'b', model: 'm:1b', side: 'for' },
    ];
    const base = { name: 'x', judge: { model: 'j:1b' }, synthesizer: { model: 's:1b' } };
    expect(() => parsePreset({ ...base, agents, protocol: { kind: 'oxford' } })).toThrow(/the against side has no speaker: all 2 agents are `side: for`; set `side: against` on one of them/);
    expect(() => parsePreset({ ...base, agents, protocol: { kind: 'debate' } })).toThrow(/agents\.0\.side: sides are only used when protocol\.kind is oxford/);
    expect(() => parsePreset({ ...base, agents: agents.map(({ side: _, ...a }) => a), protocol: { kind: 'oxford' } })).not.toThrow();
  });

  it('puts a yes/no question, a statement and a "This house" motion as motions, and marks an open question', () => {
    expect(frameMotion('Should we migrate now?')).toEqual({ motion: 'This house says yes to: Should we migrate now?', framing: 'yes-no' });
    expect(frameMotion('This house would migrate now')).toEqual({ motion: 'This house would migrate now', framing: 'house' });
    expect(frameMotion('We should migrate now.')).toEqual({ motion: 'This house believes: We should migrate now.', framing: 'statement' });
    expect(frameMotion('Which database should we use?').framing).toBe('open');
  });

  it('rates a clear verdict MEDIUM at most and a close one LOW', () => {
    const sides = { for: ['a'], against: ['b'] };
    expect(oxfordConfidence({ ruling: { winner: 'for', margin: 0.9 }, sides, closed: ['a', 'b'], restsOn: ['a'], threshold: 0.85 }).level).toBe('medium');
    const close = oxfordConfidence({ ruling: { winner: 'for', margin: 0.55 }, sides, closed: ['a', 'b'], restsOn: ['a'], threshold: 0.85 });
    expect(close.level).toBe('low');
    expect(close.lowered).toEqual(['LOW: the judge called it close (margin 0.55 < 0.60).']);
    expect(oxfordConfidence({ ruling: { winner: 'for', margin: 0.9 }, sides, closed: ['a', 'b'], restsOn: ['b'], threshold: 0.85 }).level).toBe('low');
  });
});
