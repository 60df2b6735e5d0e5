import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  accuracy,
  bootstrapCI,
  flipMatrix,
  majorityVote,
  mean,
  median,
  quantile,
  pairedBootstrapDiff,
} from '../../src/bench/stats.js';

const pattern = (n: number, right: (i: number) => boolean): boolean[] => Array.from({ length: n }, (_, i) => right(i));

describe('accuracy, mean and median', () => {
  it('computes the share of correct items', () => {
    expect(accuracy([true, false, true, true])).toBe(0.75);
  });

  it('returns NaN for empty input rather than a made-up number', () => {
    expect(accuracy([])).toBeNaN();
    expect(mean([])).toBeNaN();
    expect(median([])).toBeNaN();
  });

  it('takes the middle value, or the mean of the two middle values', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 10])).toBe(3.5);
    expect(mean([1, 2, 6])).toBe(3);
  });

  it('takes a quantile of unsorted values, interpolated between the nearest two', () => {
    expect(quantile([10, 0, 30, 20], 0.5)).toBe(15);
    expect(quantile([10, 0, 30, 20], 0.25)).toBe(7.5);
    expect(quantile([3, 1, 2], 0)).toBe(1);
    expect(quantile([3, 1, 2], 1)).toBe(3);
    expect(quantile([], 0.5)).toBeNaN();
  });
});

describe('bootstrapCI', () => {
  const seventy = pattern(40, (i) => i % 10 < 7);

  it('gives the same interval for the same seed and another for another seed', () => {
    const first = bootstrapCI(seventy, { seed: 7 });
    expect(bootstrapCI(seventy, { seed: 7 })).toEqual(first);
    expect(bootstrapCI(seventy, { seed: 8 })).not.toEqual(first);
  });

  // Same draws as numpy: RandomState(11), 500 × randint(0, 37, size=37), np.percentile(..., [2.5, 97.5]).
  it('matches the numpy percentile bootstrap on a fixed seed', () => {
    const correct = pattern(37, (i) => i % 3 !== 0);
    const ci = bootstrapCI(correct, { seed: 11, iterations: 500 });
    expect(ci.accuracy).toBeCloseTo(24 / 37, 12);
    expect(ci.low).toBeCloseTo(18 / 37, 12);
    expect(ci.high).toBeCloseTo(0.797972972972973, 12);
  });

  it('contains the observed accuracy', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 5, maxLength: 60 }), fc.nat(1000), (correct, seed) => {
        const { accuracy: observed, low, high } = bootstrapCI(correct, { seed, iterations: 300 });
        return low <= observed && observed <= high;
      }),
      { numRuns: 50 },
    );
  });

  it('narrows as the number of items grows', () => {
    const small = bootstrapCI(pattern(20, (i) => i % 10 < 7), { seed: 1 });
    const large = bootstrapCI(pattern(1000, (i) => i % 10 < 7), { seed: 1 });
    expect(large.high - large.low).toBeLessThan((small.high - small.low) / 3);
  });

  it('is [1, 1] when every item is right and [0, 0] when none is', () => {
    expect(bootstrapCI(pattern(30, () => true), { seed: 3 })).toEqual({ accuracy: 1, low: 1, high: 1 });
    expect(bootstrapCI(pattern(30, () => false), { seed: 3 })).toEqual({ accuracy: 0, low: 0, high: 0 });
  });

  it('widens with a higher confidence level', () => {
    const narrow = bootstrapCI(seventy, { seed: 2, level: 0.5 });
    const wide = bootstrapCI(seventy, { seed: 2, level: 0.99 });
    expect(wide.high - wide.low).toBeGreaterThan(narrow.high - narrow.low);
  });

  it('rejects a level outside (0, 1) and a non-positive iteration count', () => {
    expect(() => bootstrapCI(seventy, { level: 1 })).toThrow(/level/);
    expect(() => bootstrapCI(seventy, { iterations: 0 })).toThrow(/iterations/);
  });
});

describe('pairedBootstrapDiff', () => {
  it('gives a positive difference excluding zero when a is right wherever b is, and more', () => {
    const b = pattern(100, (i) => i % 2 === 0);
    const a = pattern(100, (i) => i % 2 === 0 || i % 10 === 1 || i % 10 === 3);
    const result = pairedBootstrapDiff(a, b, { seed: 4 });
    expect(result.diff).toBeCloseTo(0.2, 12);
    expect(result.low).toBeGreaterThan(0);
    expect(result.high).toBeGreaterThanOrEqual(result.diff);
  });

  it('flips sign when the conditions are swapped', () => {
    const a = pattern(60, (i) => i % 3 !== 0);
    const b = pattern(60, (i) => i % 2 === 0);
    const ab = pairedBootstrapDiff(a, b, { seed: 9 });
    const ba = pairedBootstrapDiff(b, a, { seed: 9 });
    expect(ba.diff).toBeCloseTo(-ab.diff, 12);
    expect(ba.low).toBeCloseTo(-ab.high, 12);
    expect(ba.high).toBeCloseTo(-ab.low, 12);
  });

  it('is exactly zero for identical conditions, however noisy', () => {
    const a = pattern(50, (i) => (i * 7) % 5 < 2);
    expect(pairedBootstrapDiff(a, [...a], { seed: 1 })).toEqual({ diff: 0, low: 0, high: 0 });
  });

  it('rejects conditions scored on different numbers of items', () => {
    expect(() => pairedBootstrapDiff([true], [true, false])).toThrow(/equal length/);
  });
});

describe('flipMatrix', () => {
  it('counts each transition on a hand-computed case, with null as wrong', () => {
    const round0 = [true, true, false, false, null, true, null, false];
    const final = [true, false, true, false, true, null, null, true];
    expect(flipMatrix(round0, final)).toEqual({ rightToRight: 1, rightToWrong: 2, wrongToRight: 3, wrongToWrong: 2 });
  });

  it('rejects rounds of different lengths', () => {
    expect(() => flipMatrix([true], [])).toThrow(/equal length/);
  });
});

describe('majorityVote', () => {
  it('picks the most common answer, grouping equal numbers written differently', () => {
    expect(majorityVote(['12', '1,234', '1234', '12', '1234'], 'number')).toBe('1,234');
  });

  it('breaks a tie in favour of the answer first given', () => {
    expect(majorityVote(['7', '5', '5', '7'], 'number')).toBe('7');
    expect(majorityVote(['b', 'A', 'a', 'B'], 'choice')).toBe('b');
  });

  it('ignores null and unparseable answers', () => {
    expect(majorityVote([null, 'n/a', null, '3'], 'number')).toBe('3');
    expect(majorityVote([null, null], 'choice')).toBeNull();
    expect(majorityVote([], 'text')).toBeNull();
  });

  it('groups text ignoring case and whitespace', () => {
    expect(majorityVote(['Paris', 'Lyon', ' paris '], 'text')).toBe('Paris');
  });
});
