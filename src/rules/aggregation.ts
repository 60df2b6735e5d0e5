import {
  type Decision,
  type Rule,
  type RuleFamilyFactory,
  type Trajectory,
  type Vote,
  lastRound,
  neverRan,
  notAfterRounds,
  noBasis,
  noIndependentAnswers,
  plurality,
  spentOn,
  spentThrough,
  tally,
} from './trajectory.js';

/**
 * Aggregation rules: the debate stops where it stopped; what differs is how its record is
 * turned into one answer.
 */

export const SYNTHESIZER: Rule = {
  name: 'synthesizer',
  family: 'aggregation',
  label: 'synthesizer',
  source: 'the run itself',
  condition: 'debate-synth',
  decide(t) {
    if (!t.synthesis.recorded) return { available: false, why: t.synthesis.why };
    return { available: true, stopRound: Math.max(0, lastRound(t)), vote: t.synthesis.vote, spent: spentOn(t, () => true), note: t.synthesis.note };
  },
};

export const FINAL_MAJORITY: Rule = {
  name: 'majority:final',
  family: 'aggregation',
  label: 'final-round majority',
  source: 'majority vote (Du et al. 2024; Choi et al. 2025)',
  condition: 'debate-vote',
  decide(t) {
    const why = noBasis(t);
    if (why !== null) return { available: false, why };
    const last = lastRound(t);
    if (last < 0) return neverRan(t, 0);
    const ended = t.status === 'completed' || t.status === 'unsynthesized';
    return { available: true, stopRound: last, vote: plurality(t.rounds[last]!.votes), spent: spentOn(t, notAfterRounds), note: ended ? null : `debate ${t.status}` };
  },
};

export const ROUND0_MAJORITY: Rule = {
  name: 'majority:round0',
  family: 'aggregation',
  label: 'round-0 majority (no debate)',
  source: 'majority vote of independent answers (Choi et al. 2025)',
  condition: 'round0-vote',
  decide(t) {
    const why = noIndependentAnswers(t) ?? noBasis(t);
    if (why !== null) return { available: false, why };
    const round = t.rounds[0];
    if (round === undefined) return neverRan(t, 0);
    return { available: true, stopRound: 0, vote: plurality(round.votes), spent: spentOn(t, (c) => c.stage === 'opening'), note: null };
  },
};

/** The majority at round r, with the judge's recorded stop: a debate that stopped earlier is read where it stopped. */
function majorityAt(r: number): Rule {
  return {
    name: `majority:round=${r}`,
    family: 'aggregation',
    label: `majority at round ${r}`,
    source: 'majority vote at a fixed depth (Kaesberg et al. 2025)',
    decide(t) {
      const why = noBasis(t);
      if (why !== null) return { available: false, why };
      const last = lastRound(t);
      if (last < 0) return neverRan(t, 0);
      const at = Math.min(r, last);
      return {
        available: true,
        stopRound: at,
        vote: plurality(t.rounds[at]!.votes),
        spent: spentThrough(t, at, { judge: true }),
        note: at < r ? `the debate stopped after round ${last}${t.exitReason ? ` (${t.exitReason.replace('_', ' ')})` : ''}` : null,
      };
    },
  };
}

/** Free-MAD's weights as its open reimplementation uses them: a first answer, leaving one, joining one, keeping one. */
export const FREE_MAD_WEIGHTS = { initial: 20, leave: 25, join: 30, keep: 20 } as const;
/** A move to the answer most agents held in the round before counts this share of a join. */
export const CONFORMITY_DISCOUNT = 0.5;

/** The answer strictly more agents held than any other, or null on a tie. */
function clearLeader(votes: readonly (Vote | null)[]): string | null {
  let best: string | null = null;
  let bestCount = 0;
  let tied = false;
  for (const [key, count] of tally(votes)) {
    if (count > bestCount) {
      best = key;
      bestCount = count;
      tied = false;
    } else if (count === bestCount) {
      tied = true;
    }
  }
  return tied ? null : best;
}

/**
 * Scores every answer over the whole trajectory (Free-MAD): each round weighs 1/(r+1); a kept
 * answer gains, an abandoned one loses, a newly joined one gains, and joining the previous
 * round's majority gains less. The highest score wins; a tie goes to the answer seen first.
 */
export function freeMadScores(t: Trajectory): Map<string, { vote: Vote; score: number }> {
  const w = FREE_MAD_WEIGHTS;
  const scores = new Map<string, { vote: Vote; score: number }>();
  const add = (vote: Vote, points: number): void => {
    const entry = scores.get(vote.key);
    if (entry === undefined) scores.set(vote.key, { vote, score: points });
    else entry.score += points;
  };
  const held = new Map<number, Vote>();
  t.rounds.forEach((round, r) => {
    const f = 1 / (r + 1);
    const majorityBefore = r > 0 ? clearLeader(t.rounds[r - 1]!.votes) : null;
    round.votes.forEach((vote, i) => {
      if (vote === null) return;
      const before = held.get(i);
      if (before === undefined) add(vote, w.initial * f);
      else if (before.key === vote.key) add(vote, w.keep * f);
      else {
        add(before, -w.leave * f);
        add(vote, w.join * f * (vote.key === majorityBefore ? CONFORMITY_DISCOUNT : 1));
      }
      held.set(i, vote);
    });
  });
  return scores;
}

const freeMad: Rule = {
  name: 'free-mad',
  family: 'aggregation',
  label: 'trajectory score (Free-MAD)',
  source: 'Cui et al., Free-MAD (arXiv 2509.11035)',
  decide(t): Decision {
    const why = noBasis(t);
    if (why !== null) return { available: false, why };
    const last = lastRound(t);
    if (last < 0) return neverRan(t, 0);
    let best: { vote: Vote; score: number } | null = null;
    for (const entry of freeMadScores(t).values()) if (best === null || entry.score > best.score) best = entry;
    return { available: true, stopRound: last, vote: best?.vote ?? null, spent: spentOn(t, notAfterRounds), note: best ? `score ${best.score.toFixed(1)}` : null };
  },
};

export const CLUSTER_VOTE: Rule = {
  name: 'cluster-vote',
  family: 'aggregation',
  label: 'cluster approval vote',
  source: 'the run itself (seed 001)',
  condition: 'cluster-vote',
  decide(t) {
    if (!t.clusterVote.recorded) return { available: false, why: t.clusterVote.why };
    return { available: true, stopRound: Math.max(0, lastRound(t)), vote: t.clusterVote.vote, spent: spentOn(t, (c) => c.stage !== 'synthesis'), note: t.clusterVote.note };
  },
};

export const aggregationRules: RuleFamilyFactory = (ctx) => [
  SYNTHESIZER,
  FINAL_MAJORITY,
  ROUND0_MAJORITY,
  ...Array.from({ length: ctx.maxRounds }, (_, i) => majorityAt(i + 1)),
  freeMad,
  CLUSTER_VOTE,
];
