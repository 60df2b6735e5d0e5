import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RandomState } from '../../src/bench/mt19937.js';

describe('RandomState', () => {
  it('gives the reference MT19937 first output for the reference seed 5489', () => {
    expect(new RandomState(5489).nextUint32()).toBe(3499211612);
  });

  it('seeds from an array with init_by_array, matching the reference mt19937ar output', () => {
    const random = new RandomState([0x123, 0x234, 0x345, 0x456]);
    expect(Array.from({ length: 5 }, () => random.nextUint32())).toEqual([
      1067595299, 955945823, 477289528, 4107218783, 4228976476,
    ]);
  });

  it('reproduces numpy legacy randint(0, 30, size=6) after seed 0', () => {
    const random = new RandomState(0);
    expect(random.randint(0, 30, 6)).toEqual([12, 15, 21, 0, 3, 27]);
    expect(random.randint(0, 30, 6)).toEqual([3, 7, 9, 19, 21, 18]);
    expect(random.randint(0, 30, 6)).toEqual([4, 23, 6, 24, 24, 12]);
  });

  // Expected values printed by numpy 2.4.6: np.random.RandomState(7).randint(...).
  it('uses 64-bit masked draws, high word first, when the range needs more than 32 bits', () => {
    const random = new RandomState(7);
    expect(random.randint(0, 2 ** 53, 3)).toEqual([2516435200042180, 2465213813631478, 7765043079598291]);
    expect(random.randint(-(2 ** 53) + 1, 2 ** 53, 2)).toEqual([5914923542591080, -697793423741766]);
  });

  it('draws doubles like random_sample from two 32-bit outputs', () => {
    const random = new RandomState(0);
    const value = random.random();
    const check = new RandomState(0);
    const a = check.nextUint32() >>> 5;
    const b = check.nextUint32() >>> 6;
    expect(value).toBe((a * 2 ** 26 + b) / 2 ** 53);
  });

  it('keeps every randint draw inside [low, high)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        fc.integer({ min: -1e6, max: 1e6 }),
        fc.integer({ min: 1, max: 2 ** 34 }),
        (seed, low, width) => {
          const values = new RandomState(seed).randint(low, low + width, 20);
          return values.every((v) => Number.isInteger(v) && v >= low && v < low + width);
        },
      ),
    );
  });

  it('returns low without drawing when the range holds one value', () => {
    const random = new RandomState(3);
    expect(random.randint(5, 6, 3)).toEqual([5, 5, 5]);
    expect(random.nextUint32()).toBe(new RandomState(3).nextUint32());
  });

  it('rejects seeds outside 32 bits and empty ranges', () => {
    expect(() => new RandomState(-1)).toThrow(RangeError);
    expect(() => new RandomState(2 ** 32)).toThrow(/seed/);
    expect(() => new RandomState([])).toThrow(/non-empty/);
    expect(() => new RandomState(0).randint(3, 3)).toThrow(/low/);
  });
});
