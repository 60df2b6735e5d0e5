import { describe, expect, it } from 'vitest';
import { conformityStats } from '../../src/bench/conformity.js';

const num = (answer: string) => ({ answer, kind: 'number' as const });

describe('bench conformity figures', () => {
  it('counts a right answer turned wrong by following the majority, adoption, and alike errors', () => {
    const stats = conformityStats('p', ['a', 'b', 'c'], [
      // a is right alone at round 0 and follows the wrong majority 5 in round 1.
      { item: num('4'), answers: { a: ['4', '5'], b: ['5', '5'], c: ['5', '5'] } },
      // b and c are wrong with the same answer; a is right; nobody moves.
      { item: num('1'), answers: { a: ['1'], b: ['2'], c: ['2'] } },
      // Everyone is wrong, a and b alike, c otherwise; c leaves for a third wrong answer (not a right→wrong flip).
      { item: num('9'), answers: { a: ['3', '3'], b: ['3', '3'], c: ['6', '7'] } },
    ]);
    expect(stats).toMatchObject({ outsideMajority: 3, joinedMajority: 1, rightToWrongToMajority: 1, rightToWrongAway: 0 });
    expect(stats.majorityAdoption).toBeCloseTo(1 / 3, 12);
    expect(stats.pairs.map((p) => [p.a, p.b, p.bothWrong, p.sameWrong])).toEqual([
      ['a', 'b', 1, 1],
      ['a', 'c', 1, 0],
      ['b', 'c', 3, 2],
    ]);
    const rho = (1 + 0 + 2 / 3) / 3;
    expect(stats.meanCorrelation).toBeCloseTo(rho, 12);
    expect(stats.effectiveVoters).toBeCloseTo(3 / (1 + 2 * rho), 12);
    expect(stats.sameWrongShare).toBeCloseTo(3 / 9, 12);
  });
});
