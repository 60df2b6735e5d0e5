import { describe, expect, it } from 'vitest';
import type { DebateEvent } from '../../src/engine/events.js';
import { recorder } from '../../src/engine/recorder.js';
import { planResume, resumeDebate } from '../../src/engine/resume.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { HostError } from '../../src/errors.js';
import { SlotPool } from '../../src/schedule/pool.js';
import { type SimHandle, type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { closesAfterEach } from '../helpers/lifecycle.js';
import { agentOf, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

const track = closesAfterEach();

const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.95, callTimeoutSeconds: 10 } });

/**
 * Two simulators over HTTP: B listed first, so every call goes to B while it is there (ties go
 * to the first host), and A beside it. `onB` may return a reply for B's requests (or kill B).
 * `onlyOnB`: a model A does not serve.
 */
async function twoHosts(onB: (req: SimRequest, b: SimHandle) => SimReply | undefined, onlyOnB?: string, api: 'ollama' | 'openai' = 'ollama') {
  let b: SimHandle | null = null;
  const scriptB = scriptedResponder([0.3, 0.4, 0.5], (req) => onB(req, b!));
  b = await startSimulator({ models: simModels(preset), respond: scriptB.respond, api });
  const scriptA = scriptedResponder([0.3, 0.4, 0.5]);
  const a = track(await startSimulator({ models: simModels(preset).filter((m) => m.name !== onlyOnB), respond: scriptA.respond, api }));
  const killed = b;
  track({ close: () => killed.close() });
  const store = track(openStore(':memory:'));
  // An OpenAI-compatible server (vLLM, llama-server) is listed by the base of its API.
  const entry = (sim: SimHandle) => (api === 'openai' ? { url: `${sim.url}/v1`, api } : { url: sim.url });
  return { a: { ...a, url: entry(a).url }, b: { ...b, url: entry(b).url }, store, hosts: [entry(b), entry(a)] };
}

function warningsOf(events: DebateEvent[]): string[] {
  return events.flatMap((e) => (e.type === 'warning' ? [e.message] : []));
}

function callsOf(store: Store, id: string, names: Record<string, string>) {
  return store.getDebate(id).calls.map((c) => ({ stage: c.stage, round: c.round, agent: c.agentId, host: names[c.host] ?? c.host, status: c.status, error: c.error?.split(':')[0] ?? null, partial: c.partial === true, raw: c.raw }));
}

/** B's behaviour: it dies (stops listening, resets its connections) when the first judge request reaches it. */
function killedAtJudge(): (req: SimRequest, b: SimHandle) => SimReply | undefined {
  let gone = false;
  return (req, sim) => {
    if (stageOf(req) === 'judge' && !gone) {
      gone = true;
      void sim.kill();
    }
    return undefined;
  };
}

