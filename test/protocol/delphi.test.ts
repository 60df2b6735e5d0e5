import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { delphiConfidence } from '../../src/protocol/confidence.js';
import { anonymousText, delphiRoundMessages, delphiSection, delphiStop, fmt, spreadOf, summarize } from '../../src/protocol/delphi.js';
import type { TurnRecord } from '../../src/protocol/records.js';

const finite = (s: object): boolean => Object.values(s).every((v) => typeof v === 'number' && Number.isFinite(v));
const turn = (agentId: string, estimate: number): TurnRecord =>
  ({ agentId, round: 1, status: 'ok', opening: { position: 'p', reasoning: 'r', confidence: 0.5, estimate } }) as unknown as TurnRecord;

describe('the median and quartiles of a Delphi round', () => {
  it('finds the median 0 between two finite estimates at ±1.5e308, with finite quartiles and spread', () => {
    const s = summarize([1.5e308, -1.5e308])!;
    expect(s).toEqual({ n: 2, median: 0, q1: -7.5e307, q3: 7.5e307, iqr: 1.5e308 });
    expect(spreadOf(s, null, true)).toBe(1.5e308);
  });

  it('holds a spread wider than a double at the largest finite number, so the stop rule still reads it', () => {
    const s = summarize([-1.7e308, -1.7e308, 1.7e308, 1.7e308])!;
    expect(s).toMatchObject({ median: 0, q1: -1.7e308, q3: 1.7e308, iqr: Number.MAX_VALUE });
    const spread = spreadOf(s, null, true)!;
    const stop = delphiStop([spread, spread], 1, 4);
    expect(stop?.reason).toBe('stable');
    expect(stop?.detail).not.toMatch(/NaN|Infinity/);
    // A round that narrows from it holds another.
    expect(delphiStop([spread, summarize([-1, 1])!.iqr], 1, 4)).toBeNull();
  });

  it('gives finite figures in order, within the numbers, for any finite estimates', () => {
    // Ordinary doubles, and magnitudes near the largest double of either sign, where a difference overflows.
    const estimate = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.double({ min: 1e307, max: Number.MAX_VALUE, noNaN: true }),
      fc.double({ min: -Number.MAX_VALUE, max: -1e307, noNaN: true }),
    );
    fc.assert(
      fc.property(fc.array(estimate, { minLength: 1, maxLength: 9 }), (values) => {
        const s = summarize(values)!;
        expect(finite(s)).toBe(true);
        expect(Math.min(...values) <= s.q1 && s.q1 <= s.median && s.median <= s.q3 && s.q3 <= Math.max(...values)).toBe(true);
        expect(s.iqr).toBeGreaterThanOrEqual(0);
      }),
    );
  });

  it('stays exact for ordinary numbers', () => {
    expect(summarize([10, 50, 90])).toEqual({ n: 3, median: 50, q1: 30, q3: 70, iqr: 40 });
    expect(summarize([4, 1, 3, 2])).toEqual({ n: 4, median: 2.5, q1: 1.75, q3: 3.25, iqr: 1.5 });
    expect(summarize([0.0002, 0.0003, 0.0004])).toMatchObject({ median: 0.0003, q1: 0.00025, q3: 0.00035 });
    expect(summarize([7, 7, 7, 7])).toEqual({ n: 4, median: 7, q1: 7, q3: 7, iqr: 0 });
    expect(summarize([-5])).toEqual({ n: 1, median: -5, q1: -5, q3: -5, iqr: 0 });
  });
});

