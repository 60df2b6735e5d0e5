import { streamedAnswer } from '../protocol/partial-json.js';

/** How often a streaming call may redraw or send its text: at most once per this many ms. */
export const STREAM_INTERVAL_MS = 100;

/** What a streaming call has written so far, as every live view shows it. */
export interface StreamedCall {
  stage: string;
  round: number;
  agentId: string;
  tokens: number;
  /** True while tokens arrive with no answer text: the model is thinking. */
  thinking: boolean;
  field: string | null;
  text: string;
}

interface Entry {
  stage: string;
  round: number;
  agentId: string;
  raw: string;
  tokens: number;
  /** Calls under this key at once (a judge refereeing several matches): their text cannot be told apart. */
  calls: number;
  last: number;
  timer: NodeJS.Timeout | null;
  /** Cached field for the raw text as it was at `readAt` characters, and whether it was still thinking in `<think>` tags. */
  readAt: number;
  read: { field: string; text: string } | null;
  inThought: boolean;
}

/**
 * Follows the streamed tokens of every call in flight and calls `fire` for a call at most once
 * per `intervalMs` (the last change is never lost: a timer sends it when the interval ends).
 * The reply's answer field is read from the partial JSON only when it is fired, not per token.
 */
export class StreamTracker {
  readonly #calls = new Map<string, Entry>();
  readonly #fire: (call: StreamedCall) => void;
  readonly #now: () => number;
  readonly #intervalMs: number;
  #last: { key: string; e: Entry } | null = null;

  constructor(fire: (call: StreamedCall) => void, opts: { now?: () => number; intervalMs?: number } = {}) {
    this.#fire = fire;
    this.#now = opts.now ?? Date.now;
    this.#intervalMs = opts.intervalMs ?? STREAM_INTERVAL_MS;
  }

  static key(stage: string, round: number, agentId: string): string {
    return `${stage}\u0000${round}\u0000${agentId}`;
  }

  started(stage: string, round: number, agentId: string): void {
    const key = StreamTracker.key(stage, round, agentId);
    const held = this.#calls.get(key);
    if (held) {
      held.calls += 1;
      return;
    }
    this.#calls.set(key, { stage, round, agentId, raw: '', tokens: 0, calls: 1, last: Number.NEGATIVE_INFINITY, timer: null, readAt: -1, read: null, inThought: false });
  }

  progress(stage: string, round: number, agentId: string, tokens: number, delta: string): void {
    // Tokens of one call mostly come in runs: the last call found is looked at first, with no key built.
    const hit = this.#last;
    const key = hit && hit.e.agentId === agentId && hit.e.round === round && hit.e.stage === stage && this.#calls.get(hit.key) === hit.e ? hit.key : StreamTracker.key(stage, round, agentId);
    const e = key === hit?.key ? hit.e : this.#calls.get(key);
    if (!e) return;
    this.#last = { key, e };
    e.tokens = tokens;
    e.raw += delta;
    const since = this.#now() - e.last;
    if (since >= this.#intervalMs) this.#send(key, e);
    else if (e.timer === null) {
      e.timer = setTimeout(() => this.#send(key, e), this.#intervalMs - since);
      e.timer.unref?.();
    }
  }

  finished(stage: string, round: number, agentId: string): void {
    const key = StreamTracker.key(stage, round, agentId);
    const e = this.#calls.get(key);
    if (!e) return;
    e.calls -= 1;
    if (e.calls > 0) return;
    if (e.timer) clearTimeout(e.timer);
    this.#calls.delete(key);
  }

  /** The calls in flight, as last read. */
  current(): StreamedCall[] {
    return [...this.#calls.values()].map((e) => this.#view(e));
  }

  close(): void {
    for (const e of this.#calls.values()) if (e.timer) clearTimeout(e.timer);
    this.#calls.clear();
  }

  #send(key: string, e: Entry): void {
    if (e.timer) clearTimeout(e.timer);
    e.timer = null;
    if (this.#calls.get(key) !== e) return;
    e.last = this.#now();
    this.#fire(this.#view(e));
  }

  #view(e: Entry): StreamedCall {
    if (e.readAt !== e.raw.length) {
      const answer = streamedAnswer(e.raw, e.tokens);
      const hit = e.calls > 1 ? null : answer.hit;
      e.read = hit ? { field: hit.field, text: hit.text } : null;
      e.inThought = e.raw !== '' && answer.thinking;
      e.readAt = e.raw.length;
    }
    return { stage: e.stage, round: e.round, agentId: e.agentId, tokens: e.tokens, thinking: (e.raw === '' && e.tokens > 0) || e.inThought, field: e.read?.field ?? null, text: e.read?.text ?? '' };
  }
}