describe('a host that leaves the pool mid-debate', () => {
  it.each(['ollama', 'openai'] as const)('goes on with the other host for a model both serve, says once which host left and why, and records each call under the host that answered (%s)', async (api) => {
    // B is switched off once round 0's answers are in: the judge's request is the first to find it gone.
    const { a, b, store, hosts } = await twoHosts(killedAtJudge(), undefined, api);
    const events: DebateEvent[] = [];
    const result = await runDebate({ question: 'Should we do A?', preset, host: a.url, hosts, recorder: recorder(store), listeners: [(e) => events.push(e)], retryDelaysMs: [10, 10] });

    expect(result.status).toBe('completed');
    const left = warningsOf(events);
    expect(left).toEqual([`Host ${b.url} left the pool (it reset the connection): calls of \`judge:1b\` go to ${a.url}; it is tried again every 30 s.`]);
    const calls = callsOf(store, result.id, { [a.url]: 'A', [b.url]: 'B' });
    expect(calls.filter((c) => c.round === 0 && c.stage === 'opening').map((c) => [c.agent, c.host, c.status])).toEqual([
      ['a', 'B', 'ok'],
      ['b', 'B', 'ok'],
      ['c', 'B', 'ok'],
    ]);
    // The judge's send that found B gone is recorded under B; it was sent again at once to A.
    expect(calls.filter((c) => c.stage === 'judge' && c.round === 0).map((c) => [c.host, c.status, c.error])).toEqual([
      ['B', 'error', 'HOST_UNREACHABLE'],
      ['A', 'ok', null],
    ]);
    // Every later call went to A alone, without trying B first.
    expect(calls.filter((c) => c.round > 0).every((c) => c.host === 'A' && c.status === 'ok')).toBe(true);
    expect(store.verifyDebate(result.id).state).toBe('sealed');
  });

  it.each(['ollama', 'openai'] as const)('records a reply cut by the host dying as partial under that host, and has the other host answer it (%s)', async (api) => {
    const { a, b, store, hosts } = await twoHosts((req) => (stageOf(req) === 'critique' && agentOf(req) === 'b' ? { crashAfterTokens: 2 } : undefined), undefined, api);
    const events: DebateEvent[] = [];
    const result = await runDebate({ question: 'Should we do A?', preset, host: a.url, hosts, recorder: recorder(store), listeners: [(e) => events.push(e)], retryDelaysMs: [10, 10] });

    expect(result.status).toBe('completed');
    expect(warningsOf(events)).toHaveLength(1);
    expect(warningsOf(events)[0]).toContain(`Host ${b.url} left the pool`);
    const sends = callsOf(store, result.id, { [a.url]: 'A', [b.url]: 'B' }).filter((c) => c.stage === 'critique' && c.round === 1 && c.agent === 'b');
    // Cut mid-reply: kept as far as it got; resent to B, which refuses now; sent at once to A, which answers.
    expect(sends.map((c) => [c.host, c.status, c.error, c.partial])).toEqual([
      ['B', 'error', 'STREAM_INCOMPLETE', true],
      ['B', 'error', 'HOST_UNREACHABLE', false],
      ['A', 'ok', null, false],
    ]);
    expect(sends[0]!.raw).not.toBe('');
    expect(store.getDebate(result.id).turns.filter((t) => t.round > 0).every((t) => t.status === 'ok')).toBe(true);
    expect(store.verifyDebate(result.id).state).toBe('sealed');
  });

  it('stops, naming the host and the model, when the only host of a model leaves; the record verifies and resume goes on once the host is back', async () => {
    const { a, b, store, hosts } = await twoHosts(killedAtJudge(), 'model-1:1b');
    const error = await runDebate({ question: 'Should we do A?', preset, host: a.url, hosts, recorder: recorder(store), retryDelaysMs: [10, 10] }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(HostError);
    const { message, hint } = error as HostError;
    expect(message).toContain(`stopped in round 1: ${b.url} stopped answering, and no host left in the pool serves \`model-1:1b\` (agent b).`);
    expect(hint).toContain('serve that model on a host of the pool');
    const [summary] = store.listDebates();
    expect(summary).toMatchObject({ status: 'interrupted' });
    expect(store.verifyDebate(summary!.id).state).toBe('sealed');
    const stored = store.getDebate(summary!.id);
    expect(stored.calls.filter((c) => c.agentId === 'b' && c.round === 1).map((c) => c.error?.split(':')[0])).toEqual(['HOST_UNREACHABLE', 'HOST_UNREACHABLE', 'HOST_UNREACHABLE']);

    // While B is down, resume says that the host which would serve the model does not answer, before asking anything.
    const early = await resumeDebate(stored, { host: a.url, hosts, recorder: recorder(store, { resume: planResume(stored).point }) }, planResume(stored)).catch((e: unknown) => e);
    expect(early).toBeInstanceOf(HostError);
    expect((early as HostError).message).toBe(`Model \`model-1:1b\` (agent b) is not on ${a.url}. ${b.url} does not answer (Cannot reach Ollama at ${b.url}).`);
    expect((early as HostError).hint).toBe('If that host serves it, start its server again and try again. Otherwise: run `ollama pull model-1:1b` on that host, or change the preset.');
    expect(store.getDebate(stored.id).calls).toHaveLength(stored.calls.length);

    // B comes back on its port: resume asks b again there, and the rest where they are served.
    const back = track(await startSimulator({ port: b.port, models: simModels(preset), respond: scriptedResponder([0.3, 0.4, 0.5]).respond }));
    const plan = planResume(stored);
    const result = await resumeDebate(stored, { host: a.url, hosts, recorder: recorder(store, { resume: plan.point }), retryDelaysMs: [10, 10] }, plan);
    expect(result.status).toBe('completed');
    const after = store.getDebate(stored.id);
    expect(after.calls.filter((c) => c.agentId === 'b' && c.status === 'ok' && c.round === 1).map((c) => c.host)).toEqual([back.url]);
    expect(store.verifyDebate(stored.id).state).toBe('sealed');
  });

  it('sends calls to a host that left again once it answers, and says it is back', async () => {
    let revived: Promise<SimHandle> | null = null;
    const { a, b, store, hosts } = await twoHosts(killedAtJudge());
    // A pool that tries a host that left with every call, so the test need not wait 30 s.
    const pool = new SlotPool(hosts.map((h) => ({ url: h.url, numParallel: 1, models: simModels(preset).map((m) => m.name) })), { rejoinAfterMs: 0 });
    const events: DebateEvent[] = [];
    const result = await runDebate({
      question: 'Should we do A?',
      preset,
      host: a.url,
      hosts,
      pool,
      recorder: recorder(store),
      listeners: [
        (e) => {
          events.push(e);
          // B is started again on its port once round 1 is judged.
          if (e.type === 'round.judged' && e.judgement.round === 1) revived ??= startSimulator({ port: b.port, models: simModels(preset), respond: scriptedResponder([0.3, 0.4, 0.5]).respond });
        },
      ],
      retryDelaysMs: [10, 10],
    });
    track(await revived!);

    expect(result.status).toBe('completed');
    expect(warningsOf(events)).toEqual([expect.stringContaining(`Host ${b.url} left the pool`), `Host ${b.url} is back in the pool: it answered again.`]);
    const calls = callsOf(store, result.id, { [a.url]: 'A', [b.url]: 'B' });
    // Round 2 and the synthesis are answered by B again.
    expect(calls.filter((c) => c.round === 2 && c.status === 'ok').map((c) => c.host)).toContain('B');
    expect(calls.filter((c) => c.round === 1 && c.status === 'ok').every((c) => c.host === 'A')).toBe(true);
    expect(store.verifyDebate(result.id).state).toBe('sealed');
  });
});

describe('a host that stops sending mid-reply without closing the connection (power or network lost)', () => {
  // A short stall limit, and a time limit far past it: a stall is cut by the first, not the second.
  const stalling = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.95, callTimeoutSeconds: 60, stallSeconds: 0.3 } });

  it('cuts the reply once it has been silent for the stall limit, records it as partial, and resends it to the same lone host', async () => {
    let stalled = false;
    const script = scriptedResponder([0.3, 0.4, 0.5], (req) => {
      if (stalled || stageOf(req) !== 'critique' || agentOf(req) !== 'b') return undefined;
      stalled = true;
      return { stallAfterTokens: 2 };
    });
    const sim = track(await startSimulator({ models: simModels(stalling), respond: script.respond }));
    const store = track(openStore(':memory:'));
    const result = await runDebate({ question: 'Should we do A?', preset: stalling, host: sim.url, recorder: recorder(store), retryDelaysMs: [10, 10] });

    expect(result.status).toBe('completed');
    const sends = store.getDebate(result.id).calls.filter((c) => c.stage === 'critique' && c.round === 1 && c.agentId === 'b');
    expect(sends.map((c) => [c.status, c.error?.split(':')[0] ?? null, c.partial === true])).toEqual([
      ['error', 'STREAM_INCOMPLETE', true],
      ['ok', null, false],
    ]);
    expect(sends[0]!.error).toContain(`${sim.url} stopped sending in the middle of model-1:1b's reply: nothing came for 0.3 s`);
    expect(sends[0]!.raw).not.toBe('');
    expect(store.verifyDebate(result.id).state).toBe('sealed');
  });

  it.each(['ollama', 'openai'] as const)('sends the call to the other host of the pool when the resend finds the host gone, and the debate completes and verifies (%s)', async (api) => {
    const { a, b, store, hosts } = await twoHosts((req) => (stageOf(req) === 'critique' && agentOf(req) === 'b' ? { stallAfterTokens: 2, powerOff: true } : undefined), undefined, api);
    const events: DebateEvent[] = [];
    const result = await runDebate({ question: 'Should we do A?', preset: stalling, host: a.url, hosts, recorder: recorder(store), listeners: [(e) => events.push(e)], retryDelaysMs: [10, 10] });

    expect(result.status).toBe('completed');
    expect(warningsOf(events)).toEqual([expect.stringContaining(`Host ${b.url} left the pool`)]);
    const sends = callsOf(store, result.id, { [a.url]: 'A', [b.url]: 'B' }).filter((c) => c.stage === 'critique' && c.round === 1 && c.agent === 'b');
    // Cut after the stall limit, kept as far as it got; resent to B, which refuses now; sent at once to A, which answers.
    expect(sends.map((c) => [c.host, c.status, c.error, c.partial])).toEqual([
      ['B', 'error', 'STREAM_INCOMPLETE', true],
      ['B', 'error', 'HOST_UNREACHABLE', false],
      ['A', 'ok', null, false],
    ]);
    expect(store.getDebate(result.id).turns.every((t) => t.status === 'ok')).toBe(true);
    expect(store.verifyDebate(result.id).state).toBe('sealed');
  });
});

