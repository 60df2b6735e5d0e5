import { describe, expect, it } from 'vitest';
import { ARITHMETIC_INSTRUCTION, arithmeticProblems, arithmeticSuite } from '../../src/bench/arithmetic.js';
import { extractAnswer } from '../../src/bench/extract.js';
import { suiteItemSchema } from '../../src/bench/suite.js';

describe('arithmeticSuite', () => {
  it("regenerates Du et al.'s first three problems", () => {
    const [first, second, third] = arithmeticProblems();
    expect(first).toEqual({ operands: [12, 15, 21, 0, 3, 27], answer: 246 });
    expect(second).toEqual({ operands: [3, 7, 9, 19, 21, 18], answer: -293 });
    expect(third).toEqual({ operands: [4, 23, 6, 24, 24, 12], answer: -122 });
  });

  it('has exactly 40 negative answers among the 100, ranging from -616 to 824', () => {
    const answers = arithmeticSuite().map((item) => Number(item.answer));
    expect(answers).toHaveLength(100);
    expect(answers.filter((a) => a < 0)).toHaveLength(40);
    expect(Math.min(...answers)).toBe(-616);
    expect(Math.max(...answers)).toBe(824);
  });

  it('asks the question in Du et al.’s form followed by an instruction to end with the answer', () => {
    const [item] = arithmeticSuite(1);
    expect(item).toEqual({
      id: 'arith-000',
      question: `What is the result of 12+15*21+0-3*27? ${ARITHMETIC_INSTRUCTION}`,
      answer: '246',
      kind: 'number',
    });
  });

  it('produces items that pass the suite schema, with ids arith-000 to arith-099', () => {
    const items = arithmeticSuite();
    for (const item of items) expect(suiteItemSchema.safeParse(item).success).toBe(true);
    expect(items.at(-1)?.id).toBe('arith-099');
    expect(new Set(items.map((i) => i.id)).size).toBe(100);
  });

  it('keeps every gold answer readable by the answer extractor, minus sign included', () => {
    for (const item of arithmeticSuite()) {
      expect(extractAnswer(`So the result is ${item.answer}.`, 'number').value).toBe(item.answer);
    }
  });

  it('is a prefix of the longer suite and changes with the seed', () => {
    expect(arithmeticSuite(10)).toEqual(arithmeticSuite(100).slice(0, 10));
    expect(arithmeticSuite(3, 1)).not.toEqual(arithmeticSuite(3, 0));
  });
});
