import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { DebateEvent } from '../../src/engine/events.js';
import { recorder } from '../../src/engine/recorder.js';
import { planResume, resumeDebate } from '../../src/engine/resume.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { HostError } from '../../src/errors.js';
import { renderCard } from '../../src/render/card.js';
import { liveRenderer } from '../../src/render/live.js';
import { type SimHandle, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { closeOpened } from '../helpers/lifecycle.js';
import type { Store } from '../../src/store/store.js';
import { simModels, testPreset } from '../helpers/panel.js';
import { type TensionStage, tensionResponder, tensionStageOf, userText } from '../helpers/tensions.js';

// A claims call that never reaches its host is an outage, as a debater's call is: the clashes
// are not compared on the rest of the panel, the debate stops interrupted, and resume asks it again.

let sim: SimHandle | null = null;
let store: Store | null = null;
let proxy: Server | null = null;

afterEach(async () => {
  await closeOpened(store, sim, proxy);
  [store, sim, proxy] = [null, null, null];
});

const of = (seen: SimRequest[], stage: TensionStage) => seen.filter((r) => tensionStageOf(r) === stage);
const panelistOf = (r: SimRequest): string | undefined => /^Panelist: (\S+)$/m.exec(userText(r))?.[1];

/**
 * A host in front of the simulator that drops the connection, before any answer, of every chat
 * request `drop` picks while it is down (as a host that went away does), and passes the rest through.
 */
async function droppingHost(target: string, drop: (body: { format?: { properties?: object }; messages?: { role: string; content: string }[] }) => boolean) {
  let down = true;
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (down && req.url === '/api/chat') {
        try {
          if (drop(JSON.parse(body.toString('utf8')))) return req.socket.destroy();
        } catch {
          // not JSON: passed through
        }
      }
      const url = new URL(target);
      const upstream = request({ host: url.hostname, port: url.port, path: req.url, method: req.method, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      upstream.on('error', () => req.socket.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => proxy!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, back: () => (down = false) };
}

/** A live view writing to a string, as stderr shows it. */
function liveText(): { listener: (e: DebateEvent) => void; text: () => string } {
  let text = '';
  const out = { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream;
  return { listener: liveRenderer(out, { color: false, live: false, columns: 200 }), text: () => text };
}

const count = (text: string, needle: string): number => text.split(needle).length - 1;

describe('a claims call that never reached its host', () => {
  it('stops the debate interrupted before any clash is compared, and resume asks only that claims call again and maps the whole panel', async () => {
    const preset = testPreset(['a', 'b', 'c'], { tensions: {}, protocol: { maxRounds: 1, convergenceThreshold: 0.95, callTimeoutSeconds: 30 } });
    const clashes = [
      { a: 'C1', b: 'C3', type: 'factual' as const, severity: 9 },
      { a: 'C3', b: 'C5', type: 'interpretive' as const, severity: 6 },
    ];
    const responder = tensionResponder({ judge: [0.2], clashes });
    sim = await startSimulator({ models: simModels(preset), respond: responder.respond });
    store = openStore(':memory:');
    // b's claims call finds no host: the connection drops on it and on both resends.
    const host = await droppingHost(sim.url, (body) => 'claims' in (body.format?.properties ?? {}) && (body.messages ?? []).some((m) => /^Panelist: b$/m.test(m.content)));

    const error = await runDebate({ question: 'Should we do A?', preset, host: host.url, recorder: recorder(store), retryDelaysMs: [10, 10] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HostError);
    const stored = store.getDebate(store.listDebates()[0]!.id);
    expect(stored.status).toBe('interrupted');
    const claimsOfB = stored.calls.filter((c) => c.stage === 'claims' && c.agentId === 'b');
    expect(claimsOfB.map((c) => c.error?.split(':')[0])).toEqual(['HOST_UNREACHABLE', 'HOST_UNREACHABLE', 'HOST_UNREACHABLE']);
    // No clash call on the part of the panel that answered, and no map drawn from the gap.
    expect(of(responder.seen, 'clash')).toHaveLength(0);
    expect(stored.calls.filter((c) => c.stage === 'clash')).toHaveLength(0);
    expect(stored.tensions?.status ?? 'incomplete').toBe('incomplete');

    host.back();
    const plan = planResume(stored);
    expect(plan.clashes).toBeUndefined();
    expect([...(plan.claims?.keys() ?? [])].sort()).toEqual(['a', 'c']);
    const before = responder.seen.length;
    const result = await resumeDebate(stored, { host: host.url, recorder: recorder(store, { resume: plan.point }), retryDelaysMs: [10, 10] }, plan);
    expect(result.status).toBe('completed');
    const asked = responder.seen.slice(before);
    // The claims calls that finished are not sent again: only b's.
    expect(of(asked, 'claims').map(panelistOf)).toEqual(['b']);
    expect(of(asked, 'clash').length).toBeGreaterThan(0);
    const after = store.getDebate(stored.id);
    const t = after.tensions!;
    expect(t.status).toBe('ok');
    expect(t.agents).toEqual(['a', 'b', 'c']);
    expect(t.claims.map((c) => c.agentId)).toEqual(['a', 'a', 'b', 'b', 'c', 'c']);
    expect(t.map!.coverage).toMatchObject({ pairsCompared: 3, pairsTotal: 3, gaps: [] });
    expect(t.map!.tensions.map((x) => [x.agentA, x.agentB]).sort()).toEqual([
      ['a', 'b'],
      ['b', 'c'],
    ]);
    expect(renderCard(after)).not.toContain('not compared');
    // The record keeps both attempts of b: the ones that never arrived and the one that answered.
    expect(after.calls.filter((c) => c.stage === 'claims' && c.agentId === 'b').map((c) => c.status)).toEqual(['error', 'error', 'error', 'ok']);
    expect(store.verifyDebate(stored.id).state).toBe('sealed');
  });

  it('does not reuse a recorded board whose claims call never reached its host, even when its clash call ran', async () => {
    // A record as an earlier version wrote it: b's claims never arrived, the clash call ran on a and c alone.
    const preset = testPreset(['a', 'b', 'c'], { tensions: {}, protocol: { maxRounds: 1, convergenceThreshold: 0.95, callTimeoutSeconds: 30 } });
    const responder = tensionResponder({ judge: [0.2], clashes: [{ a: 'C1', b: 'C3', type: 'factual', severity: 9 }] });
    sim = await startSimulator({ models: simModels(preset), respond: responder.respond });
    store = openStore(':memory:');
    const result = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store) });
    expect(result.status).toBe('completed');
    const done = store.getDebate(result.id);
    const claimsOfB = done.calls.find((c) => c.stage === 'claims' && c.agentId === 'b')!;
    const unreached = { ...claimsOfB, status: 'error' as const, error: 'HOST_UNREACHABLE: Cannot reach Ollama at http://127.0.0.1:9.', raw: '', parsed: null };
    const stored = {
      ...done,
      status: 'interrupted' as const,
      calls: done.calls.map((c) => (c === claimsOfB ? unreached : c)),
      tensions: { ...done.tensions!, agents: ['a', 'c'], claims: done.tensions!.claims.filter((c) => c.agentId !== 'b') },
    };
    const plan = planResume(stored);
    expect(plan.clashes).toBeUndefined();
    expect([...(plan.claims?.keys() ?? [])].sort()).toEqual(['a', 'c']);
    // A claims call a model refused is a gap, not an outage: that board is reused as it stands.
    const refused = planResume({ ...stored, calls: done.calls.map((c) => (c === claimsOfB ? { ...unreached, error: 'BAD_REQUEST: refused' } : c)) });
    expect(refused.clashes?.gaps).toEqual(['no claims from b (BAD_REQUEST: refused)']);
  });
});

describe('any other call of the tension stage that never reached its host', () => {
  const clashes = [
    { a: 'C1', b: 'C3', type: 'factual' as const, severity: 9 },
    { a: 'C3', b: 'C5', type: 'interpretive' as const, severity: 6 },
  ];
  const has = (key: string) => (body: { format?: { properties?: object } }) => key in (body.format?.properties ?? {});

  /** A debate whose every request of one kind finds no host (the connection drops), then resumed once the host is back. */
  async function interruptedThenResumed(drop: (body: { format?: { properties?: object } }) => boolean) {
    const preset = testPreset(['a', 'b', 'c'], { tensions: {}, protocol: { maxRounds: 1, convergenceThreshold: 0.95, callTimeoutSeconds: 30 } });
    const responder = tensionResponder({ judge: [0.2], clashes, stances: { a: 'maintain', b: 'concede' } });
    sim = await startSimulator({ models: simModels(preset), respond: responder.respond });
    store = openStore(':memory:');
    const host = await droppingHost(sim.url, drop);
    const error = await runDebate({ question: 'Should we do A?', preset, host: host.url, recorder: recorder(store), retryDelaysMs: [10, 10] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HostError);
    const stored = store.getDebate(store.listDebates()[0]!.id);
    expect(stored.status).toBe('interrupted');
    const seenBefore = responder.seen.length;
    host.back();
    const plan = planResume(stored);
    const result = await resumeDebate(stored, { host: host.url, recorder: recorder(store, { resume: plan.point }), retryDelaysMs: [10, 10] }, plan);
    expect(result.status).toBe('completed');
    const after = store.getDebate(stored.id);
    expect(after.tensions!.status).toBe('ok');
    expect(after.tensions!.map!.coverage).toMatchObject({ pairsCompared: 3, pairsTotal: 3, gaps: [] });
    expect(store.verifyDebate(stored.id).state).toBe('sealed');
    return { stored, plan, before: responder.seen.slice(0, seenBefore), asked: responder.seen.slice(seenBefore), after };
  }

  it('a clash call: no board is carried into the rounds, and resume sends the clash calls again without asking for claims again', async () => {
    const { stored, plan, asked } = await interruptedThenResumed(has('clashes'));
    expect(stored.calls.filter((c) => c.stage === 'clash').map((c) => c.error?.split(':')[0])).toEqual(['HOST_UNREACHABLE', 'HOST_UNREACHABLE', 'HOST_UNREACHABLE']);
    expect(plan.clashes).toBeUndefined();
    expect([...(plan.claims?.keys() ?? [])].sort()).toEqual(['a', 'b', 'c']);
    expect(of(asked, 'claims')).toHaveLength(0);
    expect(of(asked, 'clash')).toHaveLength(1);
  });

  it('a side of the targeted exchange: no outcome and no map are drawn, and resume holds the exchange again', async () => {
    const { stored, before, asked, after } = await interruptedThenResumed(has('stance'));
    expect(stored.tensions?.exchange ?? null).toBeNull();
    expect(stored.tensions?.status).toBe('incomplete');
    expect(of(before, 'map')).toHaveLength(0);
    expect(of(asked, 'targeted')).toHaveLength(2);
    expect(after.tensions!.exchange).toMatchObject({ tensionId: 'T1', outcome: 'resolved' });
  });

  it('the map call: the interrupted record holds no failed map, and resume draws it from the recorded board', async () => {
    const { stored, asked, after } = await interruptedThenResumed(has('majorFindings'));
    expect(stored.calls.filter((c) => c.agentId === 'tension-map').every((c) => c.error?.startsWith('HOST_UNREACHABLE'))).toBe(true);
    expect(stored.tensions?.status).toBe('incomplete');
    expect(stored.tensions?.error ?? null).toBeNull();
    expect(of(asked, 'claims')).toHaveLength(0);
    expect(of(asked, 'clash')).toHaveLength(0);
    expect(of(asked, 'map')).toHaveLength(1);
    expect(after.tensions!.map!.agents).toEqual(['a', 'b', 'c']);
  });
});

describe('the gaps of the tension map in the live view', () => {
  it('lists a claims call that failed once, in the first run and in the resumed one', async () => {
    const preset = testPreset(['a', 'b', 'c'], { tensions: {}, protocol: { maxRounds: 2, convergenceThreshold: 0.95, callTimeoutSeconds: 10 } });
    // A model that refuses b's claims call outright: a gap, and the board is mapped on a and c.
    const base = tensionResponder({ judge: [0.2] });
    const respond = (req: SimRequest) => (tensionStageOf(req) === 'claims' && panelistOf(req) === 'b' ? (base.seen.push(req), { error: 'no such thing', status: 400 }) : base.respond(req));
    sim = await startSimulator({ models: simModels(preset), respond });
    store = openStore(':memory:');
    const controller = new AbortController();
    // Stopped once round 1 is judged, so the resumed run reuses the board mapped on round 0.
    const stop = (e: DebateEvent): void => {
      if (e.type === 'round.judged' && e.judgement.round === 1) controller.abort();
    };
    const first = liveText();
    await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store), listeners: [stop, first.listener], signal: controller.signal }).catch(() => undefined);
    const stored = store.getDebate(store.listDebates()[0]!.id);
    expect(stored.status).toBe('interrupted');
    expect(first.text()).toContain('! no claims from b (');
    expect(count(first.text(), '! no claims from b (')).toBe(1);

    const plan = planResume(stored);
    expect(plan.clashes?.gaps).toHaveLength(1);
    const resumed = liveText();
    const result = await resumeDebate(stored, { host: sim.url, recorder: recorder(store, { resume: plan.point }), listeners: [resumed.listener] }, plan);
    expect(result.status).toBe('completed');
    expect(count(resumed.text(), '! no claims from b (')).toBe(1);
  });
});
