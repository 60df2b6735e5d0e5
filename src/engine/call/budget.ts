import { admits, expectedReply } from '../../protocol/budget.js';
import { estimateMessagesTokens, estimateTokens } from '../../protocol/context.js';
import type { CallRecord } from '../call-record.js';
import type { CallContext } from './context.js';
import type { Prompt } from './material.js';
import { callLabel, type CallRequest } from './request.js';

/** A call the token budget let through: its estimate is held until `settle` counts what it really spent. */
export interface Admitted {
  ok: true;
  /** Counts a finished call's real tokens and adds the material it read and the budget to its record. */
  settle(record: CallRecord): CallRecord;
  /** Gives back the estimate of a call that ended without a record. */
  release(): void;
}

/**
 * The token budget's say on one request: skipped (its priority's share is spent; reported), or
 * admitted with its estimate held. Cuts made to its prompt are reported only once it runs.
 */
export function admit(ctx: CallContext, req: CallRequest<unknown>, prompt: Prompt): Admitted | { ok: false; error: string } {
  const { stage, round, agentId } = req;
  const priority = req.priority ?? ctx.priorityOf(agentId);
  const promptEstimate = estimateMessagesTokens(prompt.messages);
  const estimate = promptEstimate + expectedReply(req.options);
  const limit = ctx.tally.limit;
  const admitted = admits(priority, ctx.tally.used, estimate, limit);
  if (!admitted.ok) {
    ctx.budgetDecision({ kind: 'skip', stage, round, agentId, detail: `${callLabel(agentId, stage, round)} skipped (${priority} priority): ${admitted.reason}` });
    return { ok: false, error: `skipped by the token budget: ${admitted.reason}` };
  }
  for (const detail of [...(req.budgetCuts ?? []), ...(prompt.cut ? [prompt.cut] : [])]) {
    ctx.budgetDecision({ kind: 'truncate', stage, round, agentId, detail: `${callLabel(agentId, stage, round)}: ${detail}` });
  }
  ctx.tally.reserve(estimate);
  let held = true;
  const release = (): void => {
    if (held) ctx.tally.release(estimate);
    held = false;
  };
  return {
    ok: true,
    release,
    settle: (record) => {
      release();
      // A server that sends no token counts (an OpenAI-compatible one without `usage`) is counted by estimate: the prompt sent and the reply that came back.
      const actual = (record.metrics.promptTokens ?? promptEstimate) + (record.metrics.completionTokens ?? estimateTokens(`${record.thinking ?? ''}${record.raw}`));
      ctx.tally.add(actual);
      return {
        ...record,
        ...(prompt.uses.length ? { material: prompt.uses } : {}),
        ...(limit === null ? {} : { budget: { limit, priority, estimate, actual, used: ctx.tally.used, spent: ctx.tally.spent } }),
      };
    },
  };
}
