// A pipeline's phases, without its schemas: the record's readers need them, and never load zod.

export type PipelinePhase = 'plan' | 'review' | 'final';

/** The phase number: the round a phase's calls and steps are recorded under. */
export const PHASE_ROUND: Record<PipelinePhase, number> = { plan: 1, review: 2, final: 3 };

/** A blocking observation below this confidence (0–100) is downgraded to non-blocking. */
export const BLOCKING_CONFIDENCE = 70;

/** Blocking first, then the rest, each group in the order given. */
export function blockingFirst<T extends { blocking: boolean }>(items: readonly T[]): T[] {
  return [...items.filter((i) => i.blocking), ...items.filter((i) => !i.blocking)];
}
