import type { TranscriptRound } from './prompts.js';
import type { RoundStances } from './stances.js';

/**
 * The devil's advocate of a debate (`protocol.advocate: true`): in each critique round one agent,
 * a different one each round in panel order, is briefed to argue against the round's majority.
 * Its turn is advocacy, not its view: the judge's convergence score leaves it out.
 */

/** The advocate of critique round `round` (1 and up): the panel's agents take turns in order. */
export function advocateOf(agentIds: readonly string[], round: number): string | null {
  if (round < 1 || agentIds.length === 0) return null;
  return agentIds[(round - 1) % agentIds.length]!;
}

/** The rounds with each critique round's advocate named, so the synthesizer reads its turn as advocacy, not as its view. */
export function markAdvocates(rounds: readonly TranscriptRound[], agentIds: readonly string[]): TranscriptRound[] {
  return rounds.map((r) => ({ ...r, advocate: advocateOf(agentIds, r.round) }));
}

/** The position the advocate argues against: the majority stance of the last judged round, when there was one. */
export function majorityOf(stances: RoundStances | null): string | null {
  if (!stances?.majority) return null;
  return stances.stances.find((s) => s.id === stances.majority)?.summary ?? null;
}

/** The brief added to the advocate's critique prompt. */
export function advocateSection(majority: string | null): string {
  return [
    "Your role this round: the panel's devil's advocate.",
    majority ? `The majority of the panel holds: ${majority}` : 'The panel has no clear majority; argue against the position most of your peers lean towards.',
    'Argue against it as strongly as the evidence allows: find its weakest assumption, the case where it fails, and the cost it hides. Give your updatedPosition as the strongest case against the majority, even if you would not hold it yourself. Your turn is recorded as advocacy and does not count towards the panel\'s agreement.',
  ].join('\n');
}

/** The agents (other than the advocate) whose stance changed in the round after the advocate spoke. */
export function movedAfter(next: RoundStances, advocate: string): string[] {
  return next.agents.filter((a) => a.agentId !== advocate && (a.move === 'moved' || a.move === 'joined' || a.move === 'left')).map((a) => a.agentId);
}
