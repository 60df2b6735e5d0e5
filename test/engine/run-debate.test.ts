import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DebateEvent } from '../../src/engine/events.js';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { DebateFailedError, HostError, InterruptedError } from '../../src/errors.js';
import { type SimHandle, type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { agentOf, judgedRoundOf, oneStance, reply, roundOf, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

let sim: SimHandle | null = null;
let store: Store | null = null;

afterEach(async () => {
  store?.close();
  store = null;
  await sim?.close();
  sim = null;
});

async function setup(
  agentIds: string[],
  judgeScores: number[],
  override?: (req: SimRequest) => SimReply | undefined,
  presetOverrides: Parameters<typeof testPreset>[1] = {},
) {
  const preset = testPreset(agentIds, presetOverrides);
  const script = scriptedResponder(judgeScores, override);
  sim = await startSimulator({ models: simModels(preset), respond: script.respond });
  store = openStore(':memory:');
  const events: DebateEvent[] = [];
  const run = (extra: Partial<Parameters<typeof runDebate>[0]> = {}) =>
    runDebate({ question: 'Should we do A?', preset, host: sim!.url, recorder: recorder(store!), listeners: [(e) => events.push(e)], ...extra });
  return { preset, seen: script.seen, events, run, store: store!, sim: sim! };
}

describe('runDebate', () => {
  it('gives every agent the question alone in round 0, with nothing from its peers', async () => {
    const { run, seen } = await setup(['a', 'b', 'c'], [0.95]);
    await run();
    const openings = seen.filter((r) => stageOf(r) === 'opening');
    expect(openings.map(agentOf).sort()).toEqual(['a', 'b', 'c']);
    for (const req of openings) {
      const text = req.messages.map((m) => m.content).join('\n');
      expect(text).toContain('Should we do A?');
      for (const other of ['a', 'b', 'c'].filter((x) => x !== agentOf(req))) expect(text).not.toContain(`${other} says A`);
    }
  });

  it('streams token progress to a listener that reads it, and emits none when every listener says it does not', async () => {
    const { run, events } = await setup(['a', 'b'], [0.95]);
    await run();
    const progress = events.filter((e) => e.type === 'turn.progress');
    expect(progress.length).toBeGreaterThan(0);
    // Progress counts the tokens of each call as they arrive.
    const first = progress.filter((e) => e.type === 'turn.progress' && e.agentId === 'a' && e.stage === 'opening').map((e) => (e as { tokens: number }).tokens);
    expect(first).toEqual(first.map((_, i) => i + 1));

    const quiet: DebateEvent[] = [];
    const result = await run({ listeners: [Object.assign((e: DebateEvent) => void quiet.push(e), { progress: false })] });
    expect(result.status).toBe('completed');
    expect(quiet.filter((e) => e.type === 'turn.progress')).toEqual([]);
    expect(quiet.filter((e) => e.type === 'call.finished').map((e) => (e.type === 'call.finished' ? e.call.stage : ''))).toEqual(['opening', 'opening', 'judge', 'synthesis']);
  });

  it('shows each critic the previous round of its peers only, never the current round or its own answer as a peer', async () => {
    const { run, seen } = await setup(['a', 'b', 'c'], [0.1, 0.1, 0.1], (req) => {
      const agent = agentOf(req)!;
      if (stageOf(req) === 'opening') return reply.opening(agent, `${agent}-r0-position`);
      if (stageOf(req) === 'critique') return reply.critique(agent, `${agent}-r${roundOf(req)}-position`);
      return undefined;
    });
    await run();
    const round2 = seen.filter((r) => stageOf(r) === 'critique' && roundOf(r) === 2);
    expect(round2).toHaveLength(3);
    for (const req of round2) {
      const me = agentOf(req)!;
      const prompt = req.messages.at(-1)!.content;
      for (const peer of ['a', 'b', 'c'].filter((x) => x !== me)) {
        expect(prompt).toContain(`[${peer}]\n${peer}-r1-position`);
        expect(prompt).not.toContain(`${peer}-r2-position`);
        expect(prompt).not.toContain(`${peer}-r0-position`);
      }
      expect(prompt).not.toContain(`[${me}]`);
      expect(prompt).toContain(`${me}-r1-position`);
    }
  });

  it('stops early once the judge scores convergence at the threshold, and skips the remaining rounds', async () => {
    const { run, seen, store } = await setup(['a', 'b'], [0.3, 0.85, 0.1]);
    const result = await run();
    expect(result.exitReason).toBe('converged');
    expect(result.status).toBe('completed');
    expect(seen.filter((r) => stageOf(r) === 'critique').map(roundOf)).toEqual([1, 1]);
    const stored = store.getDebate(result.id);
    expect(stored.rounds.map((r) => r.convergence)).toEqual([0.3, 0.85]);
    expect(stored.roundsCompleted).toBe(1);
  });

  it('runs to the maxRounds ceiling when the panel never converges, then synthesizes', async () => {
    const { run, seen } = await setup(['a', 'b'], [0.2], undefined, { protocol: { maxRounds: 2 } });
    const result = await run();
    expect(result.exitReason).toBe('max_rounds');
    expect(seen.filter((r) => stageOf(r) === 'judge')).toHaveLength(3);
    expect(seen.filter((r) => stageOf(r) === 'synthesis')).toHaveLength(1);
    expect(result.synthesis?.status).toBe('ok');
  });

  it('streams every call, since a non-streaming call dies on the 300 s headers timeout', async () => {
    const { run, seen } = await setup(['a', 'b'], [0.2, 0.9]);
    await run();
    expect(seen.length).toBeGreaterThan(5);
    expect(seen.every((r) => r.stream)).toBe(true);
  });

  it('judges at temperature 0 and averages the three axes into the round convergence', async () => {
    const { run, seen } = await setup(['a', 'b'], [0], (req) =>
      stageOf(req) === 'judge' ? JSON.stringify({ rationale: 'x', recommendation: 90, facts: 60, caveats: 30, ...oneStance(req) }) : undefined,
    );
    const result = await run();
    const judge = seen.find((r) => stageOf(r) === 'judge')!;
    expect(judge.options.temperature).toBe(0);
    expect(result.rounds[0]!.judgement!.convergence).toBeCloseTo(0.6, 10);
  });

  it('keeps going when one agent fails, records the error, and names the gap in the synthesis', async () => {
    const { run, store, seen } = await setup(['a', 'b', 'c'], [0.2, 0.9], (req) =>
      agentOf(req) === 'b' ? { error: 'model runner has unexpectedly stopped', status: 500 } : undefined,
    );
    const result = await run();
    expect(result.status).toBe('completed');
    const stored = store.getDebate(result.id);
    const bTurns = stored.turns.filter((t) => t.agentId === 'b');
    expect(bTurns.every((t) => t.status === 'failed')).toBe(true);
    expect(bTurns[0]!.error).toContain('unexpectedly stopped');
    expect(stored.calls.filter((c) => c.agentId === 'b').every((c) => c.status === 'error')).toBe(true);
    expect(result.synthesis?.synthesis?.failedAgents.map((f) => f.agent)).toEqual(['b']);
    const critiqueOfA = seen.find((r) => stageOf(r) === 'critique' && agentOf(r) === 'a')!;
    expect(critiqueOfA.messages.at(-1)!.content).not.toContain('[b]');
  });

  it('treats a reply cut off mid-stream and a stream that ends without done as failed turns', async () => {
    const { run, store } = await setup(['a', 'b', 'c', 'd'], [0.9], (req) => {
      if (stageOf(req) !== 'opening') return undefined;
      if (agentOf(req) === 'b') return { content: reply.opening('b'), error: 'out of memory', failAfterTokens: 2 };
      if (agentOf(req) === 'c') return { content: reply.opening('c'), silentStop: true };
      return undefined;
    });
    const result = await run();
    const stored = store.getDebate(result.id);
    const turn = (id: string) => stored.turns.find((t) => t.round === 0 && t.agentId === id)!;
    expect(turn('b').status).toBe('failed');
    expect(turn('b').error).toContain('out of memory');
    expect(turn('c').status).toBe('failed');
    expect(turn('c').error).toMatch(/without finishing/);
    expect(result.synthesis?.synthesis?.failedAgents.map((f) => f.agent).sort()).toEqual(['b', 'c']);
  });

  it('fails a call that runs past its time limit without waiting for it', async () => {
    const { run, store } = await setup(['a', 'b', 'c'], [0.9], (req) =>
      agentOf(req) === 'c' && stageOf(req) === 'opening' ? { content: reply.opening('c'), delayMs: 3000 } : undefined,
      { protocol: { callTimeoutSeconds: 0.3, maxRounds: 1 } },
    );
    const started = Date.now();
    const result = await run();
    expect(Date.now() - started).toBeLessThan(2900);
    const c = store.getDebate(result.id).calls.find((x) => x.agentId === 'c')!;
    expect(c.status).toBe('error');
    expect(c.error).toContain('CALL_TIMEOUT');
  });

  it('asks once more quoting the validation error, and uses the repaired answer', async () => {
    let first = true;
    const { run, store, seen } = await setup(['a', 'b'], [0.9], (req) => {
      if (agentOf(req) === 'a' && stageOf(req) === 'opening' && first) {
        first = false;
        return JSON.stringify({ position: 'A', confidence: 'high' });
      }
      return undefined;
    });
    const result = await run();
    const stored = store.getDebate(result.id);
    const calls = stored.calls.filter((c) => c.agentId === 'a' && c.stage === 'opening');
    expect(calls.map((c) => [c.attempt, c.status])).toEqual([
      [0, 'invalid'],
      [1, 'ok'],
    ]);
    expect(calls[0]!.validationError).toMatch(/confidence/);
    expect(calls[0]!.validationError).toMatch(/reasoning/);
    const repair = seen.filter((r) => agentOf(r) === 'a' && stageOf(r) === 'opening')[1]!;
    expect(calls[0]!.validationError).toMatch(/did not enforce the JSON Schema sent as format/);
    expect(repair.messages.at(-2)).toMatchObject({ role: 'assistant', content: JSON.stringify({ position: 'A', confidence: 'high' }) });
    expect(repair.messages.at(-1)!.content).toMatch(/confidence/);
    expect(stored.turns.find((t) => t.agentId === 'a' && t.round === 0)!.status).toBe('ok');
  });

  it('records a turn as invalid when the repair is still invalid, and the debate goes on without it', async () => {
    const { run, store } = await setup(['a', 'b', 'c'], [0.9], (req) => (agentOf(req) === 'c' && stageOf(req) === 'opening' ? 'I think yes.' : undefined));
    const result = await run();
    const stored = store.getDebate(result.id);
    expect(stored.turns.find((t) => t.agentId === 'c' && t.round === 0)!.status).toBe('invalid');
    expect(stored.calls.filter((c) => c.agentId === 'c' && c.stage === 'opening').map((c) => c.status)).toEqual(['invalid', 'invalid']);
    // The orchestrator's fallback for c's seat answered the same way here, so the seat stays empty, and the record says so.
    expect(stored.calls.filter((c) => c.agentId === 'c' && c.stage === 'fallback').map((c) => [c.model, c.status])).toEqual([
      ['synth:1b', 'invalid'],
      ['synth:1b', 'invalid'],
    ]);
    expect(stored.steps?.map((s) => s.step).find((s) => s.kind === 'fallback')).toMatchObject({ agentId: 'c', round: 0, status: 'failed' });
    expect(result.status).toBe('completed');
  });

  it("sends each critic its peers' ids as the only values `with` may take", async () => {
    const { run, seen } = await setup(['a', 'b', 'c'], [0.1, 0.9]);
    await run();
    const critique = seen.find((r) => stageOf(r) === 'critique' && agentOf(r) === 'b')!;
    const format = critique.format as { properties: Record<string, { items: { properties: { with: unknown } } }> };
    expect(format.properties.agreements!.items.properties.with).toMatchObject({ enum: ['a', 'c'] });
    expect(format.properties.disagreements!.items.properties.with).toMatchObject({ enum: ['a', 'c'] });
  });

  it('asks for a repair when a server that ignores format lets a critique name someone who is not a peer', async () => {
    const { run, store } = await setup(['a', 'b'], [0.1, 0.9], (req) =>
      stageOf(req) === 'critique' && agentOf(req) === 'a' && !req.messages.some((m) => m.role === 'assistant') ? reply.critique('a', 'still A', ['zed']) : undefined,
    );
    const result = await run();
    const calls = store.getDebate(result.id).calls.filter((c) => c.agentId === 'a' && c.stage === 'critique');
    expect(calls.map((c) => c.status)).toEqual(['invalid', 'ok']);
    expect(calls[0]!.validationError).toMatch(/did not enforce the JSON Schema sent as format[\s\S]*agreements\.0\.with/);
  });

  it('reads a judge that scores on a 0-100 scale as the fraction it means, and goes on past round 0', async () => {
    const { run, store } = await setup(['a', 'b'], [0.9], (req) =>
      stageOf(req) === 'judge' ? JSON.stringify({ rationale: 'They differ on the main course.', recommendation: 41, facts: 38, caveats: 45, ...oneStance(req) }) : undefined,
    );
    const result = await run();
    const stored = store.getDebate(result.id);
    expect(stored.rounds[0]!.convergence).toBeCloseTo((0.41 + 0.38 + 0.45) / 3, 10);
    expect(stored.rounds[0]!.score).toMatchObject({ recommendation: 0.41, facts: 0.38, caveats: 0.45 });
    expect(stored.exitReason).toBe('max_rounds');
    expect(stored.calls.filter((c) => c.stage === 'judge').every((c) => c.status === 'ok' && c.attempt === 0)).toBe(true);
  });

  it('asks a judge that writes 1e999 for one repair naming the field, then records no score and goes on', async () => {
    const { run, store } = await setup(['a', 'b'], [0.9], (req) =>
      stageOf(req) === 'judge' && judgedRoundOf(req) === 0 ? JSON.stringify({ rationale: 'All agree.' }).replace('}', ',"recommendation":1e999,"facts":1e999,"caveats":0.13e1765329739299292}') : undefined,
    );
    const result = await run();
    const stored = store.getDebate(result.id);
    const judged = stored.calls.filter((c) => c.stage === 'judge' && c.round === 0);
    expect(judged.map((c) => c.status)).toEqual(['invalid', 'invalid']);
    expect(judged[0]!.validationError).toMatch(/recommendation is not a finite number[\s\S]*from 0 to 100/);
    expect(judged[1]!.messages.at(-1)!.content).toContain('recommendation is not a finite number');
    expect(stored.rounds[0]).toMatchObject({ status: 'failed', convergence: null });
    // Round 1 is scored 0.9, at the threshold: the debate ends there, not after round 0.
    expect(stored.roundsCompleted).toBe(1);
  });

  it('asks for one repair of a confidence outside 0 to 100 instead of taking it as the top of the range', async () => {
    const { run, store } = await setup(['a', 'b'], [0.9], (req) =>
      stageOf(req) === 'opening' && agentOf(req) === 'a' && !req.messages.some((m) => m.role === 'assistant') ? JSON.stringify({ position: 'A', reasoning: 'r', confidence: 700 }) : undefined,
    );
    const result = await run();
    const stored = store.getDebate(result.id);
    const calls = stored.calls.filter((c) => c.agentId === 'a' && c.stage === 'opening');
    expect(calls.map((c) => c.status)).toEqual(['invalid', 'ok']);
    expect(calls[0]!.validationError).toMatch(/confidence/);
    expect(stored.turns.find((t) => t.agentId === 'a' && t.round === 0)!.confidence).toBe(0.6);
  });

  it('fails the debate with a clear message when fewer than two agents answer in round 0', async () => {
    const { run, store } = await setup(['a', 'b', 'c'], [0.9], (req) => (agentOf(req) !== 'a' ? { error: 'boom', status: 500 } : undefined));
    const error = await run().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DebateFailedError);
    expect((error as Error).message).toContain('only 1 of 3');
    const [row] = store.listDebates();
    expect(row).toMatchObject({ status: 'failed', exitReason: 'too_few_answers' });
  });

  it('names every missing model with the pull command before making any debate call', async () => {
    const { run, store, seen } = await setup(['a', 'b'], [0.9]);
    const preset = testPreset(['a', 'b']);
    preset.agents[1]!.model = 'absent:7b';
    preset.judge.model = 'nojudge:1b';
    const error = await run({ preset }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HostError);
    expect((error as HostError).code).toBe('MODEL_MISSING');
    // Each named with who runs it, so the preset line to fix is plain.
    expect((error as HostError).message).toContain('`absent:7b` (agent b), `nojudge:1b` (the judge)');
    expect((error as HostError).hint).toContain('ollama pull absent:7b');
    expect(seen).toHaveLength(0);
    expect(store.listDebates()).toHaveLength(0);
  });

  it('reports an unreachable host with a hint to start ollama serve', async () => {
    const { run } = await setup(['a', 'b'], [0.9]);
    const error = await run({ host: 'http://127.0.0.1:9' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HostError);
    expect((error as HostError).code).toBe('HOST_UNREACHABLE');
    expect((error as HostError).hint).toContain('ollama serve');
  });

  it('stops on abort, keeps the calls already recorded and marks the debate interrupted', async () => {
    const controller = new AbortController();
    const { run, store } = await setup(['a', 'b'], [0.1], (req) => {
      if (stageOf(req) === 'critique') {
        setTimeout(() => controller.abort(), 50);
        return { content: reply.critique(agentOf(req)!), delayMs: 2000 };
      }
      return undefined;
    });
    const error = await run({ signal: controller.signal }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InterruptedError);
    const [row] = store.listDebates();
    expect(row!.status).toBe('interrupted');
    const stored = store.getDebate(row!.id);
    expect(stored.calls.filter((c) => c.stage === 'opening' && c.status === 'ok')).toHaveLength(2);
    expect(stored.rounds).toHaveLength(1);
    expect(stored.calls.some((c) => c.status === 'aborted')).toBe(true);
  });

  it('sizes num_ctx once per model and sends the same value on every call to it', async () => {
    const { run, seen, sim } = await setup(['a', 'b', 'c'], [0.1, 0.1, 0.9]);
    const result = await run();
    const byModel = new Map<string, Set<unknown>>();
    for (const req of seen) byModel.set(req.model, (byModel.get(req.model) ?? new Set()).add(req.options.num_ctx));
    for (const [, values] of byModel) expect(values.size).toBe(1);
    expect(Object.values(result.numCtx).every((n) => n >= 4096)).toBe(true);
    expect(sim.counters().reloads).toBe(0);
  });

  it("shortens peers' answers to fit the model's context, visibly and on the record", async () => {
    // About 830 simulated tokens each: under num_predict, but four of them overflow num_ctx 4096.
    const long = 'abcdefghij'.repeat(500);
    const ids = ['a', 'b', 'c', 'd', 'e'];
    const { run, store, seen } = await setup(
      ids,
      [0.1, 0.9],
      (req) => (stageOf(req) === 'opening' ? reply.opening(agentOf(req)!, `${agentOf(req)} ${long}`) : undefined),
      { agents: ids.map((id, i) => ({ id, model: `model-${i}:1b`, persona: `You are agent ${id}.`, options: { num_ctx: 4096 } })) },
    );
    const result = await run();
    const stored = store.getDebate(result.id);
    const critiques = stored.calls.filter((c) => c.stage === 'critique');
    expect(critiques.length).toBeGreaterThan(0);
    for (const c of critiques) expect(c.truncation).toMatch(/shortened by \d+ characters to fit num_ctx 4096/);
    const prompt = seen.find((r) => stageOf(r) === 'critique')!.messages.at(-1)!.content;
    expect(prompt).toContain('(shortened to fit)');
    expect(prompt.length / 3.5).toBeLessThan(4096);
  });
});

describe('the record of a run', () => {
  it("gives the synthesizer round 0's reasoning and the agreements of the critique rounds", async () => {
    const ids = ['a', 'b', 'c'];
    const peerOf = (agent: string) => ids.find((id) => id !== agent)!;
    const { run, seen } = await setup(ids, [0.1, 0.9], (req) => (stageOf(req) === 'critique' ? reply.critique(agentOf(req)!, undefined, [peerOf(agentOf(req)!)]) : undefined));
    await run();
    const prompt = seen.find((r) => stageOf(r) === 'synthesis')!.messages.at(-1)!.content;
    for (const id of ids) expect(prompt).toContain(`reasoning: ${id} reasons`);
    expect(prompt).toContain('agrees: b on A');
    expect(prompt).toContain('agrees: a on A');
  });

  it("leaves round 0's reasoning out of a synthesis prompt that cannot hold it, says so on the record, and still synthesizes", async () => {
    // About 1,700 simulated tokens of reasoning per agent: three overflow the synthesizer's num_ctx 4096.
    const long = 'klmnopqrst'.repeat(600);
    const ids = ['a', 'b', 'c'];
    const { run, store, seen } = await setup(
      ids,
      [0.9],
      (req) => (stageOf(req) === 'opening' ? JSON.stringify({ position: `${agentOf(req)} says A`, reasoning: `${agentOf(req)} ${long}`, confidence: 60 }) : undefined),
      { synthesizer: { model: 'synth:1b', options: { num_ctx: 4096 } } },
    );
    const result = await run();
    const stored = store.getDebate(result.id);
    expect(stored.synthesis?.status).toBe('ok');
    const call = stored.calls.find((c) => c.stage === 'synthesis')!;
    expect(call.truncation).toMatch(/round 0's reasoning (left out|clipped to \d+ characters) to fit num_ctx 4096/);
    const prompt = seen.find((r) => stageOf(r) === 'synthesis')!.messages.at(-1)!.content;
    expect(prompt).toContain('a says A');
    expect(prompt).not.toContain(long);
  });

  it('survives closing the file and replays without any model server', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-'));
    const path = join(dir, 'record.db');
    const preset = testPreset(['a', 'b']);
    const script = scriptedResponder([0.4, 0.95]);
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    const fileStore = openStore(path);
    const result = await runDebate({ question: 'Q?', preset, host: sim.url, recorder: recorder(fileStore) });
    fileStore.close();
    await sim.close();
    sim = null;

    store = openStore(path);
    const stored = store.getDebate(result.id);
    expect(stored.status).toBe('completed');
    expect(stored.calls.length).toBe(script.seen.length);
    const { storedEvents } = await import('../../src/render/replay.js');
    const { liveRenderer } = await import('../../src/render/live.js');
    let text = '';
    const out = { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream;
    const render = liveRenderer(out, { color: false, live: false, columns: 100 });
    for (const event of storedEvents(stored)) render(event);
    expect(text).toContain('Round 0 · independent answers');
    expect(text).toContain('Round 1 · critique');
    expect(text).toContain('judge: convergence 0.40');
    expect(text).toContain('judge: convergence 0.95');
    expect(text).toContain('Stopped: the panel converged');
  });
});
