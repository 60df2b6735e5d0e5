import { answerKey, answersMatch } from './extract.js';
import type { SuiteItem } from './item.js';

/**
 * Conformity and independence of a preset's panel over a bench run, from each agent's graded
 * answer in each round (docs/confidence.md): how often agents outside the round-0 majority
 * adopted it, whether right answers turned wrong by following the majority or by leaving it,
 * how alike the agents' errors are, and how many independent voters the panel is worth.
 */
export interface ConformityStats {
  preset: string;
  /** Agents outside a round-0 majority answer (over all items) and those holding it at the end. */
  outsideMajority: number;
  joinedMajority: number;
  majorityAdoption: number | null;
  /** Right→wrong changes between consecutive rounds: to the previous round's majority answer, or away from it. */
  rightToWrongToMajority: number;
  rightToWrongAway: number;
  /** Pairs of agents on their round-0 answers: items both got wrong, and both wrong with the same answer. */
  pairs: { a: string; b: string; items: number; bothWrong: number; sameWrong: number; correlation: number | null }[];
  /** sameWrong over items, over every pair: the share of items on which two agents are wrong alike. */
  sameWrongShare: number | null;
  /** Mean over pairs of sameWrong / bothWrong (ρ̄). */
  meanCorrelation: number | null;
  /** m / (1 + (m − 1) ρ̄): the panel's worth in independent voters. */
  effectiveVoters: number | null;
}

/** One item's debate: its gold answer and each agent's answer per round (index = round), null when unread. */
export interface ItemTrajectory {
  item: Pick<SuiteItem, 'answer' | 'kind'>;
  answers: Record<string, (string | null)[]>;
}

/** The answer held by strictly more agents than any other (by answer key); null on a tie or with none. */
function strictMajority(answers: readonly (string | null)[], kind: SuiteItem['kind']): string | null {
  const counts = new Map<string, number>();
  for (const a of answers) {
    const k = answerKey(a, kind);
    if (k !== null) counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const sorted = [...counts].sort((x, y) => y[1] - x[1]);
  if (sorted.length === 0 || (sorted[1] && sorted[1][1] === sorted[0]![1])) return null;
  return sorted[0]![0];
}

export function conformityStats(preset: string, agentIds: readonly string[], trajectories: readonly ItemTrajectory[]): ConformityStats {
  let outside = 0;
  let joined = 0;
  let toMajority = 0;
  let away = 0;
  for (const { item, answers } of trajectories) {
    const at = (id: string, round: number): string | null => answers[id]?.[round] ?? null;
    const last = (id: string): string | null => answers[id]?.at(-1) ?? null;
    const rounds = Math.max(0, ...agentIds.map((id) => answers[id]?.length ?? 0));
    const start = strictMajority(agentIds.map((id) => at(id, 0)), item.kind);
    if (start !== null) {
      for (const id of agentIds) {
        const k = answerKey(at(id, 0), item.kind);
        if (k === null || k === start) continue;
        outside++;
        if (answerKey(last(id), item.kind) === start) joined++;
      }
    }
    for (let r = 1; r < rounds; r++) {
      const before = strictMajority(agentIds.map((id) => at(id, r - 1)), item.kind);
      for (const id of agentIds) {
        const was = at(id, r - 1);
        const now = at(id, r);
        if (!answersMatch(was, item.answer, item.kind) || answersMatch(now, item.answer, item.kind) || now === null) continue;
        if (before !== null && answerKey(now, item.kind) === before) toMajority++;
        else away++;
      }
    }
  }
  const pairs: ConformityStats['pairs'] = [];
  for (let i = 0; i < agentIds.length; i++) {
    for (let j = i + 1; j < agentIds.length; j++) {
      const a = agentIds[i]!;
      const b = agentIds[j]!;
      let bothWrong = 0;
      let sameWrong = 0;
      for (const { item, answers } of trajectories) {
        const x = answers[a]?.[0] ?? null;
        const y = answers[b]?.[0] ?? null;
        if (answersMatch(x, item.answer, item.kind) || answersMatch(y, item.answer, item.kind)) continue;
        bothWrong++;
        const kx = answerKey(x, item.kind);
        if (kx !== null && kx === answerKey(y, item.kind)) sameWrong++;
      }
      pairs.push({ a, b, items: trajectories.length, bothWrong, sameWrong, correlation: bothWrong ? sameWrong / bothWrong : null });
    }
  }
  const defined = pairs.map((p) => p.correlation).filter((c): c is number => c !== null);
  const rho = defined.length ? defined.reduce((s, c) => s + c, 0) / defined.length : null;
  const m = agentIds.length;
  const pairItems = pairs.reduce((s, p) => s + p.items, 0);
  return {
    preset,
    outsideMajority: outside,
    joinedMajority: joined,
    majorityAdoption: outside ? joined / outside : null,
    rightToWrongToMajority: toMajority,
    rightToWrongAway: away,
    pairs,
    sameWrongShare: pairItems ? pairs.reduce((s, p) => s + p.sameWrong, 0) / pairItems : null,
    meanCorrelation: rho,
    effectiveVoters: rho === null || m === 0 ? null : m / (1 + (m - 1) * rho),
  };
}
