import { answerKey } from './extract.js';
import type { AnswerKind } from './extract.js';
import { RandomState } from './mt19937.js';

export interface BootstrapOptions {
  /** Resamples drawn; default 2000. */
  iterations?: number;
  /** Seed of the MT19937 stream; default 0. The same seed gives the same interval. */
  seed?: number;
  /** Coverage of the interval; default 0.95. */
  level?: number;
}

export interface Interval {
  low: number;
  high: number;
}

export interface FlipMatrix {
  rightToRight: number;
  rightToWrong: number;
  wrongToRight: number;
  wrongToWrong: number;
}

/** Arithmetic mean; NaN for an empty list. */
export function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (const value of values) sum += value;
  return sum / values.length;
}

/** Median (mean of the two middle values for an even count); NaN for an empty list. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The `q` quantile (0 to 1) of unsorted values, as `quantileOfSorted` takes it; NaN for an empty list. */
export function quantile(values: readonly number[], q: number): number {
  return values.length === 0 ? Number.NaN : quantileOfSorted([...values].sort((x, y) => x - y), q);
}

/** Share of true values; NaN for an empty list. */
export function accuracy(correct: readonly boolean[]): number {
  return mean(correct.map((c) => (c ? 1 : 0)));
}

/** Quantile with linear interpolation between order statistics (numpy's default). */
function quantileOfSorted(sorted: readonly number[], q: number): number {
  const position = (sorted.length - 1) * q;
  const below = Math.floor(position);
  const above = Math.min(below + 1, sorted.length - 1);
  const lower = sorted[below]!;
  return lower + (sorted[above]! - lower) * (position - below);
}

function resolveOptions(options: BootstrapOptions): Required<BootstrapOptions> {
  const { iterations = 2000, seed = 0, level = 0.95 } = options;
  if (!Number.isSafeInteger(iterations) || iterations < 1) {
    throw new RangeError(`Expected \`iterations\` to be a positive integer, got ${iterations}`);
  }
  if (!(level > 0 && level < 1)) throw new RangeError(`Expected \`level\` to be between 0 and 1, got ${level}`);
  return { iterations, seed, level };
}

/** The last few resample sets drawn: a report bootstraps many conditions and rules over the same items and seed, which draw the same indices. */
const drawn = new Map<string, readonly number[][]>();

/** `iterations` resamples of n indices from an MT19937 seeded with `seed`, drawn once per (n, iterations, seed). */
function resamples(n: number, iterations: number, seed: number): readonly number[][] {
  const key = `${n}/${iterations}/${seed}`;
  let sets = drawn.get(key);
  if (sets === undefined) {
    const random = new RandomState(seed);
    const fresh: number[][] = [];
    for (let r = 0; r < iterations; r++) fresh.push(random.randint(0, n, n));
    sets = fresh;
    if (drawn.size >= 4) drawn.delete(drawn.keys().next().value!);
    drawn.set(key, sets);
  }
  return sets;
}

/**
 * Percentile bootstrap of a statistic over item indices: each resample draws
 * n indices with replacement (numpy-compatible `randint(0, n, size=n)` on an
 * MT19937 seeded with `seed`).
 */
function bootstrap(n: number, statistic: (indices: readonly number[]) => number, options: BootstrapOptions): Interval {
  const { iterations, seed, level } = resolveOptions(options);
  if (n === 0) return { low: Number.NaN, high: Number.NaN };
  const stats: number[] = [];
  for (const indices of resamples(n, iterations, seed)) stats.push(statistic(indices));
  stats.sort((x, y) => x - y);
  const tail = (1 - level) / 2;
  return { low: quantileOfSorted(stats, tail), high: quantileOfSorted(stats, 1 - tail) };
}

/** Percentile bootstrap confidence interval for an accuracy. */
export function bootstrapCI(correct: readonly boolean[], options: BootstrapOptions = {}): Interval & { accuracy: number } {
  const interval = bootstrap(
    correct.length,
    (indices) => {
      let hits = 0;
      for (const i of indices) if (correct[i]) hits++;
      return hits / indices.length;
    },
    options,
  );
  return { accuracy: accuracy(correct), ...interval };
}

/**
 * Accuracy of `a` minus accuracy of `b` on the same items, with a paired
 * percentile bootstrap interval: items are resampled jointly, so what the two
 * conditions share (easy and hard items) cancels out.
 */
export function pairedBootstrapDiff(
  a: readonly boolean[],
  b: readonly boolean[],
  options: BootstrapOptions = {},
): Interval & { diff: number } {
  if (a.length !== b.length) {
    throw new RangeError(`Expected paired results of equal length, got ${a.length} and ${b.length}`);
  }
  const interval = bootstrap(
    a.length,
    (indices) => {
      let delta = 0;
      for (const i of indices) delta += (a[i] ? 1 : 0) - (b[i] ? 1 : 0);
      return delta / indices.length;
    },
    options,
  );
  return { diff: accuracy(a) - accuracy(b), ...interval };
}

/** How item correctness moved from round 0 to the final round; null (unparseable) counts as wrong. */
export function flipMatrix(round0: readonly (boolean | null)[], final: readonly (boolean | null)[]): FlipMatrix {
  if (round0.length !== final.length) {
    throw new RangeError(`Expected rounds of equal length, got ${round0.length} and ${final.length}`);
  }
  const matrix: FlipMatrix = { rightToRight: 0, rightToWrong: 0, wrongToRight: 0, wrongToWrong: 0 };
  round0.forEach((before, i) => {
    const after = final[i] === true;
    if (before === true) matrix[after ? 'rightToRight' : 'rightToWrong']++;
    else matrix[after ? 'wrongToRight' : 'wrongToWrong']++;
  });
  return matrix;
}

/**
 * The most common answer. Answers are grouped as {@link answerKey} does
 * (`1,234` and `1234` are one vote; `b` and `B` too); null and unparseable
 * answers are ignored. Ties go to the group whose first vote came earliest,
 * and the winner is returned as that earliest answer was written. Null when
 * no answer parses.
 */
export function majorityVote(answers: readonly (string | null)[], kind: AnswerKind): string | null {
  const groups = new Map<string, { first: string; count: number }>();
  for (const answer of answers) {
    const key = answerKey(answer, kind);
    if (key === null || answer === null) continue;
    const group = groups.get(key);
    if (group === undefined) groups.set(key, { first: answer, count: 1 });
    else group.count++;
  }
  // Map iteration follows first insertion, so a strict `>` keeps the earliest of a tie.
  let winner: { first: string; count: number } | undefined;
  for (const group of groups.values()) if (winner === undefined || group.count > winner.count) winner = group;
  return winner?.first ?? null;
}
