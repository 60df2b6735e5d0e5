import { PHASE_ROUND } from '../protocol/phases.js';

/** Stages that belong to a pipeline phase, whose stored round is the phase's number, not a critique round. */
const PHASE_STAGES = new Set(['plan', 'observe', 'review', 'filter']);
/** Stages that run after the last critique round, in a place of their own. */
const OWN_PLACE: Record<string, string> = { advice: 'the advice, before the panel', targeted: 'the targeted exchange', clash: 'the tension map', claims: 'the tension map', synthesis: 'the synthesis' };

/**
 * Where a call or a result sits, in words: "round 2" only for the second critique round (or
 * a round of answers); a pipeline's phases by name; a decomposition's sub-questions and a
 * tournament's verdicts by their own numbers; the targeted exchange and the other stages
 * after the rounds by theirs.
 */
export function placeText(stage: string, round: number): string {
  if (PHASE_STAGES.has(stage)) {
    const phase = Object.entries(PHASE_ROUND).find(([, n]) => n === round)?.[0];
    return phase ? `${phase} phase` : `phase ${round}`;
  }
  if (stage === 'claims' || stage === 'clash') return round === 0 ? 'the tension map, on the round-0 answers' : OWN_PLACE[stage]!;
  // A decomposition numbers its calls by sub-question, a tournament by bracket round.
  if (stage === 'split') return 'the split into sub-questions';
  if (stage === 'subanswer') return `sub-question ${round}`;
  if (stage === 'reassembly') return 'the reassembly';
  if (stage === 'verdict') return `bracket round ${round}`;
  return OWN_PLACE[stage] ?? `round ${round}`;
}

/** A call named by its stage and place: "opening round 0", "targeted (the targeted exchange)", "review (review phase)". */
export function callPlaceText(stage: string, round: number): string {
  const place = placeText(stage, round);
  return place.startsWith('round ') ? `${stage} ${place}` : `${stage} (${place})`;
}
