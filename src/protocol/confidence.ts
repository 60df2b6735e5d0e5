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
}

export function computeConfidence(input: {
  judgeScore: number | null;
  threshold: number;
  restsOn: readonly string[] | undefined;
  usable: readonly string[];
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
  return { level, judgeScore: s, threshold: input.threshold, restsOn, of, restsOnUnknown: input.restsOn === undefined };
}
