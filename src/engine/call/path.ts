import type { ThinkSetting } from '../../config/preset-schema.js';
import type { StructuredOutcome } from '../structured-call.js';
import { admit } from './budget.js';
import type { CallContext } from './context.js';
import { type Prompt, withMaterial } from './material.js';
import { OutageCount } from './outage.js';
import { ratedResult } from './quality.js';
import type { CallRequest } from './request.js';
import { send } from './send.js';
import { withThinking } from './thinking.js';

/**
 * The path every model call takes, one concern per module, in the order a call meets them:
 *
 * 1. quality.ts  an agent's result is rated, retried once or rejected (the rest of the path runs per request);
 * 2. thinking.ts `think` as chosen for the role, and room for the thinking in num_predict;
 * 3. material.ts the constraints and the attached material inserted into the prompt;
 * 4. budget.ts   admitted by the token budget, or skipped; counted when it ends;
 * 5. send.ts     scheduled within the model's slots, streamed, resent on a passing failure (retry.ts),
 *                validated and repaired once (structured-call.ts), and reported as `call.finished`,
 *                which the recorder writes;
 * 6. outage.ts   a request that never reached its host is counted as an outage, not an answer.
 */
export class CallPath {
  readonly outages = new OutageCount();

  constructor(private readonly ctx: CallContext) {}

  call<T>(req: CallRequest<T>): Promise<StructuredOutcome<T>> {
    return req.quality ? ratedResult(this.ctx, req, (r, first) => this.once(r, first)) : this.once(req, 0);
  }

  /** What a request sends: its thinking applied, then its constraints and material inserted (a resumed run compares a recorded call with it). */
  prepare<T>(asked: CallRequest<T>): { req: CallRequest<T> & { think?: ThinkSetting }; prompt: Prompt } {
    const req = withThinking(asked, this.ctx.thinkingOf(asked.agentId, asked.model), this.ctx.preset.protocol.maxAnswerTokens);
    return { req, prompt: withMaterial(this.ctx, req as CallRequest<unknown>) };
  }

  /** One request and its repair. */
  async once<T>(asked: CallRequest<T>, firstAttempt: number): Promise<StructuredOutcome<T>> {
    const { req, prompt } = this.prepare(asked);
    const admitted = admit(this.ctx, req as CallRequest<unknown>, prompt);
    if (!admitted.ok) return { status: 'skipped', error: admitted.error };
    try {
      const outcome = await send(this.ctx, req, prompt.messages, admitted.settle, firstAttempt);
      this.outages.count(outcome, req.model);
      return outcome;
    } finally {
      admitted.release();
    }
  }
}
