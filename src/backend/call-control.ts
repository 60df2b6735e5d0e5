import { type CallControl, CallError } from './types.js';

/** A call's own abort, fired by its time limit or by the caller's signal. */
export interface CallAbort {
  readonly controller: AbortController;
  readonly timeoutMs: number;
  timedOut(): boolean;
  /** Clears the timer and the listener on the caller's signal. */
  dispose(): void;
}

/**
 * One controller per call, aborted by the time limit or by the caller's signal (through
 * `whenAborted`, cheaper than AbortSignal.any per call). Default limit 600 s.
 */
export function callAbort(control: CallControl): CallAbort {
  const timeoutMs = control.timeoutMs ?? 600_000;
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('timeout'));
  }, timeoutMs);
  let forget = (): void => {};
  if (control.signal?.aborted) controller.abort(control.signal.reason);
  else if (control.signal) forget = whenAborted(control.signal, () => controller.abort(control.signal?.reason));
  return {
    controller,
    timeoutMs,
    timedOut: () => timedOut,
    dispose: () => {
      clearTimeout(timer);
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
  ctx: { timedOut: boolean; aborted: boolean; timeoutMs: number; answered?: boolean; host?: string },
): CallError | null {
  if (ctx.aborted) return new CallError('CALL_ABORTED', `The call to ${who} was stopped.`, { cause: err });
  if (ctx.timedOut) {
    // Tenths under ten seconds: a timeout of 100 ms is not `within 0 s`.
    const seconds = ctx.timeoutMs >= 10_000 ? Math.round(ctx.timeoutMs / 1000) : Math.round(ctx.timeoutMs / 100) / 10;
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
