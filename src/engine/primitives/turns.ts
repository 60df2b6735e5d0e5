import type { AgentSpec } from '../../config/preset-schema.js';
import type { Critique, Opening } from '../../protocol/schemas.js';
import type { QualityHook } from '../call/request.js';
import type { ChatMessage, TurnRecord } from '../events.js';
import type { StructuredOutcome } from '../structured-call.js';

/** The quality hook of an answer in the opening's shape (an opening, a sub-answer); `retry` is its simplified request. */
export function openingQuality(retry: ChatMessage[]): QualityHook<Opening> {
  return {
    facts: (v) => ({ position: v.position, reasoning: v.reasoning, confidence: v.confidence, tradeOffs: v.tradeOffs?.length ?? 0, constraints: v.constraints?.length ?? 0 }),
    retry,
    fromRetry: (o) => o,
  };
}

/**
 * The quality hook of a critique that was shown `peers` answers. Its retry is a fresh answer
 * to the question alone, kept as a critique that names no peer.
 */
export function critiqueQuality(retry: ChatMessage[], peers: number): QualityHook<Critique> {
  return {
    facts: (v) => ({ position: v.updatedPosition, confidence: v.confidence, peers, engaged: v.agreements.length + v.disagreements.length, tradeOffs: v.tradeOffs?.length ?? 0, constraints: v.constraints?.length ?? 0 }),
    retry,
    fromRetry: (o) => ({ agreements: [], disagreements: [], updatedPosition: o.position, confidence: o.confidence }),
  };
}

export function turnFrom<T>(
  agent: AgentSpec,
  round: number,
  outcome: StructuredOutcome<T>,
  fields: (value: T) => Pick<TurnRecord, 'position' | 'confidence' | 'opening' | 'critique'>,
): TurnRecord {
  const base = { round, agentId: agent.id, model: agent.model };
  if (outcome.status === 'ok') return { ...base, status: 'ok', ...fields(outcome.value), error: null };
  return {
    ...base,
    status: outcome.status === 'invalid' ? 'invalid' : 'failed',
    position: null,
    confidence: null,
    opening: null,
    critique: null,
    error: outcome.error,
  };
}

export function critiqueTurnFrom(agent: AgentSpec, round: number, outcome: StructuredOutcome<Critique>): TurnRecord {
  return turnFrom(agent, round, outcome, (v) => ({ position: v.updatedPosition, confidence: v.confidence, opening: null, critique: v }));
}

/** What peers see of a turn: an opening's position and reasoning, or a critique's updated position. */
export function peerText(turn: TurnRecord): string {
  if (turn.opening) return `${turn.opening.position}\nReasoning: ${turn.opening.reasoning}`;
  return turn.position ?? '';
}