describe('how Delphi prints a number', () => {
  it('keeps small estimates as written instead of rounding them to 0', () => {
    expect(fmt(0.0002)).toBe('0.0002');
    expect(fmt(0.00025)).toBe('0.00025');
    expect(fmt(-0.0003)).toBe('-0.0003');
    expect(fmt(0.000001)).toBe('0.000001');
    expect(fmt(2e-7)).toBe('2e-7');
    expect(fmt(1.25e-12)).toBe('1.25e-12');
  });

  it('prints integers plainly and other numbers to six significant digits, never dropping the integer part', () => {
    expect(fmt(50)).toBe('50');
    expect(fmt(-3)).toBe('-3');
    expect(fmt(0)).toBe('0');
    expect(fmt(42.5)).toBe('42.5');
    expect(fmt(0.1 + 0.2)).toBe('0.3');
    expect(fmt(1 / 3)).toBe('0.333333');
    expect(fmt(12.3456789)).toBe('12.3457');
    expect(fmt(123456.7)).toBe('123457');
    expect(fmt(999999.7)).toBe('1000000');
    expect(fmt(1234567.891)).toBe('1234568');
    expect(fmt(123456789012)).toBe('123456789012');
    expect(fmt(1e20)).toBe('100000000000000000000');
  });

  it('writes huge magnitudes in exponent form, and never throws on a value that is not finite', () => {
    expect(fmt(1.5e308)).toBe('1.5e+308');
    expect(fmt(-1.5e308)).toBe('-1.5e+308');
    expect(fmt(7.5e307)).toBe('7.5e+307');
    expect(fmt(Number.MAX_VALUE)).toBe('1.79769e+308');
    expect(fmt(1e21)).toBe('1e+21');
    expect(fmt(Infinity)).toBe('Infinity');
    expect(fmt(Number.NaN)).toBe('NaN');
    expect(fmt(null as unknown as number)).toBe('null');
  });

  it('reads back every number of up to six significant digits as written', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 999_999 }), fc.integer({ min: -12, max: 9 }), fc.boolean(), (digits, exp, negative) => {
        const x = Number(`${negative ? '-' : ''}${digits}e${exp}`);
        expect(Number(fmt(x))).toBe(x);
      }),
    );
  });

  it('shows small estimates as written in the panel prompts, the synthesis section and the confidence', () => {
    const s = summarize([0.0002, 0.0003, 0.0004])!;
    expect(anonymousText({ answer: 'Rarely.', estimate: 0.0002, reason: 'Logs.' })).toContain('Estimate: 0.0002');
    const prompt = delphiRoundMessages('How often?', null, 1, null, [], s, true).at(-1)!.content;
    expect(prompt).toContain('median 0.0003, lower quartile 0.00025, upper quartile 0.00035');
    const section = delphiSection({ numeric: true, summary: s, mode: null, of: 3 }, [turn('a', 0.0002), turn('b', 0.0003), turn('c', 0.0004)]);
    expect(section).toContain('is 0.0003 (lower quartile 0.00025, upper quartile 0.00035');
    expect(section).toContain('- a: 0.0002');
    const rated = delphiConfidence({ numeric: true, summary: s, modalShare: null, of: 3, firstSpread: s.iqr, finalSpread: s.iqr, threshold: 0.85 });
    expect(rated.basis[0]).toBe('IQR 0.0001 = 33% of the median');
  });
});

describe('the confidence of a Delphi record without its figures', () => {
  it('rates a final summary whose median and quartiles were stored as null LOW, not as a spread of 0', () => {
    const stored = JSON.parse(JSON.stringify({ n: 2, median: Infinity, q1: Infinity, q3: Infinity })) as { n: number; median: number; q1: number; q3: number };
    const rated = delphiConfidence({ numeric: true, summary: stored, modalShare: null, of: 2, firstSpread: null, finalSpread: null, threshold: 0.85 });
    expect(rated.level).toBe('low');
    expect(rated.basis.join(' ')).toContain('no summary');
  });

  it('rates two estimates at ±1.5e308 LOW: the spread is all of the median', () => {
    const s = summarize([-1.5e308, 1.5e308])!;
    const rated = delphiConfidence({ numeric: true, summary: s, modalShare: null, of: 2, firstSpread: s.iqr, finalSpread: s.iqr, threshold: 0.85 });
    expect(rated.level).toBe('low');
    expect(rated.basis[0]).toBe('IQR 1.5e+308 = all of the median');
  });
});
