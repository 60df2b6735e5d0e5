import { advocateOf, advocateSection, majorityOf, movedAfter } from '../../protocol/advocate.js';
import type { TranscriptRound } from '../../protocol/prompts.js';
import type { RoundStances } from '../../protocol/stances.js';
import type { TurnRecord } from '../events.js';
import type { Runner } from '../runner.js';

/** A critique round's devil's advocate: who it is, the majority it argues against, and its brief. */
export interface AdvocateRound {
  agentId: string;
  against: string | null;
  brief: string;
}

/** The advocate of critique round `round`, briefed against the majority of the last judged round (`stances`). */
export function advocateRound(runner: Runner, round: number, stances: RoundStances | null): AdvocateRound | null {
  const agentId = advocateOf(runner.preset.agents.map((a) => a.id), round);
  if (!agentId) return null;
  const against = majorityOf(stances);
  return { agentId, against, brief: advocateSection(against) };
}

/** The turns the judge scores: the advocate's is advocacy, not a view, and stays out of convergence. */
export function withoutAdvocate(turns: TurnRecord[], advocate: AdvocateRound | null): TurnRecord[] {
  return advocate ? turns.filter((t) => t.agentId !== advocate.agentId) : turns;
}

/**
 * Records what the advocate of the last of `rounds` raised, and who moved in the round after, from
 * `next`, the stances judged after it (null when no round followed or its judge gave none). The
 * advocate and the majority it argued against are derived again from the round number and the
 * stances before it, as when it ran.
 */
export function advocateStep(runner: Runner, rounds: readonly TranscriptRound[], next: RoundStances | null): void {
  const round = rounds.at(-1);
  if (!round || round.round < 1) return;
  const agentId = advocateOf(runner.preset.agents.map((a) => a.id), round.round);
  if (!agentId) return;
  const turn = round.turns.find((t) => t.agentId === agentId);
  runner.step({
    kind: 'advocate',
    round: round.round,
    agentId,
    against: majorityOf(rounds.at(-2)?.judgement?.stances ?? null),
    raised: turn?.status === 'ok' ? turn.position : null,
    moved: next === null ? null : movedAfter(next, agentId),
  });
}
