import { createServer, request, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { recorder } from '../../src/engine/recorder.js';
import { planResume, resumeDebate } from '../../src/engine/resume.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { HostError } from '../../src/errors.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { closeOpened } from '../helpers/lifecycle.js';
import type { Store } from '../../src/store/store.js';
import { agentOf, reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

let sim: SimHandle | null = null;
let store: Store | null = null;
let proxy: Server | null = null;

afterEach(async () => {
  await closeOpened(store, sim, proxy);
  [store, sim, proxy] = [null, null, null];
});

/**
 * A host in front of the simulator that goes away (every open and new connection dropped)
 * as soon as `after` chat replies (default the first round-0 answer) have been delivered, until `back()` is called.
 */
async function flakyHost(target: string, after = 1) {
  let down = false;
  let delivered = 0;
  let answered = false;
  const sockets = new Set<Socket>();
  proxy = createServer((req, res) => {
    if (down) return req.socket.destroy();
    sockets.add(req.socket);
    const url = new URL(target);
    const upstream = request({ host: url.hostname, port: url.port, path: req.url, method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
      up.on('end', () => {
        if (answered || req.url !== '/api/chat' || ++delivered < after) return;
        answered = true;
        down = true;
        for (const socket of sockets) socket.destroy();
      });
    });
    upstream.on('error', () => req.socket.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, back: () => (down = false) };
}

describe('a host that goes away mid-round', () => {
  it('ends the run interrupted with the finished answer kept, and resume asks again only the calls that never reached a model', async () => {
    const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 1, convergenceThreshold: 0.95, callTimeoutSeconds: 30 } });
    const script = scriptedResponder([0.3], (req) => {
      // a answers at once; b and c are still generating when the host goes.
      if (stageOf(req) === 'opening' && agentOf(req) !== 'a') return { content: reply.opening(agentOf(req) ?? 'x'), delayMs: 300 };
      return undefined;
    });
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    store = openStore(':memory:');
    const host = await flakyHost(sim.url);

    const error = await runDebate({ question: 'Should we do A?', preset, host: host.url, recorder: recorder(store), retryDelaysMs: [10, 10] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HostError);
    expect((error as HostError).hint).toContain('conclave resume');
    const [summary] = store.listDebates();
    expect(summary).toMatchObject({ status: 'interrupted' });
    const stored = store.getDebate(summary!.id);
    const openings = stored.calls.filter((c) => c.stage === 'opening');
    expect(openings.filter((c) => c.status === 'ok').map((c) => c.agentId)).toEqual(['a']);
    // Each of b and c: the send cut by the outage and two resends, all recorded.
    for (const agent of ['b', 'c']) expect(openings.filter((c) => c.agentId === agent).map((c) => c.error?.split(':')[0])).toEqual(['HOST_UNREACHABLE', 'HOST_UNREACHABLE', 'HOST_UNREACHABLE']);

    host.back();
    const plan = planResume(stored);
    expect([...plan.recorded.keys()]).toEqual(['a']);
    const before = script.seen.length;
    const result = await resumeDebate(stored, { host: host.url, recorder: recorder(store, { resume: plan.point }) }, plan);
    expect(result.status).toBe('completed');
    expect(script.seen.slice(before).filter((q) => stageOf(q) === 'opening').map(agentOf).sort()).toEqual(['b', 'c']);
    const after = store.getDebate(stored.id);
    expect(after.turns.filter((t) => t.round === 0).map((t) => [t.agentId, t.status]).sort()).toEqual([['a', 'ok'], ['b', 'ok'], ['c', 'ok']]);
    // Both attempts of b stay in the record: the ones that never arrived and the one that answered.
    expect(after.calls.filter((c) => c.agentId === 'b' && c.stage === 'opening').map((c) => c.status)).toEqual(['error', 'error', 'error', 'ok']);
    expect(store.verifyDebate(stored.id).state).toBe('sealed');
  });

  it('asks the judge again on resume when its score never reached it, reusing the round\'s answers', async () => {
    const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 1, convergenceThreshold: 0.95, callTimeoutSeconds: 30 } });
    const script = scriptedResponder([0.3, 0.4]);
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    store = openStore(':memory:');
    // Down once the three round-0 answers are in: the judge's call is the first to find no host.
    const host = await flakyHost(sim.url, 3);
    const error = await runDebate({ question: 'Should we do A?', preset, host: host.url, recorder: recorder(store), retryDelaysMs: [10, 10] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HostError);
    const stored = store.getDebate(store.listDebates()[0]!.id);
    expect(stored.status).toBe('interrupted');
    expect(stored.calls.filter((c) => c.stage === 'judge').every((c) => c.error?.startsWith('HOST_UNREACHABLE'))).toBe(true);

    host.back();
    const plan = planResume(stored);
    expect([...plan.recorded.keys()].sort()).toEqual(['a', 'b', 'c']);
    const before = script.seen.length;
    const result = await resumeDebate(stored, { host: host.url, recorder: recorder(store, { resume: plan.point }) }, plan);
    expect(result.status).toBe('completed');
    const asked = script.seen.slice(before);
    expect(asked.filter((q) => stageOf(q) === 'opening')).toEqual([]);
    expect(asked.filter((q) => stageOf(q) === 'judge').length).toBeGreaterThanOrEqual(1);
    const after = store.getDebate(stored.id);
    expect(after.rounds.find((r) => r.round === 0)!.convergence).not.toBeNull();
    expect(store.verifyDebate(stored.id).state).toBe('sealed');
  });
});
