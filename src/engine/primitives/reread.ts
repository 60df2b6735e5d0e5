import { rateResult } from '../../protocol/quality.js';
import type { StoredCall } from '../../store/store.js';
import { reportRating } from '../call/quality.js';
import type { CallRequest } from '../call/request.js';
import type { Runner } from '../runner.js';
import { type StructuredOutcome, parseReply } from '../structured-call.js';

/**
 * The outcome of `req` read again from a call recorded before an interruption, reported as a
 * reused turn; null (ask it) unless that call ended ok, with this model, asking exactly this.
 */
export function rereadCall<T>(runner: Runner, req: CallRequest<T>, call: StoredCall | undefined): StructuredOutcome<T> | null {
  if (!call || call.status !== 'ok' || call.model !== req.model || call.round !== req.round || call.agentId !== req.agentId || call.stage !== req.stage) return null;
  // What it would send: the request with its material inserted. A repaired call was sent the same messages followed by the repair request.
  const sent = runner.prepareCall(req).prompt.messages;
  if (JSON.stringify(call.messages.slice(0, sent.length)) !== JSON.stringify(sent)) return null;
  const parsed = parseReply(call.raw, req.schema, req.normalize);
  if (!parsed.ok) return null;
  if (req.quality) {
    // Rated again as when it came in; one that asked for a retry or was rejected is asked again whole.
    const rating = rateResult(req.quality.facts(parsed.value), {
      repaired: call.attempt % 2 === 1,
      cutAtLimit: call.metrics.doneReason === 'length',
      truncatedPrompt: Boolean(call.truncation),
      normalized: parsed.notes?.length ?? 0,
    });
    if (rating.action === 'RETRY' || rating.action === 'REJECT') return null;
    reportRating(runner, req, 0, rating);
  }
  runner.emit({ type: 'turn.reused', round: req.round, agentId: req.agentId, callNumber: call.id, at: runner.now() });
  return { status: 'ok', value: parsed.value };
}
