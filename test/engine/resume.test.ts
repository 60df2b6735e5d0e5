import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { DebateEvent } from '../../src/engine/events.js';
import { recorder } from '../../src/engine/recorder.js';
import { resynthesize } from '../../src/engine/resynthesize.js';
import { planResume, resumeDebate } from '../../src/engine/resume.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { InterruptedError } from '../../src/errors.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import type { Attachment } from '../../src/protocol/material.js';
import { agentOf, isRetry, reply, roundOf, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

let sim: SimHandle | null = null;
let store: Store | null = null;

afterEach(async () => {
  store?.close();
  store = null;
  await sim?.close();
  sim = null;
});

/**
 * A debate stopped (as Ctrl-C does) in round 1 once a's and b's critiques are recorded, while
 * c's critique is still being generated. Returns what a resume needs.
 */
async function stoppedInRoundOne(attachments: Attachment[] = [], critiqueOf: (agent: string) => string = (agent) => reply.critique(agent)) {
  const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.95, callTimeoutSeconds: 30 } });
  let stopped = false;
  const script = scriptedResponder([0.3], (req) => {
    if (stageOf(req) !== 'critique' || roundOf(req) !== 1) return undefined;
    const agent = agentOf(req) ?? 'x';
    if (!stopped && agent === 'c') return { content: reply.critique(agent), delayMs: 60_000 };
    return agent === 'c' ? reply.critique(agent, `${agent} now says A (request ${req.index})`) : critiqueOf(agent);
  });
  sim = await startSimulator({ models: simModels(preset), respond: script.respond });
  store = openStore(':memory:');
  const controller = new AbortController();
  let done = 0;
  const stopAfterTwo = (e: DebateEvent): void => {
    if (e.type === 'call.finished' && e.call.stage === 'critique' && e.call.round === 1 && e.call.status === 'ok' && ++done === 2) controller.abort();
  };
  const error = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store), listeners: [stopAfterTwo], signal: controller.signal, attachments }).catch((err: unknown) => err);
  expect(error).toBeInstanceOf(InterruptedError);
  stopped = true;
  const [summary] = store.listDebates();
  return { stored: store.getDebate(summary!.id), seen: script.seen, sim, store };
}

