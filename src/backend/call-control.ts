import { type CallControl, CallError } from './types.js';

/** A call's own abort, fired by its time limit or by the caller's signal. */
export interface CallAbort {
  readonly controller: AbortController;
  readonly timeoutMs: number;
  timedOut(): boolean;
  /**
   * A piece of the reply's body arrived; `token`: a token has arrived by now, which arms the watch
   * for a stall. Before the first token nothing is watched but the time limit: a model loading or
   * evaluating a long prompt sends nothing for minutes.
   */
  heard(token: boolean): void;
  /** How long the reply went silent before it was cut, or null when it was not. */
  stalledMs(): number | null;
  /** Clears the timer and the listener on the caller's signal. */
  dispose(): void;
}

/**
 * How long a reply that has begun may send nothing before it is cut (`protocol.stallSeconds`). A
 * host that loses power or its network mid-reply sends no reset: its stream just stops. Sixty
 * seconds is some thirty times the slowest token seen (a 70B model on a CPU alone, one to two s a
 * token), and a thinking model streams its thinking, so a reply that is still being written is never cut.
 */
export const STALL_MS = 60_000;

/** The stall limit a preset's protocol asks for, in ms. */
export function stallMsOf(protocol: { stallSeconds?: number | undefined }): number {
  return protocol.stallSeconds === undefined ? STALL_MS : protocol.stallSeconds * 1000;
}

/**
 * One controller per call, aborted by the time limit, by the caller's signal (through
 * `whenAborted`, cheaper than AbortSignal.any per call), or by a reply that went silent after its
 * first token (`heard`). Default limit 600 s.
 */
export function callAbort(control: CallControl): CallAbort {
  const timeoutMs = control.timeoutMs ?? 600_000;
  const stallMs = control.stallMs ?? STALL_MS;
  const controller = new AbortController();
  let timedOut = false;
  let stalled: number | null = null;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('timeout'));
  }, timeoutMs);
  // One timer per call, not one per chunk: when it fires it waits again for what is left since the last chunk.
  let lastHeard = 0;
  let watch: NodeJS.Timeout | null = null;
  const check = (): void => {
    const silent = performance.now() - lastHeard;
    if (silent < stallMs) {
      watch = setTimeout(check, stallMs - silent);
      return;
    }
    watch = null;
    stalled = stallMs;
    controller.abort(new Error('stalled'));
  };
  let forget = (): void => {};
  if (control.signal?.aborted) controller.abort(control.signal.reason);
  else if (control.signal) forget = whenAborted(control.signal, () => controller.abort(control.signal?.reason));
  return {
    controller,
    timeoutMs,
    timedOut: () => timedOut,
    heard: (token) => {
      if (!token || stalled !== null || controller.signal.aborted) return;
      lastHeard = performance.now();
      watch ??= setTimeout(check, stallMs);
    },
    stalledMs: () => stalled,
    dispose: () => {
      clearTimeout(timer);
      if (watch) clearTimeout(watch);
      forget();
    },
  };
}

const watchers = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Runs `fn` when `signal` aborts; returns the function that forgets it. A debate's calls all share
 * its signal: one listener per signal fans out to them, so thirty votes in flight add no thirty
 * listeners (Node warns past ten, in the middle of the output).
 */
export function whenAborted(signal: AbortSignal, fn: () => void): () => void {
  let waiting = watchers.get(signal);
  if (!waiting) {
    const set = new Set<() => void>();
    waiting = set;
    watchers.set(signal, set);
    signal.addEventListener(
      'abort',
      () => {
        for (const f of [...set]) f();
        set.clear();
      },
      { once: true },
    );
  }
  waiting.add(fn);
  const set = waiting;
  return () => {
    set.delete(fn);
  };
}

