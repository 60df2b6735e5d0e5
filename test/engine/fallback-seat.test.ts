import { afterEach, describe, expect, it } from 'vitest';
import type { DebateEvent } from '../../src/engine/events.js';
import { recorder } from '../../src/engine/recorder.js';
import { planResume, resumeDebate } from '../../src/engine/resume.js';
import { InterruptedError } from '../../src/errors.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { confidenceOf } from '../../src/render/confidence.js';
import { renderCard } from '../../src/render/card.js';
import { debateDocument } from '../../src/render/document.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import { debatePage } from '../../src/serve/debate-page.js';
import { type SimHandle, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { agentOf, reply, roundOf, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

let sim: SimHandle | null = null;
let store: Store | null = null;

afterEach(async () => {
  store?.close();
  store = null;
  await sim?.close();
  sim = null;
});

const text = (req: SimRequest): string => req.messages.map((m) => m.content).join('\n');
const MARK = (id: string) => `[Fallback analysis by the orchestrator, not ${id}'s own: ${id}'s answer failed.]`;

/**
 * alpha, beta, gamma over two critique rounds. beta's own answer in round 0 is rejected (too thin, cut off),
 * gamma's host crashes on its round-2 critique (HTTP 500, every resend); the synthesizer's model answers
 * any fallback with a marked text of its own.
 */
function failingPanel(kind: 'debate' | 'parallel' = 'debate') {
  const preset = testPreset(['alpha', 'beta', 'gamma'], { protocol: { kind, maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 10 } as never, ...(kind === 'debate' ? { tensions: {} } : {}) });
  const script = scriptedResponder([0.3, 0.5, 0.9], (req) => {
    const agent = agentOf(req)!;
    const stage = stageOf(req);
    if (req.model === 'synth:1b' && stage === 'opening') return reply.opening(agent, `orchestrator-for-${agent}-r0`);
    if (req.model === 'synth:1b' && stage === 'critique') return reply.critique(agent, `orchestrator-for-${agent}-r${roundOf(req)}`);
    if (stage === 'opening' && agent === 'beta') return reply.rejected('Maybe');
    if (stage === 'critique' && agent === 'gamma' && roundOf(req) === 2) return { error: 'llama runner process has terminated: exit status 2', status: 500 };
    if (stage === 'critique') return reply.critique(agent, `${agent}-own-r${roundOf(req)}`);
    if (stage === 'synthesis') return reply.synthesis([], ['alpha', 'beta', 'gamma']);
    return undefined;
  });
  return { preset, script };
}

async function run(kind: 'debate' | 'parallel' = 'debate') {
  const { preset, script } = failingPanel(kind);
  sim = await startSimulator({ models: simModels(preset), respond: script.respond });
  store = openStore(':memory:');
  const result = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store), retryDelaysMs: [5, 5] });
  return { result, seen: script.seen, debate: store.getDebate(result.id) };
}

