import { afterEach, describe, expect, it } from 'vitest';
import type { ProtocolStep } from '../../src/engine/protocol-events.js';
import { protocolFor } from '../../src/engine/protocols/index.js';
import { recorder } from '../../src/engine/recorder.js';
import { Runner } from '../../src/engine/runner.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { renderCard } from '../../src/render/card.js';
import { transcriptOf } from '../../src/engine/resynthesize.js';
import { confidenceOf } from '../../src/render/confidence.js';
import { panelOf } from '../../src/render/panel.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import { storedEvents } from '../../src/render/replay.js';
import { debatePage } from '../../src/serve/debate-page.js';
import { type SimHandle, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { agentOf, judgedIdsOf, judgedRoundOf, reply, roundOf, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

let sim: SimHandle | null = null;
let store: Store | null = null;

afterEach(async () => {
  store?.close();
  store = null;
  await sim?.close();
  sim = null;
});

// The judge's stances by round: c holds out for "migrate" until round 2, when it joins "stay".
const STANCES: Record<number, { id: string; summary: string; agents: string[] }[]> = {
  0: [{ id: 'S1', summary: 'stay', agents: ['a', 'b'] }, { id: 'S2', summary: 'migrate', agents: ['c'] }],
  1: [{ id: 'S1', summary: 'stay', agents: ['b'] }, { id: 'S2', summary: 'migrate', agents: ['c'] }],
  2: [{ id: 'S1', summary: 'stay', agents: ['a', 'c'] }],
  3: [{ id: 'S1', summary: 'stay', agents: ['a', 'b', 'c'] }],
};

async function run(advocate: boolean) {
  const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 3, convergenceThreshold: 0.85, callTimeoutSeconds: 10, advocate } as never });
  const script = scriptedResponder([0.2], (req: SimRequest) => {
    const agent = agentOf(req)!;
    if (stageOf(req) === 'opening') return reply.opening(agent, `${agent}-r0`);
    if (stageOf(req) === 'critique') return reply.critique(agent, `${agent}-r${roundOf(req)}`);
    if (stageOf(req) === 'judge') {
      const ids = judgedIdsOf(req);
      const stances = STANCES[judgedRoundOf(req)]!.map((s) => ({ ...s, agents: s.agents.filter((x) => ids.includes(x)) })).filter((s) => s.agents.length);
      return JSON.stringify({ ...JSON.parse(reply.judge(0.2)), stances });
    }
    // The synthesizer names every agent, the last round's advocate too.
    if (stageOf(req) === 'synthesis') return reply.synthesis([], ['a', 'b', 'c']);
    return undefined;
  });
  sim = await startSimulator({ models: simModels(preset), respond: script.respond });
  store = openStore(':memory:');
  const result = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store) });
  return { result, seen: script.seen, debate: store.getDebate(result.id) };
}

const prompt = (req: SimRequest): string => req.messages.at(-1)?.content ?? '';
const advocateSteps = (steps: { step: ProtocolStep }[] | undefined) =>
  (steps ?? []).map((s) => s.step).filter((s): s is Extract<ProtocolStep, { kind: 'advocate' }> => s.kind === 'advocate');

