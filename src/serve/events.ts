import { createHash } from 'node:crypto';
import type { DebateEvent } from '../engine/events.js';
import { storedEvents } from '../render/replay.js';
import type { StoredDebate } from '../store/store.js';

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
    for (const event of storedEvents(d)) {
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
