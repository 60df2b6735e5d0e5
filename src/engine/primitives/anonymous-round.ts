import type { AgentSpec } from '../../config/preset-schema.js';
import { estimateMessagesTokens, fitPeers } from '../../protocol/context.js';
import {
  type AnonymousAnswer,
  type DelphiMode,
  type DelphiReply,
  type NumberSummary,
  anonymousText,
  delphiFields,
  delphiOpeningMessages,
  delphiRoundMessages,
  estimateOf,
  shuffleSeed,
  shuffled,
} from '../../protocol/delphi.js';
import { delphiSchemaFor } from '../../protocol/delphi-schema.js';
import { openingMessages, retryMessages } from '../../protocol/prompts.js';
import type { CallRequest, QualityHook } from '../call/request.js';
import type { TurnRecord } from '../events.js';
import type { RecordedCalls } from '../run-types.js';
import type { Runner } from '../runner.js';
import { askRound, type Prepared } from './ask-round.js';
import { turnFrom } from './turns.js';

/** What one panelist was shown in an anonymous round: the seed of its order, and the authors in that order (for the record only). */
export interface Shown {
  agentId: string;
  seed: string;
  order: string[];
}

/**
 * An anonymous round (the Delphi method): in round 0 every agent answers alone; from round 1 each
 * reads its own last answer and the others' usable answers of `previous` with no name, model or
 * persona, in an order seeded by the debate, the round and the agent, with `summary` (the median
 * and quartiles of the last round's numbers) when the question is numeric. The calls run together
 * within the slots; an agent whose call in `recorded` asked exactly this is not asked again.
 */
export async function anonymousRound(
  runner: Runner,
  round: number,
  previous: readonly TurnRecord[],
  mode: DelphiMode,
  summary: NumberSummary | null,
  upNext: string[],
  recorded?: RecordedCalls,
): Promise<{ turns: TurnRecord[]; shown: Shown[] }> {
  const agents = runner.preset.agents;
  const shown: Shown[] = [];
  const prepared = new Map<string, Prepared<DelphiReply>>();
  for (const agent of agents) {
    const { request, order } = anonymousRequest(runner, agent, round, previous, mode, summary);
    prepared.set(agent.id, request);
    if (order) shown.push(order);
  }
  const turns = await askRound(runner, agents, prepared, (agent, _req, outcome) => turnFrom(agent, round, outcome, delphiFields), upNext, recorded);
  return { turns, shown };
}

/** One agent's call in an anonymous round, or its failed turn when the prompt cannot fit num_ctx; with the order it is shown the others in. */
function anonymousRequest(
  runner: Runner,
  agent: AgentSpec,
  round: number,
  previous: readonly TurnRecord[],
  mode: DelphiMode,
  summary: NumberSummary | null,
): { request: TurnRecord | CallRequest<DelphiReply>; order: Shown | null } {
  const options = runner.callOptions(agent.model, agent.options, round === 0 ? 'opening' : 'critique');
  const base = {
    stage: round === 0 ? ('opening' as const) : ('critique' as const),
    round,
    agentId: agent.id,
    model: agent.model,
    options,
    schema: delphiSchemaFor(mode),
    material: { focus: agent.persona ?? '' },
    quality: delphiQuality(retryMessages(openingMessages(runner.question, agent.persona))),
  };
  if (round === 0) return { request: { ...base, messages: delphiOpeningMessages(runner.question, agent.persona) }, order: null };

  const anonymous = (t: TurnRecord): AnonymousAnswer => ({ answer: t.position ?? '', estimate: estimateOf(t), reason: t.opening?.reasoning ?? '' });
  const mine = previous.find((t) => t.agentId === agent.id && t.status === 'ok');
  const seed = shuffleSeed(runner.id, round, agent.id);
  const others = shuffled(
    previous.filter((t) => t.agentId !== agent.id && t.status === 'ok' && t.position),
    seed,
  );
  const order: Shown = { agentId: agent.id, seed, order: others.map((t) => t.agentId) };
  const own = mine ? anonymous(mine) : null;
  const numeric = mode === 'numeric';
  // Labels by place stand in for names while the answers are fitted; the prompt numbers them the same way.
  const views = others.map((t, i) => ({ agentId: `Answer ${i + 1}`, position: anonymousText(anonymous(t)) }));
  const fixed = estimateMessagesTokens(delphiRoundMessages(runner.question, agent.persona, round, own, [], summary, numeric));
  const fit = fitPeers(fixed, views, runner.agentPromptBudget(agent.model, options));
  if (!fit) {
    const error = `the prompt does not fit num_ctx ${runner.numCtx[agent.model]} for ${agent.model} even with the other answers shortened`;
    runner.warn(`${agent.id}, round ${round}: ${error}`);
    return { request: { round, agentId: agent.id, model: agent.model, status: 'failed', position: null, confidence: null, opening: null, critique: null, error }, order };
  }
  const truncation = fit.droppedChars > 0 ? `the other answers shortened by ${fit.droppedChars} characters to fit num_ctx ${runner.numCtx[agent.model]}` : null;
  if (truncation) runner.warn(`${agent.id}, round ${round}: ${truncation}`);
  const messages = delphiRoundMessages(runner.question, agent.persona, round, own, fit.peers.map((p) => ({ text: p.position, ...(p.shortened ? { shortened: true } : {}) })), summary, numeric);
  return { request: { ...base, messages, truncation }, order };
}

/** Rated as an answer: its text, its reason and its confidence. A retry asks the question alone and brings back no number. */
function delphiQuality(retry: ReturnType<typeof retryMessages>): QualityHook<DelphiReply> {
  return {
    facts: (v) => ({ position: v.answer, reasoning: v.reason, confidence: v.confidence, tradeOffs: 0, constraints: 0 }),
    retry,
    fromRetry: (o) => ({ answer: o.position, reason: o.reasoning, confidence: o.confidence }),
  };
}
