import { CallError } from '../../backend/types.js';
import { whenAborted } from '../../backend/call-control.js';

/**
 * Waits before each repeat of a request that failed for a passing reason: a runner that
 * crashed (HTTP 500), an error line mid-stream, a stream that ended without `done`, a
 * connection that was refused or reset while Ollama restarted, or a server too busy to take it
 * (503, 429). Two repeats, 0.5 s then 2 s: enough for Ollama to start a new runner, far inside
 * the 30 s a turn may wait. A busy server's `Retry-After` is waited out instead when it is
 * longer, up to RETRY_AFTER_CAP_MS.
 */
export const TRANSIENT_RETRY_DELAYS_MS: readonly number[] = [500, 2000];

/** The longest `Retry-After` honoured: a server that asks for more is sent the request after this. */
export const RETRY_AFTER_CAP_MS = 10_000;

/** Whether a failed request may succeed if sent again unchanged. A 404, a 400, a timeout or a stop never does. */
export function isTransient(err: unknown): boolean {
  if (!(err instanceof CallError)) return false;
  switch (err.code) {
    case 'SERVER_ERROR':
    case 'STREAM_ERROR':
    case 'STREAM_INCOMPLETE':
    case 'HOST_UNREACHABLE':
    case 'HOST_BUSY':
      return true;
    default:
      return false;
  }
}

/**
 * Sends `request` until it succeeds, fails for good, or the delays run out. Every failed
 * send is handed to `onFailure` (to be recorded) and `onResend` runs just before the next; the last error is thrown.
 */
export async function withTransientRetry<T>(
  request: () => Promise<T>,
  onFailure: (err: unknown) => void,
  delaysMs: readonly number[] = TRANSIENT_RETRY_DELAYS_MS,
  signal?: AbortSignal,
  onResend?: () => void,
): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await request();
    } catch (err) {
      if (!isTransient(err) || retry >= delaysMs.length || signal?.aborted) throw err;
      onFailure(err);
      const asked = err instanceof CallError && err.retryAfterMs !== null ? Math.min(err.retryAfterMs, RETRY_AFTER_CAP_MS) : 0;
      if (!(await pause(Math.max(delaysMs[retry]!, asked), signal))) throw new CallError('CALL_ABORTED', 'The call was stopped while waiting to be sent again.', { cause: err });
      onResend?.();
    }
  }
}

function pause(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const timer = setTimeout(() => {
      forget();
      resolve(true);
    }, ms);
    const forget = signal
      ? whenAborted(signal, () => {
          clearTimeout(timer);
          resolve(false);
        })
      : () => {};
  });
}
