/**
 * The card's confidence, computed by the engine from the record, never taken from a model:
 * the judge's last convergence score against the threshold, and how many panelists' usable
 * final positions the synthesis says it rests on (docs/confidence.md).
 */
export type ConfidenceLevel = 'high' | 'medium' | 'low';

export interface ComputedConfidence {
  level: ConfidenceLevel;
  /** The judge's last score, or null when no round was scored. */
  judgeScore: number | null;
  threshold: number;
  /** Panelists with a usable final position the synthesis rests on, in panel order. */
  restsOn: string[];
  /** Panelists with a usable final position. */
  of: number;
  /** The synthesis named no panelist it rests on (a record from before the field existed). */
  restsOnUnknown: boolean;
  /** Why HIGH was lowered to MEDIUM: the support was not independent (docs/confidence.md); null when it was not. */
  capped: string | null;
}

export function computeConfidence(input: {
  judgeScore: number | null;
  threshold: number;
  restsOn: readonly string[] | undefined;
  usable: readonly string[];
  /** Whether the final positions it rests on are independent support; absent for records without model families. */
  independence?: { independent: boolean; reason: string } | null;
}): ComputedConfidence {
  const named = new Set(input.restsOn ?? []);
  const restsOn = input.usable.filter((id) => named.has(id));
  const of = input.usable.length;
  const majority = of > 0 && restsOn.length * 2 > of;
  const s = input.judgeScore;
  let level: ConfidenceLevel;
  if (s === null) level = majority ? 'medium' : 'low';
  else if (s >= input.threshold) level = majority ? 'high' : 'medium';
  else if (s >= input.threshold / 2) level = majority ? 'medium' : 'low';
  else level = 'low';
  // HIGH needs independent support: agreement among one model family, reached by moving, is not evidence enough.
  let capped: string | null = null;
  if (level === 'high' && input.independence && !input.independence.independent) {
    level = 'medium';
    capped = input.independence.reason;
  }
  return { level, judgeScore: s, threshold: input.threshold, restsOn, of, restsOnUnknown: input.restsOn === undefined, capped };
}
