import { afterEach, describe, expect, it } from 'vitest';
import type { ProtocolStep } from '../../src/engine/protocol-events.js';
import { builtinPresetNames, loadPreset, parsePreset } from '../../src/config/load-preset.js';
import { demoResponder, simModelsFor } from '../../src/sim/demo.js';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { antiConformityBrief } from '../../src/protocol/anti-conformity.js';
import { renderCard } from '../../src/render/card.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import { debatePage } from '../../src/serve/debate-page.js';
import { type SimHandle, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { judgedIdsOf, judgedRoundOf, reply, roundOf, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

let sim: SimHandle | null = null;
let store: Store | null = null;

afterEach(async () => {
  store?.close();
  store = null;
  await sim?.close();
  sim = null;
});

// S1 is held by two agents for two rounds; in round 2 b moves to S2, which ends the majority.
// Free-MAD: S1 40 + 20 + 6.7 − 8.3 = 58.3, S2 20 + 10 + 10 + 6.7 = 46.7: the trajectory keeps S1.
const STANCES: Record<number, { id: string; summary: string; agents: string[] }[]> = {
  0: [{ id: 'S1', summary: 'stay', agents: ['a', 'b'] }, { id: 'S2', summary: 'migrate', agents: ['c'] }],
  1: [{ id: 'S1', summary: 'stay', agents: ['a', 'b'] }, { id: 'S2', summary: 'migrate', agents: ['c'] }],
  2: [{ id: 'S1', summary: 'stay', agents: ['a'] }, { id: 'S2', summary: 'migrate', agents: ['b', 'c'] }],
};

async function run(protocol: Record<string, unknown>, judgeScores = [0.2]) {
  const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 10, ...protocol } as never });
  const script = scriptedResponder(judgeScores, (req: SimRequest) => {
    if (stageOf(req) !== 'judge') return undefined;
    const ids = judgedIdsOf(req);
    const round = judgedRoundOf(req);
    const stances = (STANCES[round] ?? STANCES[2]!).map((s) => ({ ...s, agents: s.agents.filter((x) => ids.includes(x)) })).filter((s) => s.agents.length);
    return JSON.stringify({ ...JSON.parse(reply.judge(judgeScores[Math.min(round, judgeScores.length - 1)]!)), stances });
  });
  sim = await startSimulator({ models: simModels(preset), respond: script.respond });
  store = openStore(':memory:');
  const result = await runDebate({ question: 'Should we migrate?', preset, host: sim.url, recorder: recorder(store) });
  return { result, seen: script.seen, debate: store.getDebate(result.id) };
}

const prompt = (req: SimRequest): string => req.messages.map((m) => m.content).join('\n');
const BRIEF_MARK = 'your job is not to agree with the majority';
const trajectorySteps = (steps: { step: ProtocolStep }[] | undefined) =>
  (steps ?? []).map((s) => s.step).filter((s): s is Extract<ProtocolStep, { kind: 'trajectory' }> => s.kind === 'trajectory');

describe('anti-conformity critique', () => {
  it('gives every agent the anti-conformity brief in critique rounds, and in no other call', async () => {
    expect(antiConformityBrief()).toContain(BRIEF_MARK);
    const { seen, result } = await run({ critique: 'anti-conformity' });
    expect(result.status).toBe('completed');
    const critiques = seen.filter((r) => stageOf(r) === 'critique');
    expect(critiques).toHaveLength(6);
    for (const r of critiques) {
      expect(prompt(r)).toContain(BRIEF_MARK);
      expect(prompt(r)).toContain('name the weakest point of their position');
    }
    expect(seen.filter((r) => stageOf(r) !== 'critique').some((r) => prompt(r).includes(BRIEF_MARK))).toBe(false);
  });

  it('is not given with the standard critique', async () => {
    const { seen } = await run({});
    expect(seen.filter((r) => stageOf(r) === 'critique')).toHaveLength(6);
    expect(seen.some((r) => prompt(r).includes(BRIEF_MARK))).toBe(false);
  });
});

