import { stallMsOf } from '../../backend/call-control.js';
import type { ThinkSetting } from '../../config/preset-schema.js';
import type { ChatMessage } from '../../protocol/records.js';
import type { CallRecord } from '../call-record.js';
import { type StructuredOutcome, structuredCall } from '../structured-call.js';
import type { CallContext } from './context.js';
import type { CallRequest } from './request.js';

/**
 * Sends one request within its model's slots on a host that serves it: streamed, validated,
 * resent on a passing failure (retry.ts), at once on another host of the pool when its host has
 * left (schedule/failover.ts), repaired once (structured-call.ts). Each call is
 * reported as it ends (`call.finished`, which the recorder writes) after `settle` has counted it.
 */
export function send<T>(ctx: CallContext, req: CallRequest<T> & { think?: ThinkSetting }, messages: ChatMessage[], settle: (record: CallRecord) => CallRecord, firstAttempt: number): Promise<StructuredOutcome<T>> {
  const { stage, round, agentId, model } = req;
  return ctx.scheduler.call(model, (gateway, elsewhere) =>
    structuredCall(
      gateway,
      {
        debateId: ctx.id,
        stage,
        round,
        agentId,
        model,
        messages,
        options: req.options,
        // Every key present, unset ones undefined: one shape for every call, and no conditional spreads to copy.
        think: req.think,
        schema: req.schema,
        format: req.format,
        normalize: req.normalize,
        check: req.check,
        truncation: req.truncation ?? null,
        firstAttempt,
        timeoutMs: ctx.preset.protocol.callTimeoutSeconds * 1000,
        stallMs: stallMsOf(ctx.preset.protocol),
        signal: ctx.signal,
        retryDelaysMs: ctx.retryDelaysMs,
      },
      {
        now: ctx.now,
        elsewhere,
        onStart: (attempt) => ctx.emit({ type: 'turn.started', stage, round, agentId, model, attempt, at: ctx.now() }),
        onProgress: ctx.streamsProgress ? (tokens: number, delta: string, thought?: string) => ctx.emit(thought ? { type: 'turn.progress', stage, round, agentId, tokens, delta, thought } : { type: 'turn.progress', stage, round, agentId, tokens, delta }) : undefined,
        onCall: (bare) => {
          const record = settle(bare);
          const finished = { type: 'call.finished', call: record } as const;
          // Only the reply that gets rated waits for its rating; a failed try is written the moment
          // it ends, so a crash during the resend that follows cannot lose it, and the record keeps
          // the order in which the tries ended.
          if (req.held && record.status === 'ok') req.held.push(finished);
          else ctx.emit(finished);
          req.onRecord?.(record);
        },
      },
    ),
  );
}