/** The error of a call that was stopped or ran out of time, whatever it failed with; null when it was neither. */
export function stoppedError(
  err: unknown,
  who: string,
  ctx: { timedOut: boolean; aborted: boolean; timeoutMs: number; answered?: boolean; host?: string; stalledMs?: number | null },
): CallError | null {
  if (ctx.aborted) return new CallError('CALL_ABORTED', `The call to ${who} was stopped.`, { cause: err });
  if (ctx.stalledMs !== undefined && ctx.stalledMs !== null) return stalledMidReply(ctx.host ?? who, who, ctx.stalledMs, err);
  if (ctx.timedOut) {
    const seconds = secondsOf(ctx.timeoutMs);
    const where = ctx.host === undefined || ctx.host === who ? who : `${who} on ${ctx.host}`;
    // Nothing at all (Ollama sends no headers before the first token): the model was loading, or the call waited for a slot.
    if (ctx.answered === false) {
      return new CallError('CALL_TIMEOUT', `${where} sent nothing within ${seconds} s: the server was still loading the model, or the call waited behind others for a slot.`, {
        hint: 'Raise `protocol.callTimeoutSeconds` in the preset if the model loads slowly (a large model, a slow disk), or lower the concurrency so fewer calls wait for a slot.',
        cause: err,
      });
    }
    return new CallError('CALL_TIMEOUT', `${where} did not finish within ${seconds} s.`, {
      hint: 'Raise `protocol.callTimeoutSeconds` in the preset, or use a smaller model.',
      cause: err,
    });
  }
  return null;
}

/** Whether a call failed because its connection broke (reset, closed by the other side), not because nothing answered. */
export function brokenConnection(err: unknown): boolean {
  const e = err as { message?: unknown; code?: unknown; cause?: { code?: unknown; message?: unknown } } | null;
  return /ECONNRESET|EPIPE|UND_ERR_SOCKET|other side closed|socket hang up/i.test(`${String(e?.message ?? '')} ${String(e?.code ?? '')} ${String(e?.cause?.code ?? '')} ${String(e?.cause?.message ?? '')}`);
}

/**
 * A connection that broke once the reply had begun: the server was reached, so this is no outage
 * (a server that is down refuses the resend, and that is one); the call is sent again.
 */
export function cutMidReply(host: string, model: string, cause: unknown): CallError {
  const e = cause as { code?: unknown; cause?: { code?: unknown } } | null;
  const code = typeof e?.code === 'string' ? e.code : typeof e?.cause?.code === 'string' ? e.cause.code : '';
  return new CallError('STREAM_INCOMPLETE', `The connection to ${host} broke in the middle of ${model}'s reply${code ? ` (${code})` : ''}.`, {
    hint: "The server stopped or restarted, or a proxy in front of it dropped the connection: check the server's log (a crash, an out-of-memory kill) and the proxy's timeouts.",
    cause,
  });
}

/**
 * A reply that began and then went silent for the stall limit: cut, and resent like a reply cut
 * short. The host is no outage for that (it answered); a resend that cannot connect makes it one.
 */
export function stalledMidReply(host: string, model: string, stallMs: number, cause: unknown): CallError {
  return new CallError('STREAM_INCOMPLETE', `${host} stopped sending in the middle of ${model}'s reply: nothing came for ${secondsOf(stallMs)} s (a host that lost power or its network, or a server that hangs).`, {
    hint: 'Check that the host is on and reachable, and its server\'s log. A model that really pauses that long between tokens needs a larger `protocol.stallSeconds` in the preset.',
    cause,
  });
}

/** Tenths under ten seconds: a limit of 100 ms is not `0 s`. */
function secondsOf(ms: number): number {
  return ms >= 10_000 ? Math.round(ms / 1000) : Math.round(ms / 100) / 10;
}

/** How long a facts request (tags, ps, show, version) may take; each answers at once from a working server. */
export const FACTS_TIMEOUT_MS = 30_000;

/** A server that took the connection and did not answer a facts request in time. */
export function silentHost(host: string, where: string, timeoutMs: number, cause: unknown): CallError {
  return new CallError('HOST_UNREACHABLE', `${host} took the connection but did not answer ${where} within ${Math.round(timeoutMs / 100) / 10} s.`, {
    hint: 'Check that the server at that url is running and not stuck (restart it), and that no proxy in front of it holds requests.',
    cause,
  });
}

/**
 * A `Retry-After` header in ms: whole seconds, or an HTTP date (from `now`); null when absent or
 * unreadable. Never negative.
 */
export function retryAfterMs(header: string | null | undefined, now = Date.now()): number | null {
  if (header === null || header === undefined) return null;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
