import { TENSION_MAP_AGENT } from '../protocol/tension-order.js';

/**
 * A debate as the decision rules see it: for every round that ran, what each agent held (as a
 * grouping key and the words it was written in), the judge's convergence, and what every call
 * cost. Built from the record alone; nothing here asks a server or reads a database.
 */

/** One agent's answer in one round: `key` groups equal answers (`1,234` and `1234`), `text` is how it was first written. */
export interface Vote {
  key: string;
  text: string;
}

/** What one recorded call cost. `gpuMs` is the server's own total duration when it reported one, else the call's wall time. */
export interface CallCost {
  stage: string;
  round: number;
  agentId: string;
  promptTokens: number;
  completionTokens: number;
  gpuMs: number;
}

export interface TrajectoryRound {
  round: number;
  /** Panel order; null when the agent's turn is missing, failed or could not be read. */
  votes: (Vote | null)[];
  /** The judge's convergence after this round (0–1); null when the judge failed or never ran. */
  convergence: number | null;
}

/** A single answer the record holds outside the rounds (the synthesizer's, the cluster vote's winner). */
export type Recorded = { recorded: true; vote: Vote | null; note: string | null } | { recorded: false; why: string };

export interface Trajectory {
  /** Debaters in panel order. */
  agents: string[];
  /** The protocol the debate ran (`debate`, `parallel`, …). */
  protocol: string;
  maxRounds: number;
  threshold: number;
  /** Rounds that ran, 0 to the last, in order. */
  rounds: TrajectoryRound[];
  /** The debate's status and why it stopped, as recorded. */
  status: string;
  exitReason: string | null;
  /**
   * What the votes are: answers read from each turn (graded items), the judge's stances (open
   * questions), or nothing the majority rules can count (`why` says so).
   */
  basis: { kind: 'answers' | 'stances' } | { kind: 'none'; why: string };
  synthesis: Recorded;
  clusterVote: Recorded;
  calls: CallCost[];
  /** Per agent, its share of right round-0 answers on the items before this one; absent outside a bench run. */
  reliability?: Record<string, number>;
}

export interface Spent {
  calls: number;
  promptTokens: number;
  completionTokens: number;
  gpuSeconds: number;
}

/** A rule's verdict on one trajectory: where it stops, what it decides, what that costs; or why it cannot say. */
export type Decision =
  | {
      available: true;
      /** The last round the rule needs. */
      stopRound: number;
      /** Null when no answer could be read there (counts as wrong). */
      vote: Vote | null;
      spent: Spent;
      note: string | null;
    }
  | { available: false; why: string };

export type RuleFamily = 'stopping' | 'aggregation' | 'early-majority';

/** A pure function from a recorded trajectory to a decision, with its name and where it comes from. */
export interface Rule {
  /** Stable, used by `--rule` and in JSON: `stop:threshold@0.80`, `majority:round0`. */
  name: string;
  family: RuleFamily;
  label: string;
  /** Where the rule comes from, in a few words (docs/rescore.md has the references). */
  source: string;
  /** The bench condition this rule reproduces exactly, when there is one. */
  condition?: 'round0-vote' | 'debate-vote' | 'debate-synth' | 'cluster-vote';
  decide(t: Trajectory): Decision;
}

/** What a family of rules needs to know to list its members (the fixed-round rule runs 0 to maxRounds). */
export interface RuleContext {
  maxRounds: number;
  /** Judge thresholds asked for by name besides the swept ones (`stop:threshold@0.72`). */
  thresholds?: readonly number[];
}

/** A family of rules: one file each, registered in rules/index.ts. */
export type RuleFamilyFactory = (ctx: RuleContext) => Rule[];

/**
 * The most common vote. Ties go to the answer whose first vote came earliest, and the winner
 * is returned as that earliest vote was written: the bench's majority, exactly. Null when no
 * vote counts.
 */
