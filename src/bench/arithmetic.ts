import { RandomState } from './mt19937.js';
import type { SuiteItem } from './item.js';

/** Appended to every arithmetic question so the answer lands where the parser looks first. */
export const ARITHMETIC_INSTRUCTION = 'Finish your reply with the final result as a single number.';

export interface ArithmeticProblem {
  operands: [a: number, b: number, c: number, d: number, e: number, f: number];
  answer: number;
}

/**
 * Du et al.'s arithmetic problems: `np.random.seed(seed)`, then `count` times
 * `randint(0, 30, size=6)`, answer `a+b*c+d-e*f`.
 */
export function arithmeticProblems(count = 100, seed = 0): ArithmeticProblem[] {
  if (!Number.isSafeInteger(count) || count < 0) {
    throw new RangeError(`Expected \`count\` to be a non-negative integer, got ${count}`);
  }
  const random = new RandomState(seed);
  const problems: ArithmeticProblem[] = [];
  for (let i = 0; i < count; i++) {
    const [a = 0, b = 0, c = 0, d = 0, e = 0, f = 0] = random.randint(0, 30, 6);
    problems.push({ operands: [a, b, c, d, e, f], answer: a + b * c + d - e * f });
  }
  return problems;
}

/** The built-in `arithmetic` suite: ids `arith-000`, `arith-001`, … */
export function arithmeticSuite(count = 100, seed = 0): SuiteItem[] {
  return arithmeticProblems(count, seed).map(({ operands: [a, b, c, d, e, f], answer }, i) => ({
    id: `arith-${String(i).padStart(3, '0')}`,
    question: `What is the result of ${a}+${b}*${c}+${d}-${e}*${f}? ${ARITHMETIC_INSTRUCTION}`,
    answer: String(answer),
    kind: 'number' as const,
  }));
}
