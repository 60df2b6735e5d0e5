import type { ExitReason } from './records.js';
import type { JudgeScore } from './schemas.js';
import { reaches } from './reaches.js';

/** The round's convergence: the mean of the judge's three axes. */
export function convergenceOf(score: Pick<JudgeScore, 'recommendation' | 'facts' | 'caveats'>): number {
  return (score.recommendation + score.facts + score.caveats) / 3;
}

export interface ExitInput {
  round: number;
  maxRounds: number;
  convergence: number | null;
  threshold: number;
}

/**
 * Decide whether to stop after a round. Returns null to go on.
 * A failed judge (null convergence) never triggers an early exit: the debate
 * runs on until the ceiling rather than stopping on a score it does not have.
 */
export function exitDecision(input: ExitInput): { reason: ExitReason; detail: string } | null {
  if (input.convergence !== null && reaches(input.convergence, input.threshold)) {
    return {
      reason: 'converged',
      detail: `convergence ${input.convergence.toFixed(2)} ≥ threshold ${input.threshold.toFixed(2)} after round ${input.round}`,
    };
  }
  if (input.round >= input.maxRounds) {
    return {
      reason: 'max_rounds',
      detail:
        input.maxRounds === 0
          ? 'no critique rounds configured (maxRounds 0)'
          : `reached the ceiling of ${input.maxRounds} critique round${input.maxRounds === 1 ? '' : 's'}`,
    };
  }
  return null;
}
