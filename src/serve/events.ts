import { createHash } from 'node:crypto';
import type { DebateEvent } from '../engine/events.js';
import { storedEvents } from '../render/replay.js';
import type { StoredCall, StoredDebate } from '../store/store.js';

/**
 * A replay shows the calls behind turns; the viewer's calls table wants every call.
 * Judge calls go before their round's judgement, the rest before the synthesis.
 */
function withEveryCall(d: StoredDebate, events: DebateEvent[]): DebateEvent[] {
  const shown = new Set<number>();
  for (const e of events) {
    if (e.type === 'call.finished') shown.add((e.call as StoredCall).id);
    if (e.type === 'vote.cast') for (const c of e.calls) shown.add((c as StoredCall).id);
  }
  const missing = d.calls.filter((c) => !shown.has(c.id));
  if (missing.length === 0) return events;
  const out: DebateEvent[] = [];
  const take = (pick: (c: StoredCall) => boolean): void => {
    for (const c of missing.filter(pick)) out.push({ type: 'call.finished', call: c });
  };
  for (const e of events) {
    if (e.type === 'round.judged') take((c) => c.stage === 'judge' && c.round === e.judgement.round);
    if (e.type === 'synthesis.finished' || e.type === 'debate.finished') take((c) => !out.some((x) => x.type === 'call.finished' && x.call === c));
    out.push(e);
  }
  take((c) => !out.some((x) => x.type === 'call.finished' && x.call === c));
  return out;
}

/**
 * The events of a debate as far as the record goes, each sent once. A running
 * debate's record grows between polls, and calls of one round can land after turns
 * already sent, so events are told apart by content (without their timestamps)
 * rather than by position. An event whose content changed (a turn recorded again
 * after a repair) is sent again; the page treats every event as "set", never "add".
 */
export class EventCursor {
  readonly #sent = new Set<string>();

  /** Events of this snapshot not sent before, in the order a replay gives them. */
  next(d: StoredDebate): DebateEvent[] {
    const out: DebateEvent[] = [];
    for (const event of withEveryCall(d, storedEvents(d))) {
      // Until the runner finishes, the replay's closing event would be a guess.
      if (d.status === 'running' && event.type === 'debate.finished') continue;
      const key = createHash('sha1')
        .update(JSON.stringify(event, (k, v: unknown) => (k === 'at' ? undefined : v)))
        .digest('base64');
      if (this.#sent.has(key)) continue;
      this.#sent.add(key);
      out.push(event);
    }
    return out;
  }
}
