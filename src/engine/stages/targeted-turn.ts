import { errorMessage } from '../../errors.js';
import { targetedMessages } from '../../protocol/tension-prompts.js';
import { type TargetedTurn, type Tension, targetedReplySchema } from '../../protocol/tensions.js';
import { isOutage } from '../call/outage.js';
import type { StageContext } from '../stage.js';

/** One party's turn in the targeted exchange on a clash; `unreached` when its call never reached a host (an outage, not an answer). */
export async function targetedTurn(ctx: StageContext, target: Tension, agentId: string, round: number): Promise<{ turn: TargetedTurn; unreached: boolean }> {
  const agent = ctx.preset.agents.find((a) => a.id === agentId)!;
  const built = targetedMessages(ctx.question, agent.persona, target, agentId, ctx.preset.constraints ?? []);
  const base = {
    agentId,
    opponentId: built.opponentId,
    ownClaim: built.ownClaim,
    opposingClaim: built.opposingClaim,
    prompt: built.messages.at(-1)?.content ?? '',
  };
  try {
    const outcome = await ctx.call({
      stage: 'targeted',
      round,
      agentId,
      model: agent.model,
      messages: built.messages,
      options: agent.options,
      schema: targetedReplySchema,
    });
    if (outcome.status === 'ok') return { turn: { ...base, status: 'ok', reply: outcome.value, error: null }, unreached: false };
    return { turn: { ...base, status: 'failed', reply: null, error: outcome.error }, unreached: isOutage(outcome) };
  } catch (err) {
    return { turn: { ...base, status: 'failed', reply: null, error: errorMessage(err) }, unreached: false };
  }
}
