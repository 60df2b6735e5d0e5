import { z } from 'zod';
import type { ChatMessage } from './records.js';

/**
 * Tournament elimination, pure parts: seeding, pairing with byes, the judge's verdict
 * (schema built per match, so the winner can only be one of the two ids) and its prompt.
 */

export interface Entrant {
  agentId: string;
  /** Round-0 confidence; higher seeds first. */
  confidence: number;
}

/** One pairing; `b` is null for a bye (a advances without playing). */
export interface Pairing {
  a: string;
  b: string | null;
}

/** Seeds by round-0 confidence, highest first; ties keep panel order. */
export function seedEntrants(entrants: Entrant[]): string[] {
  return entrants
    .map((e, i) => ({ ...e, i }))
    .sort((x, y) => y.confidence - x.confidence || x.i - y.i)
    .map((e) => e.agentId);
}

/**
 * Pairs the agents still in, given in seed order: the top seed meets the bottom one,
 * the second the second-to-last, and so on. With an odd count the top seed has a bye.
 */
export function pairBracket(seeded: string[]): Pairing[] {
  const list = [...seeded];
  const pairs: Pairing[] = [];
  if (list.length % 2 === 1) pairs.push({ a: list.shift()!, b: null });
  while (list.length >= 2) pairs.push({ a: list.shift()!, b: list.pop()! });
  return pairs;
}

/** Bracket rounds needed for n entrants (⌈log2 n⌉). */
export function bracketRounds(n: number): number {
  return n <= 1 ? 0 : Math.ceil(Math.log2(n));
}

/** The verdict of one match, with the winner restricted to the two players. */
export function verdictSchema(a: string, b: string) {
  return z.strictObject({
    winner: z.enum([a, b]).describe('The id of the panelist whose answer is better.'),
    reasons: z.array(z.string().min(1)).min(1).max(5).describe('Why that answer is better, one point per entry.'),
  });
}

export type Verdict = z.infer<ReturnType<typeof verdictSchema>>;

export interface MatchSide {
  agentId: string;
  /** The side's answer after it read the opponent's. */
  position: string;
  /** What it said about the opponent's answer. */
  critique: string;
  shortened?: boolean;
}

export function verdictMessages(question: string, round: number, sides: [MatchSide, MatchSide]): ChatMessage[] {
  const body = sides.map((s) => `[${s.agentId}]${s.shortened ? ' (shortened to fit)' : ''}\nAnswer: ${s.position}\nIts critique of the other: ${s.critique}`).join('\n\n');
  return [
    {
      role: 'system',
      content: 'You referee a match between two panelists. Decide which answer is better on substance: correctness, evidence, and whether it holds up against the other side\'s critique. Length and confidence are not merit.',
    },
    {
      role: 'user',
      content: [
        `Question: ${question}`,
        '',
        `Match in bracket round ${round}. Each side answered, then read and criticised the other:`,
        '',
        body,
        '',
        `Reply with a JSON object: "winner" (exactly one of ${sides.map((s) => `"${s.agentId}"`).join(' or ')}), "reasons" (one to five short points on why that answer is better).`,
      ].join('\n'),
    },
  ];
}

/** What a match side's critique says, in one paragraph, for the verdict prompt. */
export function critiqueSummary(agreements: { on: string }[], disagreements: { on: string; reason: string }[]): string {
  const parts = [
    ...agreements.map((a) => `agrees on ${a.on}`),
    ...disagreements.map((d) => `disagrees on ${d.on} because ${d.reason}`),
  ];
  return parts.length ? parts.join('; ') : 'no specific points';
}

/** The section added to the synthesizer's prompt: who won, how, and that the runner-up's view is the dissent to keep. */
export function tournamentSection(champion: string, runnerUp: string | null, verdicts: { round: number; a: string; b: string; winner: string; reasons: string[] }[]): string {
  const lines = verdicts.map((v) => `- round ${v.round}: ${v.winner} beat ${v.winner === v.a ? v.b : v.a}: ${v.reasons.join('; ')}`);
  return [
    `This panel ran a tournament: pairwise matches, the judge picked a winner each time, the loser dropped out. Champion: ${champion}.${runnerUp ? ` Runner-up: ${runnerUp}.` : ''}`,
    'Verdicts:',
    ...lines,
    `Base the recommendation on ${champion}'s final answer.${runnerUp ? ` Keep ${runnerUp}'s final answer as a minority position where it still differs.` : ''}`,
  ].join('\n');
}
