import { describe, expect, it } from 'vitest';
import { answerKey, answersMatch, extractAnswer, parseNumber } from '../../src/bench/extract.js';

const choices = ['Paris', 'Lyon', 'Nice', 'Lille'];

describe('extractAnswer for numbers', () => {
  it('keeps the minus sign of a negative final answer', () => {
    expect(extractAnswer('3+7*9+19-21*18 = 85 - 378 = -293', 'number')).toEqual({ value: '-293', method: 'last-number' });
  });

  it('reads a unicode minus as a minus sign', () => {
    expect(extractAnswer('The result is \u2212122', 'number').value).toBe('-122');
  });

  it('treats a dash between numbers as subtraction, not a sign', () => {
    expect(extractAnswer('That leaves 12-5', 'number').value).toBe('5');
    expect(extractAnswer('That leaves 12 - 5', 'number').value).toBe('5');
  });

  it('joins thousands separated by commas or spaces', () => {
    expect(extractAnswer('In total they paid 1,234 dollars', 'number').value).toBe('1234');
    expect(extractAnswer('In total they paid 1 234 dollars', 'number').value).toBe('1234');
    expect(extractAnswer('Total: -12,345,678.5', 'number').value).toBe('-12345678.5');
  });

  it('keeps decimals and drops a sentence-ending period', () => {
    expect(extractAnswer('Each share is 3.75.', 'number').value).toBe('3.75');
    expect(extractAnswer('So we get 42.', 'number').value).toBe('42');
  });

  it('does not join numbers in a comma-separated list', () => {
    expect(extractAnswer('The values are 12,15,21', 'number').value).toBe('21');
  });

  it('prefers a JSON answer field anywhere in the reply', () => {
    const reply = 'Working: 12+15*21 = 327.\n```json\n{"reasoning": "add {them} up", "answer": -293}\n```\nDone in 2 steps.';
    expect(extractAnswer(reply, 'number')).toEqual({ value: '-293', method: 'json' });
  });

  it('reads a JSON answer given as a string with separators', () => {
    expect(extractAnswer('{"answer": "1,234"}', 'number')).toEqual({ value: '1234', method: 'json' });
  });

  it('finds the answer field in a nested JSON object', () => {
    expect(extractAnswer('{"result": {"answer": 7}}', 'number')).toEqual({ value: '7', method: 'json' });
  });

  it('falls back to the text when the JSON answer is not a number', () => {
    expect(extractAnswer('{"answer": "unsure"} but my guess is 12', 'number')).toEqual({ value: '12', method: 'last-number' });
  });

  it('reads the last \\boxed{} answer, including LaTeX thousands', () => {
    expect(extractAnswer('First \\boxed{3}, then corrected: \\boxed{-1{,}250}. Check: 5', 'number')).toEqual({
      value: '-1250',
      method: 'boxed',
    });
  });

  it('takes the number stated after "the answer is" over a later number', () => {
    expect(extractAnswer('The answer is -293, because 85 - 378 gives it; check 378', 'number')).toEqual({
      value: '-293',
      method: 'text',
    });
  });

  it('reads an answer statement wrapped in markdown bold', () => {
    expect(extractAnswer('**Final answer: -293**', 'number')).toEqual({ value: '-293', method: 'text' });
  });

  it('skips an "answer is" that starts an expression', () => {
    expect(extractAnswer('The answer is 12+15*21+0-3*27 = 246', 'number')).toEqual({ value: '246', method: 'last-number' });
  });

  it('returns null for a reply without any number', () => {
    expect(extractAnswer('I cannot compute this.', 'number')).toEqual({ value: null, method: 'none' });
    expect(extractAnswer('', 'number')).toEqual({ value: null, method: 'none' });
  });
});

