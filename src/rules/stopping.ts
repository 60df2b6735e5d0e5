import { exitDecision } from '../protocol/convergence.js';
import {
  type Decision,
  type Rule,
  type RuleFamilyFactory,
  type Trajectory,
  type TrajectoryRound,
  lastRound,
  neverRan,
  notAfterRounds,
  noBasis,
  plurality,
  spentOn,
  spentThrough,
  tally,
} from './trajectory.js';
import { plural } from '../plural.js';

/**
 * Stopping rules: each walks the rounds that ran and stops at the first one its test accepts
 * (or at the preset's ceiling), then decides by that round's majority. A rule that would run
 * past the last recorded round says which round it needs: what the agents would have said
 * there is not in the record.
 */

/** Thresholds the sweep tries: 0.60 to 0.95 by 0.05. */
export const THRESHOLDS = [0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95] as const;

function stopAt(t: Trajectory, stops: (round: TrajectoryRound) => boolean, opts: { judge: boolean; what: string }): Decision {
  const why = noBasis(t);
  if (why !== null) return { available: false, why };
  if (t.protocol !== 'debate') return { available: false, why: `stopping rules read a debate's critique rounds; this debate ran the ${t.protocol} protocol` };
  for (let r = 0; r <= t.maxRounds; r++) {
    const round = t.rounds[r];
    if (round === undefined) return neverRan(t, r);
    const stopped = stops(round);
    if (stopped || r >= t.maxRounds) {
      return {
        available: true,
        stopRound: r,
        vote: plurality(round.votes),
        spent: spentThrough(t, r, { judge: opts.judge }),
        note: stopped ? null : `${opts.what} not met by round ${r}: stopped at the ceiling of ${t.maxRounds}`,
      };
    }
  }
  return neverRan(t, t.maxRounds + 1);
}

const recorded: Rule = {
  name: 'stop:recorded',
  family: 'stopping',
  label: 'as recorded (judge at the preset threshold), majority',
  source: 'the run itself',
  decide(t) {
    const why = noBasis(t);
    if (why !== null) return { available: false, why };
    const last = lastRound(t);
    if (last < 0) return neverRan(t, 0);
    return { available: true, stopRound: last, vote: plurality(t.rounds[last]!.votes), spent: spentOn(t, notAfterRounds), note: null };
  },
};

function threshold(x: number): Rule {
  return {
    name: `stop:threshold@${x.toFixed(2)}`,
    family: 'stopping',
    label: `judge threshold ${x.toFixed(2)}, majority`,
    source: 'Conclave exit rule (convergence ≥ threshold), swept',
    decide: (t) =>
      stopAt(
        t,
        // Over the judge's stances the rule is the engine's: a score whose own stances split the panel does not stop it. Graded answers are not the judge's stances: the score alone.
        (round) => exitDecision({ round: round.round, maxRounds: Number.POSITIVE_INFINITY, convergence: round.convergence, threshold: x, stanceSizes: t.basis.kind === 'stances' ? [...tally(round.votes).values()] : null }) !== null,
        { judge: true, what: `convergence ≥ ${x.toFixed(2)}` },
      ),
  };
}

function fixedRounds(k: number): Rule {
  return {
    name: `stop:rounds=${k}`,
    family: 'stopping',
    label: `${k} critique round${k === 1 ? '' : 's'}, no judge, majority`,
    source: 'Kaesberg et al. 2025 (rounds before voting)',
    decide: (t) => stopAt(t, (round) => round.round >= k, { judge: false, what: plural(k, 'round') }),
  };
}

const unanimous: Rule = {
  name: 'stop:unanimous',
  family: 'stopping',
  label: 'first unanimous round, majority',
  source: 'consensus stopping (Du et al. 2024)',
  decide: (t) =>
    stopAt(
      t,
      (round) => {
        const counts = tally(round.votes);
        return counts.size === 1 && round.votes.every((v) => v !== null);
      },
      { judge: false, what: 'unanimity' },
    ),
};

/** A round whose leading answer is held by more than half the panel: the others together cannot outvote it. */
const settled: Rule = {
  name: 'stop:settled',
  family: 'stopping',
  label: 'first round with an absolute majority, majority',
  source: 'absolute-majority stop (cf. EMS, 2026)',
  decide: (t) => stopAt(t, (round) => Math.max(0, ...tally(round.votes).values()) * 2 > round.votes.length, { judge: false, what: 'an absolute majority' }),
};

export const stoppingRules: RuleFamilyFactory = (ctx) => [
  recorded,
  ...[...new Set([...THRESHOLDS, ...(ctx.thresholds ?? [])])].sort((a, b) => a - b).map(threshold),
  ...Array.from({ length: ctx.maxRounds + 1 }, (_, k) => fixedRounds(k)),
  unanimous,
  settled,
];
