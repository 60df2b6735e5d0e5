/**
 * How far below a threshold a score may fall and still reach it. Scores are read from whole
 * percents (70 → 0.7) and averaged in floating point, where 70, 70 and 70 come to
 * 0.6999999999999998: compared bare, a judge at exactly the threshold would never meet it. No two
 * scores built from whole percents differ by as little as this.
 */
export const SCORE_EPSILON = 1e-9;

/** Whether `score` reaches `threshold`, up to floating-point error. */
export function reaches(score: number, threshold: number): boolean {
  return score >= threshold - SCORE_EPSILON;
}
