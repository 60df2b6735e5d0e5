import type { AgentSpec } from '../../config/preset-schema.js';
import { markedFallback, seatFallbackNote, withFallbackNote } from '../../protocol/fallback.js';
import type { Critique, Opening } from '../../protocol/schemas.js';
import type { CallRequest } from '../call/request.js';
import type { TurnRecord } from '../events.js';
import type { ProtocolStep } from '../protocol-events.js';
import type { Runner } from '../runner.js';
import { critiqueTurnFrom, turnFrom } from './turns.js';

export type FallbackStep = Extract<ProtocolStep, { kind: 'fallback' }>;

/** A turn that gets a fallback: its call failed (rejected, timed out, its host failed), not skipped by the token budget. */
export function needsFallback(turn: TurnRecord): boolean {
  return turn.status !== 'ok' && !(turn.error ?? '').startsWith('skipped');
}

/**
 * Fills the seats whose turn failed with the orchestrator's fallback analysis, as a
 * decomposition fills a failed part (seed 002): the synthesizer's model answers the seat's own
 * request, told who failed and why. Each is recorded as a `fallback` step; the returned turns
 * carry it with its position marked, so peers, the judge and the synthesizer read it as a
 * fallback. The agent is asked again next round, and its own answer replaces the fallback.
 */
export async function fillFailedSeats(runner: Runner, round: number, turns: TurnRecord[], requestOf: (agent: AgentSpec) => TurnRecord | CallRequest<Opening> | CallRequest<Critique>): Promise<TurnRecord[]> {
  const model = runner.preset.synthesizer.model ?? '';
  const failed = turns.filter(needsFallback);
  if (!model || failed.length === 0 || runner.interrupted()) return turns;
  const filled = await Promise.all(
    failed.map(async (turn): Promise<TurnRecord | null> => {
      const agent = runner.preset.agents.find((a) => a.id === turn.agentId);
      const req = agent ? requestOf(agent) : null;
      if (!agent || !req || !('schema' in req)) return null;
      const failure = turn.error ?? 'no usable answer';
      runner.warn(`${agent.id}, round ${round}: no usable answer (${failure}); ${model} writes a fallback analysis for its seat`);
      const seat = { ...agent, model };
      const base = { kind: 'fallback' as const, round, agentId: agent.id, model, failure };
      const options = runner.callOptions(model, runner.preset.synthesizer.options, req.stage);
      const messages = withFallbackNote(req.messages, seatFallbackNote(agent.id, round, failure));
      let filledTurn: TurnRecord;
      if (req.stage === 'opening') {
        const outcome = await runner.call({ ...(req as CallRequest<Opening>), stage: 'fallback', model, messages, options });
        filledTurn = turnFrom(seat, round, outcome, (v) => ({ position: v.position, confidence: v.confidence, opening: v, critique: null }));
      } else {
        const outcome = await runner.call({ ...(req as CallRequest<Critique>), stage: 'fallback', model, messages, options });
        filledTurn = critiqueTurnFrom(seat, round, outcome);
      }
      if (filledTurn.status !== 'ok') {
        runner.step({ ...base, status: 'failed', position: null, reasoning: null, confidence: null, error: filledTurn.error });
        return null;
      }
      const step: FallbackStep = { ...base, status: 'ok', position: filledTurn.position, reasoning: filledTurn.opening?.reasoning ?? null, confidence: filledTurn.confidence, error: null };
      runner.step(step);
      return fallbackTurn(step, turn);
    }),
  );
  return turns.map((t) => filled.find((f) => f?.agentId === t.agentId) ?? t);
}

/** The turn a recorded fallback stands for in its seat: the failed turn's place, the fallback's marked text. */
export function fallbackTurn(step: FallbackStep, failed: TurnRecord): TurnRecord {
  const position = markedFallback(step.agentId, step.position ?? '');
  return {
    ...failed,
    model: step.model,
    status: 'ok',
    position,
    confidence: step.confidence,
    opening: step.reasoning !== null ? { position, reasoning: step.reasoning, confidence: step.confidence ?? 0 } : null,
    critique: null,
    error: null,
    fallback: { failure: step.failure },
  };
}