describe('extractAnswer for choices', () => {
  it('takes the last (X) letter', () => {
    expect(extractAnswer('Not (A) but rather (C).', 'choice', choices)).toEqual({ value: 'C', method: 'letter' });
  });

  it('ignores a parenthesised letter that is not among the choices', () => {
    expect(extractAnswer('I pick (B). See note (E).', 'choice', choices).value).toBe('B');
  });

  it('falls back to a bare letter after "answer"', () => {
    expect(extractAnswer('Thinking it over, the answer is D.', 'choice', choices)).toEqual({ value: 'D', method: 'letter' });
    expect(extractAnswer('Final answer: **B**', 'choice', choices).value).toBe('B');
  });

  it('prefers an "Answer: B" that follows a restated list of (A) to (D) options', () => {
    expect(extractAnswer('(A) Paris (B) Lyon (C) Nice (D) Lille\nAnswer: B', 'choice', choices).value).toBe('B');
  });

  it('does not read the article "a" as choice A', () => {
    expect(extractAnswer('The answer is a matter of taste.', 'choice', choices)).toEqual({ value: null, method: 'none' });
  });

  it('accepts a reply that is only a letter', () => {
    expect(extractAnswer('  c. ', 'choice', choices)).toEqual({ value: 'C', method: 'letter' });
  });

  it('reads a JSON answer given as a letter or as the option text', () => {
    expect(extractAnswer('{"answer": "(b)"}', 'choice', choices)).toEqual({ value: 'B', method: 'json' });
    expect(extractAnswer('{"answer": "nice"}', 'choice', choices)).toEqual({ value: 'C', method: 'json' });
  });

  it('reads a boxed letter', () => {
    expect(extractAnswer('\\boxed{A}', 'choice', choices)).toEqual({ value: 'A', method: 'boxed' });
  });

  it('returns null when no letter is given', () => {
    expect(extractAnswer('It is the capital.', 'choice', choices).value).toBeNull();
  });
});

describe('extractAnswer for text', () => {
  it('takes the statement after "answer is" without its period', () => {
    expect(extractAnswer('Let me think.\nThe answer is Marie Curie.', 'text')).toEqual({ value: 'Marie Curie', method: 'text' });
  });

  it('prefers a JSON answer field', () => {
    expect(extractAnswer('{"answer": " blue "}', 'text')).toEqual({ value: 'blue', method: 'json' });
  });

  it('returns null for an empty reply', () => {
    expect(extractAnswer('   ', 'text')).toEqual({ value: null, method: 'none' });
  });
});

describe('parseNumber', () => {
  it('parses one number with sign, grouping, decimals and a final period', () => {
    expect(parseNumber('-1,234')).toBe(-1234);
    expect(parseNumber('\u22125')).toBe(-5);
    expect(parseNumber(' 1 000 000 ')).toBe(1000000);
    expect(parseNumber('2.50.')).toBe(2.5);
  });

  it('rejects anything that is not exactly one number', () => {
    for (const text of ['', 'abc', '12 apples', '1,23', '3 - 4', '--5']) expect(parseNumber(text)).toBeNull();
  });
});

describe('answersMatch', () => {
  it('compares numbers within 1e-6', () => {
    expect(answersMatch('-293', '-293', 'number')).toBe(true);
    expect(answersMatch('1234', '1,234', 'number')).toBe(true);
    expect(answersMatch('0.30000000000000004', '0.3', 'number')).toBe(true);
    expect(answersMatch('246.001', '246', 'number')).toBe(false);
    expect(answersMatch('293', '-293', 'number')).toBe(false);
  });

  it('compares letters and text ignoring case and whitespace', () => {
    expect(answersMatch(' b ', 'B', 'choice')).toBe(true);
    expect(answersMatch('C', 'B', 'choice')).toBe(false);
    expect(answersMatch('  marie   CURIE', 'Marie Curie', 'text')).toBe(true);
  });

  it('scores a null or unparseable prediction as wrong, never right', () => {
    expect(answersMatch(null, '0', 'number')).toBe(false);
    expect(answersMatch('n/a', '0', 'number')).toBe(false);
    expect(answersMatch(null, 'A', 'choice')).toBe(false);
    expect(answersMatch('', '', 'text')).toBe(false);
    expect(answersMatch(extractAnswer('no idea', 'number').value, '0', 'number')).toBe(false);
  });

  it('groups equal answers under one key', () => {
    expect(answerKey('1,234', 'number')).toBe(answerKey('1234', 'number'));
    expect(answerKey('(b)', 'choice')).toBe('B');
    expect(answerKey('garbage', 'number')).toBeNull();
  });
});