describe('resuming a debate stopped inside a round', () => {
  it('treats the round as incomplete when a call was cut off, and reuses the calls of it that finished', async () => {
    const { stored, seen, sim, store } = await stoppedInRoundOne();
    expect(stored.status).toBe('interrupted');
    // c's turn is recorded as failed, cut off by the stop: it is no answer, so round 1 is asked again.
    expect(stored.calls.find((c) => c.stage === 'critique' && c.agentId === 'c')?.status).toBe('aborted');
    const plan = planResume(stored);
    expect(plan.point.fromRound).toBe(0);
    expect([...plan.recorded.keys()].sort()).toEqual(['a', 'b']);

    const before = seen.length;
    const result = await resumeDebate(stored, { host: sim.url, recorder: recorder(store, { resume: plan.point }) }, plan);
    expect(result.status).toBe('completed');
    const asked = seen.slice(before);
    expect(asked.filter((q) => stageOf(q) === 'critique' && roundOf(q) === 1).map(agentOf)).toEqual(['c']);
    const after = store.getDebate(stored.id);
    expect(after.turns.filter((t) => t.round === 1).map((t) => [t.agentId, t.status])).toEqual([['a', 'ok'], ['b', 'ok'], ['c', 'ok']]);
    expect(after.resumptions?.[0]?.reused.map((t) => t.agentId)).toEqual(['a', 'b']);
    expect(store.verifyDebate(stored.id).state).toBe('sealed');
  });

  it('reuses finished calls whose prompts carried the attached material, and rates the reused turns again', async () => {
    const content = 'Marker HERON: the cutover window is twenty minutes.';
    const note: Attachment = { name: 'note.md', content, bytes: content.length, sha256: createHash('sha256').update(content).digest('hex') };
    const { stored, seen, sim, store } = await stoppedInRoundOne([note]);
    const plan = planResume(stored);
    expect([...plan.recorded.keys()].sort()).toEqual(['a', 'b']);
    const before = seen.length;
    const result = await resumeDebate(stored, { host: sim.url, recorder: recorder(store, { resume: plan.point }) }, plan);
    expect(result.status).toBe('completed');
    const asked = seen.slice(before).filter((q) => stageOf(q) === 'critique' && roundOf(q) === 1);
    expect(asked.map(agentOf)).toEqual(['c']);
    expect(asked[0]!.messages.map((m) => m.content).join('\n')).toContain('Marker HERON');
    const after = store.getDebate(stored.id);
    expect(after.resumptions?.[0]?.reused.map((t) => t.agentId)).toEqual(['a', 'b']);
    const rated = (after.quality ?? []).filter((q) => q.stage === 'critique' && q.round === 1 && q.try === 0).map((q) => q.agentId).sort();
    expect(rated).toEqual(['a', 'b', 'c']);
  });

  it('asks again a finished call whose reply the quality check would retry', async () => {
    // b's critique is thin (one word, names no peer): rated RETRY, so the resumed run asks b again rather than reuse it.
    const thin = (agent: string) => (agent === 'b' ? JSON.stringify({ agreements: [], disagreements: [], updatedPosition: 'fine', confidence: 10 }) : reply.critique(agent));
    const { stored, seen, sim, store } = await stoppedInRoundOne([], thin);
    const plan = planResume(stored);
    const before = seen.length;
    const result = await resumeDebate(stored, { host: sim.url, recorder: recorder(store, { resume: plan.point }) }, plan);
    expect(result.status).toBe('completed');
    const askedAgain = seen.slice(before).filter((q) => (stageOf(q) === 'critique' && roundOf(q) === 1) || isRetry(q));
    expect(askedAgain.map(agentOf).sort()).toContain('b');
    expect(store.getDebate(stored.id).resumptions?.[0]?.reused.map((t) => t.agentId)).toEqual(['a']);
  });

  it('asks again a debater whose recorded call asked something other than what the resumed run would ask', async () => {
    const { stored, seen, sim, store } = await stoppedInRoundOne();
    const plan = planResume(stored);
    const b = plan.recorded.get('b')!;
    // As if b's call had read other peers: its reply answers another prompt, so it cannot stand for this one.
    const other = { ...b, messages: b.messages.map((m, i) => (i === b.messages.length - 1 ? { ...m, content: `${m.content}\nsomething else` } : m)) };
    const changed = { ...plan, recorded: new Map([...plan.recorded, ['b', other]]) };

    const before = seen.length;
    const result = await resumeDebate(stored, { host: sim.url, recorder: recorder(store, { resume: changed.point }) }, changed);
    expect(result.status).toBe('completed');
    expect(
      seen
        .slice(before)
        .filter((q) => stageOf(q) === 'critique' && roundOf(q) === 1)
        .map(agentOf)
        .sort(),
    ).toEqual(['b', 'c']);
    expect(store.getDebate(stored.id).resumptions?.[0]?.reused.map((t) => t.agentId)).toEqual(['a']);
  });

  /** The panel's model names served from other files (another digest): models replaced between the run and what follows it. Counts what it is asked. */
  async function replacedModels(answer: () => string) {
    let asked = 0;
    const other = await startSimulator({
      models: simModels(testPreset(['a', 'b', 'c'])).map((m) => ({ ...m, digest: 'f'.repeat(64) })),
      respond: () => {
        asked += 1;
        return answer();
      },
    });
    return { other, asked: () => asked };
  }

  it('refuses to synthesize with a synthesizer whose digest is not the one the debate ran on, writing nothing', async () => {
    const { stored, store } = await stoppedInRoundOne();
    const { other, asked } = await replacedModels(() => reply.synthesis());
    try {
      const calls = stored.calls.length;
      const error = await resynthesize({ store, id: stored.id, host: other.url }).catch((err: unknown) => err);
      const synthesizer = stored.agents.find((a) => a.role === 'synthesizer')!;
      expect(error).toMatchObject({ code: 'MODEL_CHANGED', exitCode: 2 });
      expect((error as Error).message).toContain(`Model \`${synthesizer.model}\` is not the one debate \`${stored.id}\` ran on: it ran on digest ${synthesizer.digest}`);
      expect(asked()).toBe(0);
      expect(store.getDebate(stored.id).calls.length).toBe(calls);
      expect(store.verifyDebate(stored.id).state).toBe('sealed');
      // Another synthesizer, named with --model, is not held to the recorded one's digest.
      const served = await resynthesize({ store, id: stored.id, host: other.url, model: 'model-0:1b' });
      expect(served.record.status).toBe('ok');
    } finally {
      await other.close();
    }
  });

  it('refuses to go on with a model whose digest is not the one the debate ran on, and leaves the record as it was', async () => {
    const { stored, seen, store } = await stoppedInRoundOne();
    const plan = planResume(stored);
    const { other, asked } = await replacedModels(() => reply.opening('x'));
    try {
      const before = seen.length;
      const error = await resumeDebate(stored, { host: other.url, recorder: recorder(store, { resume: plan.point }) }, plan).catch((err: unknown) => err);
      expect(error).toMatchObject({ code: 'MODEL_CHANGED', exitCode: 2 });
      expect((error as Error).message).toContain(`it ran on digest ${stored.agents[0]!.digest}, and the model of that name is now ${'f'.repeat(64)}`);
      expect(asked()).toBe(0);
      expect(seen.length).toBe(before);
      const after = store.getDebate(stored.id);
      expect(after.status).toBe('interrupted');
      expect(after.resumptions ?? []).toEqual([]);
      expect(store.verifyDebate(stored.id).state).toBe('sealed');
    } finally {
      await other.close();
    }
  });
});
