/**
 * `protocol.decision: trajectory` (docs/protocol-anti-conformity.md): the debate's decision is
 * the position with the best score over the whole trajectory, by the Free-MAD rule that
 * `conclave rescore` also reports (src/rules/aggregation.ts), not the final round's majority.
 * The votes are the judge's stances, round by round, as rescore counts an open question.
 */
import { freeMadScores } from '../rules/aggregation.js';
import { ruleNamed } from '../rules/index.js';
import { votesFromStances } from '../rules/stances.js';
import type { Trajectory } from '../rules/trajectory.js';
import { type RoundStances, positionKeys } from './stances.js';

/** What the trajectory rule chose, with every position's score, and the final round's majority for contrast. */
export interface TrajectoryChoice {
  /** The winning stance id and how the judge summarised it; null when the rule could not decide. */
  stance: string | null;
  summary: string | null;
  score: number | null;
  /** Every position scored, best first. */
  scores: { stance: string; summary: string; score: number }[];
  /** The final round's majority stance (null on a tie or without stances). */
  finalMajority: string | null;
  /** Why the rule could not decide, when it could not. */
  why: string | null;
  /** The last round counted. */
  round: number;
}

/** Scores the judged rounds (`stances[r]` for round r, null when that judge gave none) of `agents`. */
export function trajectoryChoice(agents: readonly string[], stances: readonly (RoundStances | null)[], maxRounds: number, threshold: number): TrajectoryChoice {
  // Votes are keyed by position (`positionKeys`), so a judge that re-letters its stances is not read as the panel moving.
  const judged = stances.filter((s): s is RoundStances => s !== null);
  const keys = positionKeys(judged);
  const rounds = stances.map((s, round) => ({ round, votes: s ? votesFromStances(agents, s.stances, keys.get(s.round)) : agents.map(() => null), convergence: null }));
  // A position the last judged round holds is named as that round names it, so it reads against the final majority.
  const final = judged.at(-1);
  const named = new Map((final?.stances ?? []).map((x) => [keys.get(final!.round)?.get(x.id) ?? x.id, { stance: x.id, summary: x.summary }]));
  const any = stances.some((s) => s !== null && s.stances.length > 0);
  const t: Trajectory = {
    agents: [...agents],
    protocol: 'debate',
    maxRounds,
    threshold,
    rounds,
    status: 'running',
    exitReason: null,
    basis: any ? { kind: 'stances' } : { kind: 'none', why: 'the judge named no stances in any round' },
    synthesis: { recorded: false, why: 'not yet written' },
    clusterVote: { recorded: false, why: 'not part of this decision' },
    calls: [],
  };
  const last = stances.at(-1) ?? null;
  const finalMajority = last?.majority ?? null;
  const round = Math.max(0, stances.length - 1);
  const decision = ruleNamed('free-mad', { maxRounds })!.decide(t);
  const scored = [...freeMadScores(t).values()].map((e) => ({ key: e.vote.key, ...(named.get(e.vote.key) ?? { stance: e.vote.key, summary: e.vote.text }), score: Math.round(e.score * 10) / 10 }));
  const scores = scored.map(({ key: _, ...s }) => s).sort((a, b) => b.score - a.score);
  if (!decision.available || decision.vote === null) {
    return { stance: null, summary: null, score: null, scores, finalMajority, why: decision.available ? 'no agent held a stance the judge named' : decision.why, round };
  }
  const won = scored.find((s) => s.key === decision.vote!.key)!;
  return { stance: won.stance, summary: won.summary, score: won.score, scores, finalMajority, why: null, round };
}

/** The section the synthesizer reads: which position the trajectory chose, and why. */
export function trajectorySection(choice: TrajectoryChoice): string | null {
  if (choice.stance === null) return null;
  const table = choice.scores.map((s) => `- ${s.stance} (${s.summary}): ${s.score}`).join('\n');
  const contrast =
    choice.finalMajority === null
      ? 'The final round had no clear majority.'
      : choice.finalMajority === choice.stance
        ? 'It is also the final round\'s majority.'
        : `It is not the final round's majority (${choice.finalMajority}): agents who moved to the majority late, without a reason they stated, count for less than those who held or reached a position on their own.`;
  return [
    'This debate decides by the trajectory score (Free-MAD), not by the final majority: every position is scored over all rounds; holding a position counts, leaving one counts against it, joining one counts for it, and joining the previous round\'s majority counts half.',
    `Scores:\n${table}`,
    `The trajectory chose ${choice.stance}: ${choice.summary}. ${contrast}`,
    'Your recommendation must be this position. Report the other positions, including the final majority if it differs, as dissent with their reasons.',
  ].join('\n');
}
