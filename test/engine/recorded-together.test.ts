import { afterEach, describe, expect, it } from 'vitest';
import type { DebateEvent, DebateListener } from '../../src/engine/events.js';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { isRetry, scriptedResponder, simModels, testPreset } from '../helpers/panel.js';

let sim: SimHandle | null = null;

afterEach(async () => {
  await sim?.close();
  sim = null;
});

const preset = testPreset(['ada', 'bo', 'cy'], { protocol: { maxRounds: 2, convergenceThreshold: 0.99, callTimeoutSeconds: 10 } as never });

/** A recorder stand-in that notes how the runner hands it events: one by one, or as a group. */
function groupingRecorder(): { listener: DebateListener; writes: (DebateEvent | DebateEvent[])[] } {
  const writes: (DebateEvent | DebateEvent[])[] = [];
  const listener = Object.assign((e: DebateEvent) => void writes.push(e), { progress: false, together: (events: readonly DebateEvent[]) => void writes.push([...events]) });
  return { listener, writes };
}

const kinds = (write: DebateEvent | DebateEvent[]): string => (Array.isArray(write) ? write.map((e) => e.type).join('+') : write.type);

describe('events that happen at once', () => {
  it('reach the recorder together (each rated call with its rating, each round its turns) and display listeners one by one, in the same order', async () => {
    sim = await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.2, 0.3, 0.4]).respond });
    const { listener, writes } = groupingRecorder();
    const shown: DebateEvent[] = [];
    await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: listener, listeners: [(e) => shown.push(e)] });

    const groups = writes.filter(Array.isArray).map(kinds);
    // 3 agents × 3 rounds: every agent's call comes with its rating, and every round's turns come at once.
    expect(groups.filter((g) => g === 'call.finished+quality.rated')).toHaveLength(9);
    expect(groups.filter((g) => g === 'turn.finished+turn.finished+turn.finished')).toHaveLength(3);
    // Each judge's reply with the round's score and stances; the synthesizer's reply with the synthesis.
    expect(groups.filter((g) => g === 'call.finished+round.judged+protocol.step')).toHaveLength(3);
    expect(groups.filter((g) => g === 'call.finished+synthesis.finished')).toHaveLength(1);
    expect(writes.filter((w) => !Array.isArray(w) && (w.type === 'round.judged' || w.type === 'synthesis.finished'))).toEqual([]);
    // No rating is ever written apart from the call it rates.
    expect(writes.filter((w) => !Array.isArray(w) && w.type === 'quality.rated')).toEqual([]);
    for (const group of writes.filter(Array.isArray)) {
      const rating = group.find((e) => e.type === 'quality.rated');
      const call = group.find((e) => e.type === 'call.finished');
      if (rating && call && rating.type === 'quality.rated' && call.type === 'call.finished') {
        expect([call.call.agentId, call.call.stage, call.call.round]).toEqual([rating.rating.agentId, rating.rating.stage, rating.rating.round]);
      }
    }
    // A display listener sees every event the recorder saw, one by one and in the same order.
    const writing = new Set(writes.flat().map((e) => e));
    expect(shown.filter((e) => writing.has(e))).toEqual(writes.flat());
  });

  it('writes a failed try the moment it ends, and puts the repair that answered with its rating', async () => {
    // ada's first opening is not JSON: the call path asks again (a repair), then rates the answer.
    let broken = false;
    const script = scriptedResponder([0.2], (req) => {
      if (!broken && req.model === 'model-0:1b' && !isRetry(req)) {
        broken = true;
        return { content: 'not json at all' };
      }
      return undefined;
    });
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    const { listener, writes } = groupingRecorder();
    await runDebate({ question: 'Should we do A?', preset: { ...preset, protocol: { ...preset.protocol, maxRounds: 0 } }, host: sim.url, recorder: listener });
    // The invalid reply is its own write, before the repair and its rating: a crash during the
    // repair cannot lose it, and the record keeps the order in which the tries ended.
    const ada = writes.filter((w) => (Array.isArray(w) ? w : [w]).some((e) => (e.type === 'call.finished' && e.call.agentId === 'ada') || (e.type === 'quality.rated' && e.rating.agentId === 'ada' && e.rating.round === 0)));
    const first = ada[0]!;
    expect(Array.isArray(first) ? null : first.type === 'call.finished' ? first.call.status : null).toBe('invalid');
    expect(kinds(ada[1]!)).toBe('call.finished+quality.rated');
    expect(writes.filter(Array.isArray).map(kinds)).not.toContain('call.finished+call.finished+quality.rated');
  });

  it("writes a judge's failed try the moment it ends, and its repair with the round's score", async () => {
    // The judge's first reply is cut off; its repair is answered as the judge would have answered the round.
    const plain = scriptedResponder([0.2]);
    let asked: Parameters<typeof plain.respond>[0] | null = null;
    const script = scriptedResponder([0.2], (req) => {
      if (req.model !== 'judge:1b') return undefined;
      if (asked === null) {
        asked = req;
        return { content: '{"consensus": ' };
      }
      return plain.respond(asked);
    });
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    const { listener, writes } = groupingRecorder();
    await runDebate({ question: 'Should we do A?', preset: { ...preset, protocol: { ...preset.protocol, maxRounds: 0 } }, host: sim.url, recorder: listener });
    const judge = writes.filter((w) => (Array.isArray(w) ? w : [w]).some((e) => (e.type === 'call.finished' && e.call.agentId === 'judge') || e.type === 'round.judged'));
    const first = judge[0]!;
    expect(Array.isArray(first) ? null : first.type === 'call.finished' ? first.call.status : null).toBe('invalid');
    expect(kinds(judge[1]!)).toBe('call.finished+round.judged+protocol.step');
    expect(judge).toHaveLength(2);
  });

  it('are written by the recorder in one transaction each, and the record verifies as one written event by event does', async () => {
    sim = await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.2, 0.3, 0.4]).respond });
    const run = async (grouped: boolean) => {
      const s = openStore(':memory:');
      let transactions = 0;
      const recorded = s.recorded.bind(s);
      s.recorded = <T>(id: string, fn: () => T): T => {
        transactions++;
        return recorded(id, fn);
      };
      const r = recorder(s);
      // Without `together`, the runner hands the recorder every event on its own.
      const listener = grouped ? r : Object.assign((e: DebateEvent) => r(e), { progress: false, drain: r.drain, unwritten: r.unwritten });
      const result = await runDebate({ question: 'Should we do A?', preset, host: sim!.url, recorder: listener });
      const debate = s.getDebate(result.id);
      const out = { transactions, calls: debate.calls.length, turns: debate.turns.length, verdict: s.verifyDebate(result.id) };
      s.close();
      return out;
    };
    const grouped = await run(true);
    const single = await run(false);
    // 9 agents' calls, 3 judge calls, 1 synthesis; 9 turns in 3 rounds.
    expect([grouped.calls, grouped.turns]).toEqual([13, 9]);
    expect([single.calls, single.turns]).toEqual([13, 9]);
    // Each of the 9 ratings goes with its call, each round's 3 turns go in one write, each judge's
    // call with its score and its stances step, and the synthesizer's call with the synthesis.
    expect(single.transactions - grouped.transactions).toBe(9 + 3 * 2 + 3 * 2 + 1);
    // The start, 9 rated calls, 3 rounds of turns, 3 judgements, the synthesis, the end: the
    // reason for the exit writes no row of its own, so it costs no transaction.
    expect(grouped.transactions).toBe(1 + 9 + 3 + 3 + 1 + 1);
    expect(grouped.verdict).toMatchObject({ state: 'sealed', calls: 13 });
    expect(single.verdict).toMatchObject({ state: 'sealed', calls: 13 });
  });
});
