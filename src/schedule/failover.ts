import { CallError, type CallErrorCode, type ModelServer } from '../backend/types.js';
import type { SlotPool } from './pool.js';

/** Another server of the pool for a send that failed because its host left, or null (see `onPool`). */
export type Elsewhere = (from: string, err: unknown) => Promise<ModelServer | null>;

/**
 * Runs one call within its model's slots on the pool. `fn` is given the server and `elsewhere`:
 * asked with a send that failed, it returns another server of the pool to send it to at once when
 * that send's host has left (`leftPool`), else null. `say` (and the pool's `notice`) hears, once, that
 * a host left, and that one is back when a call sent to it after it left reached it.
 */
export async function onPool<T>(pool: SlotPool, model: string, serverOf: (host: string) => ModelServer, fn: (server: ModelServer, elsewhere: Elsewhere) => Promise<T>, say?: (message: string) => void): Promise<T> {
  const tell = (message: string): void => {
    say?.(message);
    pool.notice?.(message);
  };
  const lease = await pool.lease(model);
  // The host being tried again after it left, until the call finds it has not come back.
  let probed = lease.probe ? lease.host : null;
  const elsewhere: Elsewhere = async (from, err) => {
    // A lone host is no pool: its outage stops the run as it always has.
    if (pool.hostCount < 2 || !leftPool(err, from === probed)) return null;
    if (from === probed) probed = null;
    if (pool.leave(from)) tell(leftWords(from, err, model, pool.hostsFor(model).filter((u) => u !== from), pool.rejoinAfterMs));
    if (!pool.servedElsewhere(model, from)) return null;
    await pool.move(lease);
    if (lease.probe) probed = lease.host;
    return serverOf(lease.host);
  };
  try {
    const result = await fn(serverOf(lease.host), elsewhere);
    if (probed !== null && pool.back(probed)) tell(backWords(probed));
    return result;
  } finally {
    pool.release(lease);
  }
}

/** Failures of a server that is there but not ready: a host being tried again that answers so has not come back yet. */
const NOT_READY: ReadonlySet<CallErrorCode> = new Set(['HOST_BUSY', 'SERVER_ERROR', 'STREAM_ERROR', 'STREAM_INCOMPLETE']);

/**
 * Whether a failed send says its host has left the pool: it refused the connection (a server
 * switched off or crashed), or, for a host that had left and is being tried again, it failed
 * for any passing reason (a server still loading its models after a restart is not back yet).
 * A reply cut off mid-stream reached its host, so it is resent there first, as on a lone host.
 */
export function leftPool(err: unknown, probing: boolean): boolean {
  if (!(err instanceof CallError)) return false;
  return err.code === 'HOST_UNREACHABLE' || (probing && NOT_READY.has(err.code as CallErrorCode));
}

/** What the user is told, once, when a host leaves: which, why, and where the calls of the model that found it gone go now. */
export function leftWords(host: string, err: unknown, model: string, others: readonly string[], rejoinAfterMs: number): string {
  const where = others.length === 0 ? `no other host serves \`${model}\`` : `calls of \`${model}\` go to ${others.join(', ')}`;
  return `Host ${host} left the pool (${why(err)}): ${where}; it is tried again every ${Math.round(rejoinAfterMs / 1000)} s.`;
}

/** The connection's own failure, where the error carries one (a refused or reset connection); else the error's message. */
function why(err: unknown): string {
  let e: unknown = err;
  // The gateway's error, undici's `fetch failed`, then the socket's own: a few causes deep at most.
  for (let depth = 0; depth < 5 && typeof e === 'object' && e !== null; depth++, e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (code === 'ECONNREFUSED') return 'it refused the connection';
    if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'it reset the connection';
  }
  return (err instanceof Error ? err.message : String(err)).replace(/\.$/, '');
}

/** What the user is told when a host that left answers again. */
export function backWords(host: string): string {
  return `Host ${host} is back in the pool: it answered again.`;
}
