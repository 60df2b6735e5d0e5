import { type Decision, type Rule, type RuleFamilyFactory, type Trajectory, type Vote, neverRan, noBasis, noIndependentAnswers, plurality, spentOn, tally } from './trajectory.js';

/**
 * Early majority over round 0 (EMS): call the agents one at a time and stop as soon as the
 * leading answer cannot be overturned by the agents not yet called. The decision is the
 * leader then; the calls it needed are the openings of the agents taken.
 */

function order(t: Trajectory, byReliability: boolean): { ids: string[]; note: string | null } {
  if (!byReliability) return { ids: t.agents, note: null };
  const reliability = t.reliability;
  if (reliability === undefined || Object.keys(reliability).length === 0) return { ids: t.agents, note: 'no earlier items to measure reliability: panel order' };
  const rank = (id: string): number => reliability[id] ?? -1;
  // Array.sort is stable, so equally reliable agents keep the panel's order.
  return { ids: [...t.agents].sort((a, b) => rank(b) - rank(a)), note: null };
}

/** How many agents, taken in `ids` order, settle round 0, and the answer they settle on. */
export function earlyMajority(t: Trajectory, ids: readonly string[]): { taken: number; vote: Vote | null } {
  const round = t.rounds[0]!;
  const voteOf = new Map(t.agents.map((id, i) => [id, round.votes[i] ?? null]));
  const taken: (Vote | null)[] = [];
  for (const id of ids) {
    taken.push(voteOf.get(id) ?? null);
    const remaining = ids.length - taken.length;
    const counts = [...tally(taken).values()].sort((a, b) => b - a);
    const [lead = 0, second = 0] = counts;
    if (lead > second + remaining) return { taken: taken.length, vote: plurality(taken) };
  }
  return { taken: taken.length, vote: plurality(taken) };
}

function ems(byReliability: boolean): Rule {
  return {
    name: byReliability ? 'ems:reliability' : 'ems:panel',
    family: 'early-majority',
    label: byReliability ? 'early majority, most reliable first' : 'early majority, panel order',
    source: 'EMS, Efficient Majority-then-Stopping (arXiv 2604.02863)',
    decide(t): Decision {
      const why = noIndependentAnswers(t) ?? noBasis(t);
      if (why !== null) return { available: false, why };
      if (t.rounds[0] === undefined) return neverRan(t, 0);
      const { ids, note } = order(t, byReliability);
      const { taken, vote } = earlyMajority(t, ids);
      const called = new Set(ids.slice(0, taken));
      return {
        available: true,
        stopRound: 0,
        vote,
        spent: spentOn(t, (c) => c.stage === 'opening' && called.has(c.agentId)),
        note: [`${taken} of ${ids.length} agents called`, note].filter(Boolean).join('; '),
      };
    },
  };
}

export const earlyMajorityRules: RuleFamilyFactory = () => [ems(false), ems(true)];