describe('decision by trajectory', () => {
  it('decides for the Free-MAD winner over the final majority, tells the synthesizer, and records and shows it', async () => {
    const { seen, debate } = await run({ decision: 'trajectory' });
    const [step, ...more] = trajectorySteps(debate.steps);
    expect(more).toEqual([]);
    expect(step!.finalMajority).toBe('S2');
    expect(step!.stance).toBe('S1');
    expect(step!.scores.map((s) => [s.stance, s.score])).toEqual([['S1', 58.3], ['S2', 46.7]]);
    const synthesis = seen.filter((r) => stageOf(r) === 'synthesis');
    expect(synthesis).toHaveLength(1);
    expect(prompt(synthesis[0]!)).toContain('The trajectory chose S1: stay.');
    expect(prompt(synthesis[0]!)).toContain("It is not the final round's majority (S2)");
    const card = renderCard(debate).replace(/\s+/g, ' ');
    expect(card).toContain('DECISION BY TRAJECTORY');
    expect(card).toContain('chosen: S1 "stay" (score 58.3; the final majority was S2)');
    expect(card).toContain('decision: trajectory');
    expect(renderMarkdown(debate)).toContain('- Chosen: S1 "stay" (score 58.3; the final majority was S2)');
    const viewer = debatePage(debate, null);
    expect(viewer).toContain('<section id="trajectory">');
    expect(viewer).toContain('<td>S1</td><td>stay</td><td class="num">58.3</td>');
  });

  it('leaves the synthesis alone without the setting', async () => {
    const { seen, debate } = await run({});
    expect(trajectorySteps(debate.steps)).toEqual([]);
    expect(prompt(seen.find((r) => stageOf(r) === 'synthesis')!)).not.toContain('trajectory');
    expect(renderCard(debate)).not.toContain('TRAJECTORY');
  });
});

describe('early exit', () => {
  it('stops when the judge scores convergence, by default', async () => {
    const { result, seen } = await run({ maxRounds: 3 }, [0.2, 0.95]);
    expect(result.exitReason).toBe('converged');
    expect(Math.max(...seen.filter((r) => stageOf(r) === 'critique').map((r) => roundOf(r)))).toBe(1);
  });

  it('runs every critique round to maxRounds when switched off', async () => {
    const { result, seen, debate } = await run({ maxRounds: 3, earlyExit: false }, [0.2, 0.95]);
    expect(result.exitReason).toBe('max_rounds');
    expect(seen.filter((r) => stageOf(r) === 'critique')).toHaveLength(9);
    expect(debate.rounds.map((r) => r.round)).toEqual([0, 1, 2, 3]);
    expect(renderCard(debate).replace(/\s+/g, ' ')).toContain('early exit off (all 3 critique rounds run)');
  });
});


describe('the built-in anti-conformity preset', () => {
  it('completes on the demo panel with every critique round held and the trajectory deciding', async () => {
    const presets = builtinPresetNames().map((n) => loadPreset(n).preset);
    const { preset } = loadPreset('anti-conformity');
    expect(preset.protocol).toMatchObject({ critique: 'anti-conformity', decision: 'trajectory', earlyExit: false });
    sim = await startSimulator({ models: simModelsFor(presets), respond: demoResponder(presets) });
    store = openStore(':memory:');
    const result = await runDebate({ question: 'Should we migrate this tool from SQLite to Postgres now?', preset, host: sim.url, recorder: recorder(store) });
    expect(result.status).toBe('completed');
    expect(result.exitReason).toBe('max_rounds');
    const debate = store.getDebate(result.id);
    expect(debate.rounds.map((r) => r.round)).toEqual([0, 1, 2, 3]);
    // The demo judge scores convergence above the threshold before the last round: early exit would have stopped there.
    expect(debate.rounds.slice(0, -1).some((r) => (r.convergence ?? 0) >= preset.protocol.convergenceThreshold)).toBe(true);
    expect(trajectorySteps(debate.steps)[0]?.stance).not.toBeNull();
    expect(debate.preset.protocol).toMatchObject({ critique: 'anti-conformity', decision: 'trajectory', earlyExit: false });
  });
});

describe('the settings outside a debate', () => {
  it('are refused by name, with the fix', () => {
    const base = { name: 'p', agents: [{ id: 'a', model: 'm1' }, { id: 'b', model: 'm2' }], judge: { model: 'j' }, synthesizer: { model: 's' } };
    expect(() => parsePreset({ ...base, protocol: { kind: 'parallel', critique: 'anti-conformity', earlyExit: false } })).toThrow(
      /protocol\.critique: only used when protocol\.kind is debate \(it is parallel\); remove it or set protocol\.kind: debate[\s\S]*protocol\.earlyExit: only used/,
    );
    expect(() => parsePreset({ ...base, protocol: { kind: 'tournament', decision: 'trajectory' } })).toThrow(/protocol\.decision: only used when protocol\.kind is debate/);
    expect(parsePreset({ ...base, protocol: { kind: 'auto', decision: 'trajectory' } }).preset.protocol.decision).toBe('trajectory');
  });
});