describe('a failed seat in a debate gets the orchestrator\'s fallback analysis', () => {
  it('fills the seat with a call to the synthesizer model, and peers, the judge and the synthesizer read it marked as a fallback', async () => {
    const { result, debate } = await run();
    expect(result.status).toBe('completed');
    const fallbackCalls = debate.calls.filter((c) => c.stage === 'fallback');
    expect(fallbackCalls.map((c) => [c.round, c.agentId, c.model])).toEqual([
      [0, 'beta', 'synth:1b'],
      [2, 'gamma', 'synth:1b'],
    ]);
    // The orchestrator is told whose seat, and why it failed.
    expect(fallbackCalls[0]!.messages.at(-1)!.content).toContain("beta's answer failed (");
    expect(fallbackCalls[1]!.messages.at(-1)!.content).toMatch(/gamma's turn in round 2 failed \(.*exit status 2/);
    // Read back from the record: round 1's critiques and round 0's judge saw beta's seat as a fallback, never as beta's.
    const prompts = (stage: string, round: number) => debate.calls.filter((c) => c.stage === stage && c.round === round).map((c) => c.messages.map((m) => m.content).join('\n'));
    for (const agent of ['alpha', 'gamma']) {
      const own = debate.calls.find((c) => c.stage === 'critique' && c.round === 1 && c.agentId === agent)!;
      expect(own.messages.map((m) => m.content).join('\n')).toContain(`${MARK('beta')} orchestrator-for-beta-r0`);
    }
    expect(prompts('judge', 0)[0]).toContain(`${MARK('beta')} orchestrator-for-beta-r0`);
    // beta was asked again in round 1; its own answer replaced the fallback for round 2's readers.
    expect(debate.turns.find((t) => t.round === 1 && t.agentId === 'beta')).toMatchObject({ status: 'ok', model: 'model-1:1b', position: 'beta-own-r1' });
    for (const p of prompts('critique', 2)) expect(p).not.toContain(MARK('beta'));
    // gamma's round-2 seat is a fallback: the synthesizer reads it marked.
    expect(prompts('synthesis', 2)[0]).toContain(`${MARK('gamma')} orchestrator-for-gamma-r2`);
    // The clash map on round 0 reads the agents' own answers only: no claims are asked of beta's fallback.
    const claimed = debate.calls.filter((c) => c.stage === 'claims' && c.round === 0).map((c) => c.messages.map((m) => m.content).join('\n'));
    expect(claimed.length).toBeGreaterThan(0);
    for (const p of claimed) expect(p).not.toContain('orchestrator-for-beta-r0');
    // The stored turns stay the agents' own: failed where they failed.
    expect(debate.turns.find((t) => t.round === 0 && t.agentId === 'beta')!.status).not.toBe('ok');
    expect(debate.turns.find((t) => t.round === 2 && t.agentId === 'gamma')!.status).toBe('failed');
  });

  it('records each fallback as a sealed step, shows it in the card, Markdown, the JSON document and the viewer, and counts it half in the confidence', async () => {
    const { debate } = await run();
    const doc = debateDocument(debate) as unknown as { fallbacks: { round: number; agentId: string; model: string; status: string; position: string }[]; confidence: { level: string; basis: string[]; lowered: string[]; restsOn: string[] } };
    expect(doc.fallbacks.map((f) => [f.round, f.agentId, f.model, f.status, f.position])).toEqual([
      [0, 'beta', 'synth:1b', 'ok', 'orchestrator-for-beta-r0'],
      [2, 'gamma', 'synth:1b', 'ok', 'orchestrator-for-gamma-r2'],
    ]);
    // The judge's 0.90 and a synthesis resting on all three would be HIGH; gamma's final seat is a fallback, so MEDIUM.
    const confidence = confidenceOf(debate)!;
    expect(confidence.level).toBe('medium');
    expect(confidence.restsOn).toEqual(['alpha', 'beta', 'gamma']);
    expect(confidence.basis).toContain('1 by fallback');
    expect(confidence.lowered.join(' ')).toContain("gamma is the orchestrator's fallback analysis, not the agent's own");
    expect(doc.confidence.level).toBe('medium');
    const card = renderCard(debate).replace(/\s+/g, ' ');
    expect(card).toContain("FALLBACK ANALYSES (by the orchestrator, in the seats whose turn failed; not the agents' own)");
    expect(card).toContain("round 2, gamma failed (");
    expect(card).toContain("fallback analysis by synth:1b, not gamma's own (confidence 0.70): orchestrator-for-gamma-r2");
    expect(card).toContain('CONFIDENCE: MEDIUM (judge 0.90 ≥ 0.85, rests on 3/3 agents, 1 by fallback)');
    const markdown = renderMarkdown(debate);
    expect(markdown).toContain('## Fallback analyses');
    expect(markdown).toContain("fallback analysis by synth:1b, not beta's own (confidence 0.60): orchestrator-for-beta-r0");
    const viewer = debatePage(debate, null);
    expect(viewer).toContain('<section id="fallbacks">');
    expect(viewer).toContain('<td>orchestrator-for-gamma-r2</td>');
  });

  it('gives a parallel run\'s failed seat a fallback the synthesizer reads as one', async () => {
    const { result, debate } = await run('parallel');
    expect(result.status).toBe('completed');
    expect(debate.calls.filter((c) => c.stage === 'fallback').map((c) => c.agentId)).toEqual(['beta']);
    const synthesis = debate.calls.find((c) => c.stage === 'synthesis')!;
    expect(synthesis.messages.map((m) => m.content).join('\n')).toContain(`${MARK('beta')} orchestrator-for-beta-r0`);
    expect(debate.exitDetail).toBe('2 of 3 agents answered, 1 seat by fallback; no critique rounds in this protocol');
  });

  it('reads a recorded fallback back into its seat on resume, so the resumed round asks what the stopped one asked', async () => {
    const preset = testPreset(['alpha', 'beta', 'gamma'], { protocol: { maxRounds: 1, convergenceThreshold: 0.95, callTimeoutSeconds: 30 } });
    let stopped = false;
    const script = scriptedResponder([0.3], (req) => {
      const agent = agentOf(req)!;
      if (req.model === 'synth:1b' && stageOf(req) === 'opening') return reply.opening(agent, `orchestrator-for-${agent}-r0`);
      if (stageOf(req) === 'opening' && agent === 'beta') return reply.rejected('Maybe');
      if (!stopped && stageOf(req) === 'critique' && agent === 'gamma') return { content: reply.critique(agent), delayMs: 60_000 };
      return undefined;
    });
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    store = openStore(':memory:');
    const controller = new AbortController();
    let done = 0;
    const stopAfterTwo = (e: DebateEvent): void => {
      if (e.type === 'call.finished' && e.call.stage === 'critique' && e.call.status === 'ok' && ++done === 2) controller.abort();
    };
    const error = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store), listeners: [stopAfterTwo], signal: controller.signal }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(InterruptedError);
    stopped = true;
    const stored = store.getDebate(store.listDebates()[0]!.id);
    const plan = planResume(stored);
    expect(plan.from[0]!.turns.find((t) => t.agentId === 'beta')).toMatchObject({ status: 'ok', model: 'synth:1b', position: `${MARK('beta')} orchestrator-for-beta-r0` });
    const before = script.seen.length;
    const result = await resumeDebate(stored, { host: sim.url, recorder: recorder(store, { resume: plan.point }) }, plan);
    expect(result.status).toBe('completed');
    // alpha's and beta's recorded critiques asked exactly what the resumed round would ask: reused, not asked again.
    const asked = script.seen.slice(before).filter((q) => stageOf(q) === 'critique');
    expect(asked.map(agentOf)).toEqual(['gamma']);
    expect(text(asked[0]!)).toContain(`${MARK('beta')} orchestrator-for-beta-r0`);
    expect(store.verifyDebate(stored.id).state).toBe('sealed');
  });
});
