import type { CallRecord } from '../events.js';
import type { StructuredOutcome } from '../structured-call.js';

/**
 * A request that never reached a model: its host refused or dropped the connection through
 * every resend. It says nothing about the model, so it ends the run `interrupted`, never `failed`.
 */
export function isOutage(outcome: StructuredOutcome<unknown>): boolean {
  return outcome.status === 'failed' && outcome.code === 'HOST_UNREACHABLE';
}

/** A recorded call that failed because its host could not be reached: `resume` asks it again. */
export function neverReached(call: Pick<CallRecord, 'status' | 'error'>): boolean {
  return call.status === 'error' && (call.error?.startsWith('HOST_UNREACHABLE') ?? false);
}