export function plurality(votes: readonly (Vote | null)[]): Vote | null {
  const groups = new Map<string, { first: Vote; count: number }>();
  for (const vote of votes) {
    if (vote === null) continue;
    const group = groups.get(vote.key);
    if (group === undefined) groups.set(vote.key, { first: vote, count: 1 });
    else group.count++;
  }
  let winner: { first: Vote; count: number } | undefined;
  for (const group of groups.values()) if (winner === undefined || group.count > winner.count) winner = group;
  return winner?.first ?? null;
}

/** Votes per answer key, in order of first appearance. */
export function tally(votes: readonly (Vote | null)[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const vote of votes) if (vote !== null) counts.set(vote.key, (counts.get(vote.key) ?? 0) + 1);
  return counts;
}

/** A call of the rounds themselves: not the synthesis, nor the vote and its refinement that come after them. */
export const notAfterRounds = (c: CallCost): boolean => c.stage !== 'synthesis' && c.stage !== 'vote' && c.stage !== 'refine';

/** Sums what the calls kept by `keep` cost. */
export function spentOn(t: Trajectory, keep: (c: CallCost) => boolean): Spent {
  const spent: Spent = { calls: 0, promptTokens: 0, completionTokens: 0, gpuSeconds: 0 };
  let ms = 0;
  for (const c of t.calls) {
    if (!keep(c)) continue;
    spent.calls += 1;
    spent.promptTokens += c.promptTokens;
    spent.completionTokens += c.completionTokens;
    ms += c.gpuMs;
  }
  spent.gpuSeconds = ms / 1000;
  return spent;
}

/** Stages that come after the rounds: what a majority of the rounds never needs. */
const AFTER_ROUNDS = new Set(['synthesis', 'vote', 'refine']);

/** The clash board: its claims and clash calls, recorded under the round whose answers they read. */
const onBoard = (c: CallCost): boolean => c.stage === 'claims' || (c.stage === 'clash' && c.agentId !== TENSION_MAP_AGENT);

/**
 * What a debate stopped after round `r` would have spent: every call of rounds 0 to r,
 * the judge's only when the rule reads the judge, and nothing after the rounds. The clash
 * board mapped on a round's answers (failed claims calls and repairs too) serves the critique
 * rounds after it and the map drawn at the end: it is charged to a rule that reads a later
 * round, or that reads the last round, where the map was drawn on it.
 */
export function spentThrough(t: Trajectory, r: number, opts: { judge: boolean }): Spent {
  const last = lastRound(t);
  return spentOn(t, (c) => !AFTER_ROUNDS.has(c.stage) && c.round <= r && (!onBoard(c) || c.round < r || r >= last) && (opts.judge || c.stage !== 'judge'));
}

/** Why a majority rule has nothing to count, or null when it has. */
export function noBasis(t: Trajectory): string | null {
  return t.basis.kind === 'none' ? t.basis.why : null;
}

/** The last round that ran, or -1 when none did. */
export function lastRound(t: Trajectory): number {
  return t.rounds.length - 1;
}

/** What a rule says when it would need a round the record does not have: it is not guessed. */
export function neverRan(t: Trajectory, round: number): { available: false; why: string } {
  const last = lastRound(t);
  const stopped = last < 0 ? 'no round was recorded' : `the debate stopped after round ${last}${t.exitReason ? ` (${t.exitReason.replace('_', ' ')})` : ''}`;
  return { available: false, why: `needs round ${round}, which never ran: ${stopped}` };
}

/** Protocols whose agents never answer the question independently, so round 0 has no answers to count. */
export function noIndependentAnswers(t: Trajectory): string | null {
  if (t.protocol === 'oxford') return "an Oxford debate's answers argue the sides they were given";
  return t.protocol === 'pipeline' ? 'a review pipeline has no independent answers' : t.protocol === 'decompose' ? 'a decomposition has no independent answers' : null;
}