describe('SlotPool with a host that left', () => {
  it('gives a waiting call the next slot of a host still there, never a slot of the host that left, and tries that host again once its pause is over', async () => {
    let clock = 0;
    const pool = new SlotPool(
      [
        { url: 'B', numParallel: 1, models: ['m'] },
        { url: 'A', numParallel: 1, models: ['m'] },
      ],
      { rejoinAfterMs: 100, now: () => clock },
    );
    const onB = await pool.lease('m');
    const onA = await pool.lease('m');
    expect([onB.host, onA.host]).toEqual(['B', 'A']);
    let waited: string | null = null;
    const waiting = pool.lease('m').then((l) => (waited = l.host));

    expect(pool.leave('B')).toBe(true);
    expect(pool.leave('B')).toBe(false);
    pool.release(onB);
    await Promise.resolve();
    expect(waited).toBeNull();
    pool.release(onA);
    await waiting;
    expect(waited).toBe('A');
    expect(pool.servedElsewhere('m', 'A')).toBe(false);

    // Within the pause only A is given; after it, one call tries B, and the next waits for A again.
    clock = 50;
    expect(pool.hostsFor('m')).toEqual(['A']);
    clock = 150;
    const probe = await pool.lease('m');
    expect(probe).toMatchObject({ host: 'B', probe: true });
    expect(pool.hostsFor('m')).toEqual(['A']);
    expect(pool.back('B')).toBe(true);
    expect(pool.hostsFor('m')).toEqual(['B', 'A']);
  });
});
