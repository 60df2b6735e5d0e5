import { QUALITY_RULES, type QualityRating, type ResultFacts, rateResult } from '../../protocol/quality.js';
import { type Opening, openingSchema } from '../../protocol/schemas.js';
import type { CallRecord, Stage } from '../call-record.js';
import type { DebateEvent } from '../events.js';
import type { StructuredOutcome } from '../structured-call.js';
import type { CallContext } from './context.js';
import { withConstraints } from './material.js';
import { type CallRequest, QUALITY_REJECTED } from './request.js';

/** One request through the rest of the path: `firstAttempt` 0, or 2 for a quality retry. */
export type SendOnce = <T>(req: CallRequest<T>, firstAttempt: number) => Promise<StructuredOutcome<T>>;

/**
 * An agent result, rated (docs/quality.md): a usable result is rated and reported; one to retry
 * is asked again once with the simplified prompt (the constraints kept), and a rejected one comes
 * back as failed (QUALITY_REJECTED), which protocols treat as a failed turn.
 */
export async function ratedResult<T>(ctx: CallContext, req: CallRequest<T>, once: SendOnce): Promise<StructuredOutcome<T>> {
  const hook = req.quality!;
  const first = await rated(ctx, req, 0, once, hook.facts);
  if (first.outcome.status !== 'ok' || !first.rating) return first.outcome;
  let kept = { value: first.outcome.value, rating: first.rating };
  reportRating(ctx, req, 0, first.rating, first.held);
  if (first.rating.action === 'RETRY' && ctx.interrupted()) {
    kept = { value: kept.value, rating: { ...kept.rating, action: 'WARN', reasons: [...kept.rating.reasons, 'not asked again: the debate was stopped'] } };
    reportRating(ctx, req, 1, kept.rating);
  } else if (first.rating.action === 'RETRY') {
    ctx.warn(`${req.agentId}, ${req.stage} ${req.round}: quality ${first.rating.score} (RETRY), asking again once with the question alone`);
    const retryReq: CallRequest<Opening> = {
      stage: req.stage,
      round: req.round,
      agentId: req.agentId,
      model: req.model,
      messages: withConstraints(ctx, hook.retry),
      options: req.options,
      schema: openingSchema,
      ...(req.onRecord ? { onRecord: req.onRecord } : {}),
    };
    const again = await rated(ctx, retryReq, 2, once, (v) => ({ position: v.position, reasoning: v.reasoning, confidence: v.confidence, tradeOffs: v.tradeOffs?.length ?? 0, constraints: v.constraints?.length ?? 0 }), true);
    let held: DebateEvent[] = [];
    if (again.outcome.status === 'ok' && again.rating) {
      kept = { value: hook.fromRetry(again.outcome.value), rating: again.rating };
      held = again.held;
    } else {
      // The first answer was weak but usable: it is kept, and says why.
      const why = again.outcome.status === 'ok' ? 'no rating' : again.outcome.error;
      kept = { value: kept.value, rating: { ...kept.rating, action: 'WARN', reasons: [...kept.rating.reasons, `its retry got no usable reply (${why}); the first reply is kept`] } };
    }
    reportRating(ctx, req, 1, kept.rating, held);
  }
  const { rating } = kept;
  if (rating.action === 'REJECT') {
    const error = `rejected by the quality check (score ${rating.score}): ${rating.reasons.join('; ')}`;
    ctx.warn(`${req.agentId}, ${req.stage} ${req.round}: quality ${rating.score} (REJECT), its answer is left out; peers and the synthesis do not read it`);
    return { status: 'failed', error, code: QUALITY_REJECTED };
  }
  if (rating.score < QUALITY_RULES.warn) ctx.warn(`${req.agentId}, ${req.stage} ${req.round}: low quality score (${rating.score}), the answer may lack depth`);
  return { status: 'ok', value: kept.value };
}

/**
 * A call whose usable result is rated from its value and the calls that produced it. Its
 * `call.finished` events are held back for the caller to report with the rating (`held`), so
 * the recorder writes a call and its rating in one transaction; without a rating, they are
 * reported here.
 */
async function rated<T>(ctx: CallContext, req: CallRequest<T>, firstAttempt: number, once: SendOnce, facts: (value: T) => ResultFacts, retried = false): Promise<{ outcome: StructuredOutcome<T>; rating: QualityRating | null; held: DebateEvent[] }> {
  const records: CallRecord[] = [];
  const held: DebateEvent[] = [];
  let outcome: StructuredOutcome<T>;
  try {
    outcome = await once({ ...req, held, onRecord: (r) => { records.push(r); req.onRecord?.(r); } }, firstAttempt);
  } catch (err) {
    ctx.emitTogether(held);
    throw err;
  }
  const accepted = records.at(-1);
  if (outcome.status !== 'ok' || !accepted) {
    ctx.emitTogether(held);
    return { outcome, rating: null, held: [] };
  }
  try {
    const rating = rateResult(
      facts(outcome.value),
      {
        repaired: accepted.attempt > firstAttempt,
        cutAtLimit: accepted.metrics.doneReason === 'length',
        truncatedPrompt: Boolean(records[0]?.truncation),
        normalized: accepted.normalized?.length ?? 0,
      },
      retried,
    );
    return { outcome, rating, held };
  } catch (err) {
    ctx.emitTogether(held);
    throw err;
  }
}

/** Reports a rating (recorded, shown live and on the card), after the calls it rates when they were held back. */
export function reportRating(ctx: CallContext, req: { stage: Stage; round: number; agentId: string }, tryNumber: number, rating: QualityRating, held: readonly DebateEvent[] = []): void {
  ctx.emitTogether([...held, { type: 'quality.rated', rating: { stage: req.stage, round: req.round, agentId: req.agentId, try: tryNumber, ...rating }, at: ctx.now() }]);
}
