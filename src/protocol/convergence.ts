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
  /** How many positions each of the judge's stances of this round holds, when it gave stances. */
  stanceSizes?: readonly number[] | null;
}

/**
 * Whether the judge's stances put the positions it read apart: two stances or more, none held by
 * more than half. A score at the threshold over such stances is contradicted by the same reply.
 */
export function stancesSplit(sizes: readonly number[] | null | undefined): boolean {
  if (!sizes || sizes.length < 2) return false;
  const placed = sizes.reduce((n, k) => n + k, 0);
  return Math.max(...sizes) * 2 <= placed;
}

/**
 * What the judge's score says of a round: `converged` when it reaches the threshold, `split` when it
 * reaches it but the judge's own stances split the panel with no majority (the reply denies the
 * agreement it scores), null when it is below or missing.
 */
export function scoreVerdict(input: Pick<ExitInput, 'convergence' | 'threshold' | 'stanceSizes'>): 'converged' | 'split' | null {
  if (input.convergence === null || !reaches(input.convergence, input.threshold)) return null;
  return stancesSplit(input.stanceSizes) ? 'split' : 'converged';
}

/**
 * Decide whether to stop after a round. Returns null to go on.
 * A failed judge (null convergence) never triggers an early exit: the debate
 * runs on until the ceiling rather than stopping on a score it does not have. Nor does a score
 * whose own stances split the panel with no majority: the reply denies the agreement it scores.
 */
export function exitDecision(input: ExitInput): { reason: ExitReason; detail: string } | null {
  if (input.convergence !== null && scoreVerdict(input) === 'converged') {
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
