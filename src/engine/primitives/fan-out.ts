import type { AgentSpec } from '../../config/preset-schema.js';
import { DebateFailedError } from '../../errors.js';
import { openingMessages, retryMessages } from '../../protocol/prompts.js';
import { type Opening, openingSchema } from '../../protocol/schemas.js';
import type { CallRequest } from '../call/request.js';
import type { TurnRecord } from '../events.js';
import type { RecordedCalls } from '../run-types.js';
import type { Runner } from '../runner.js';
import { settleClashes } from './clashes.js';
import { askRound } from './ask-round.js';
import { openingQuality, turnFrom } from './turns.js';

/**
 * Fan-out: every given agent answers the question alone, all at once within the slots.
 * An agent with a call in `recorded` (a resumed round) that asked exactly this is not asked again.
 */
export async function answerAll(runner: Runner, agents: AgentSpec[], round: number, upNext: string[], recorded?: RecordedCalls): Promise<TurnRecord[]> {
  const fields = (v: Opening): Pick<TurnRecord, 'position' | 'confidence' | 'opening' | 'critique'> => ({ position: v.position, confidence: v.confidence, opening: v, critique: null });
  const prepared = new Map(agents.map((agent) => [agent.id, openingRequest(runner, agent, round)]));
  const turns = await askRound(runner, agents, prepared, (agent, _req, outcome) => turnFrom(agent, round, outcome, fields), upNext, recorded);
  settleClashes(runner, round, turns);
  return turns;
}

/** An agent's answer to the question alone. */
export function openingRequest(runner: Runner, agent: AgentSpec, round: number): CallRequest<Opening> {
  return {
    stage: 'opening',
    round,
    agentId: agent.id,
    model: agent.model,
    messages: openingMessages(runner.question, agent.persona),
    options: runner.callOptions(agent.model, agent.options, 'opening'),
    schema: openingSchema,
    material: { focus: agent.persona ?? '' },
    // The retry is built from the question and persona alone, whatever else the first prompt carried.
    quality: openingQuality(retryMessages(openingMessages(runner.question, agent.persona))),
  };
}

/** Ends the run as failed unless at least two of `turns` are usable. */
export function requireAnswers(runner: Runner, turns: TurnRecord[], round: number): TurnRecord[] {
  const usable = turns.filter((t) => t.status === 'ok');
  if (usable.length >= 2) return usable;
  const detail = `only ${usable.length} of ${turns.length} agents gave a usable answer in round ${round}`;
  runner.emit({ type: 'debate.exit', reason: 'too_few_answers', round, detail, at: runner.now() });
  runner.finish('failed', 'too_few_answers', detail);
  const gaps = turns.filter((t) => t.status !== 'ok').map((t) => `${t.agentId}: ${t.error}`);
  const budget = turns.some((t) => t.error?.startsWith('skipped by the token budget'));
  throw new DebateFailedError('TOO_FEW_ANSWERS', `The debate ${runner.id} failed: ${detail}.\n${gaps.map((g) => `  - ${g}`).join('\n')}`, {
    hint: budget
      ? `The token budget (${runner.tally.limit?.toLocaleString("en-US")} tokens) does not cover two answers: raise --token-budget (or protocol.tokenBudget), or give agents priority: high.`
      : 'Check the failures above (model errors, timeouts or invalid JSON); the calls are stored, see `conclave show ' + runner.id + '`.',
  });
}