describe("debate with a devil's advocate", () => {
  it('briefs a different agent each critique round, in panel order, and no one else', async () => {
    const { seen, result } = await run(true);
    expect(result.status).toBe('completed');
    const critiques = seen.filter((r) => stageOf(r) === 'critique');
    expect(critiques).toHaveLength(9);
    const briefed = critiques.filter((r) => prompt(r).includes("devil's advocate")).map((r) => [roundOf(r), agentOf(r)]);
    expect(briefed.sort()).toEqual([[1, 'a'], [2, 'b'], [3, 'c']]);
    // The brief names the majority of the round before: "stay" after round 0.
    expect(prompt(critiques.find((r) => roundOf(r) === 1 && agentOf(r) === 'a')!)).toContain('The majority of the panel holds: stay');
    // Round 1's stances tie one to one: the next advocate is told there is no clear majority.
    expect(prompt(critiques.find((r) => roundOf(r) === 2 && agentOf(r) === 'b')!)).toContain('no clear majority');
  });

  it("leaves the advocate's turn out of the judge's convergence score", async () => {
    const { seen } = await run(true);
    const judged = seen.filter((r) => stageOf(r) === 'judge').map((r) => [judgedRoundOf(r), judgedIdsOf(r)]);
    expect(judged).toEqual([[0, ['a', 'b', 'c']], [1, ['b', 'c']], [2, ['a', 'c']], [3, ['a', 'b']]]);
    for (const r of seen.filter((x) => stageOf(x) === 'judge' && judgedRoundOf(x) > 0)) {
      const advocate = ['a', 'b', 'c'][judgedRoundOf(r) - 1]!;
      expect(prompt(r)).not.toContain(`${advocate}-r${judgedRoundOf(r)}`);
    }
  });

  it('records what each advocate raised and who moved after it, and the card says so', async () => {
    const { debate } = await run(true);
    const steps = advocateSteps(debate.steps);
    expect(steps.map((s) => [s.round, s.agentId, s.against, s.raised])).toEqual([
      [1, 'a', 'stay', 'a-r1'],
      // Round 1's stances tie one to one: there was no majority to argue against.
      [2, 'b', null, 'b-r2'],
      [3, 'c', 'stay', 'c-r3'],
    ]);
    // c left "migrate" for "stay" in round 2, after a's advocacy; no round followed c's.
    expect(steps[0]!.moved).toEqual(['c']);
    expect(steps[2]!.moved).toBeNull();
    const card = renderCard(debate).replace(/\s+/g, ' ');
    expect(card).toContain("DEVIL'S ADVOCATE");
    expect(card).toContain('moved after it: c');
    expect(card).toContain('no round followed to show an effect');
    const markdown = renderMarkdown(debate);
    expect(markdown).toContain("## Devil's advocate");
    expect(markdown).toContain('- Round 1, a, against "stay": a-r1 (moved after it: c)');
    const viewer = debatePage(debate, null);
    expect(viewer).toContain('<section id="advocate">');
    expect(viewer).toContain('<td>moved after it: c</td>');
    // Who moved after an advocate is read from the stances as every view reads them, not from the list an older engine wrote.
    const older = { ...debate, steps: debate.steps!.map((s) => (s.step.kind === 'advocate' && s.step.round === 1 ? { ...s, step: { ...s.step, moved: ['a', 'c'] } } : s)) };
    expect(renderCard(older).replace(/\s+/g, ' ')).toContain('a-r1 (moved after it: c)');
    expect(renderMarkdown(older)).toContain('- Round 1, a, against "stay": a-r1 (moved after it: c)');
    expect(debatePage(older, null)).toContain('<td>moved after it: c</td>');
    const replayed = storedEvents(older).flatMap((e) => (e.type === 'protocol.step' && e.step.kind === 'advocate' && e.step.round === 1 ? [e.step.moved] : []));
    expect(replayed).toEqual([['c']]);
  });

  it("marks each advocate's turn as advocacy for the synthesizer, and counts neither the last advocate as support nor its absence as a holdout", async () => {
    const { seen, debate } = await run(true);
    const synthesis = prompt(seen.find((r) => stageOf(r) === 'synthesis')!);
    const marked = [...synthesis.matchAll(/^\[(\w+)\][^\n]*devil's advocate this round/gm)].map((m) => m[1]);
    expect(marked).toEqual(['a', 'b', 'c']);
    // Each mark sits in its own round's section: c's in round 3, not on its earlier turns.
    expect(synthesis.split('## Round 3')[1]).toMatch(/^\[c\][^\n]*devil's advocate this round/m);
    expect(synthesis.split('## Round 3')[0]).not.toMatch(/^\[c\][^\n]*devil's advocate/m);
    // The synthesizer named a, b and c; c's last turn argued by assignment, so support is a and b of the two views left.
    const confidence = confidenceOf(debate)!;
    expect([confidence.restsOn, confidence.of]).toEqual([['a', 'b'], 2]);
    expect(confidence.basis).toContain("c's last turn was advocacy");
    // c left "migrate" for "stay" in round 2 and argued as the advocate in round 3: it joined the majority.
    const figures = panelOf(debate)!.figures!;
    expect([figures.outsideMajority, figures.joinedMajority, figures.majorityAdoption]).toEqual([['c'], ['c'], 1]);
    // `conclave synthesize` reads the stored rounds with the same marks.
    expect(transcriptOf(debate).map((r) => [r.round, r.advocate])).toEqual([[0, null], [1, 'a'], [2, 'b'], [3, 'c']]);
  });

  it('still counts every final position in a debate without an advocate', async () => {
    const { seen, debate } = await run(false);
    expect(prompt(seen.find((r) => stageOf(r) === 'synthesis')!)).not.toContain("devil's advocate");
    expect(confidenceOf(debate)!.of).toBe(3);
  });

  it('briefs nobody and scores every agent when the preset does not ask for an advocate', async () => {
    const { seen, debate } = await run(false);
    expect(seen.some((r) => prompt(r).includes("devil's advocate"))).toBe(false);
    expect(seen.filter((r) => stageOf(r) === 'judge').every((r) => judgedIdsOf(r).length === 3)).toBe(true);
    expect(advocateSteps(debate.steps)).toEqual([]);
  });

  it('briefs the advocate of the round a resumed debate goes on with, by its round number', async () => {
    const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 10, advocate: true } as never });
    const script = scriptedResponder([0.2]);
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    store = openStore(':memory:');
    const turn = (round: number, id: string) => ({ round, agentId: id, model: `model-${['a', 'b', 'c'].indexOf(id)}:1b`, status: 'ok' as const, position: `${id} stored r${round}`, confidence: 0.5, opening: round === 0 ? { position: `${id} stored r0`, reasoning: 'kept', confidence: 0.5 } : null, critique: null, error: null });
    const debate = protocolFor('debate');
    const runner = await Runner.start({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store) }, 'resumed-advocate', { ...debate.shape(preset, []), synthesizer: null });
    const stored = [0, 1].map((round) => ({ round, turns: ['a', 'b', 'c'].map((id) => turn(round, id)), judgement: null }));
    runner.complete(await debate.run(runner, stored));
    const briefed = script.seen.filter((r) => stageOf(r) === 'critique' && prompt(r).includes("devil's advocate")).map((r) => [roundOf(r), agentOf(r)]);
    expect(briefed).toEqual([[2, 'b']]);
    // The stored round 1 is judged again without its advocate, a.
    expect(script.seen.filter((r) => stageOf(r) === 'judge').map((r) => [judgedRoundOf(r), judgedIdsOf(r)])).toEqual([[1, ['b', 'c']], [2, ['a', 'c']]]);
  });
});
