import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { arithmeticSuite } from '../../src/bench/arithmetic.js';
import { importGsm8k, importMmlu, loadSuite, parseCsv, parseSuite } from '../../src/bench/suite.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'conclave-suite-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function file(name: string, content: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

const jsonl = (...rows: unknown[]): string => rows.map((row) => JSON.stringify(row)).join('\n') + '\n';

/** The error a call throws, so tests can look at its message and type. */
async function failure(run: () => unknown): Promise<InputError> {
  try {
    await run();
  } catch (err) {
    expect(err).toBeInstanceOf(InputError);
    return err as InputError;
  }
  throw new Error('expected a failure');
}

describe('loadSuite', () => {
  it('returns the built-in arithmetic suite by name', async () => {
    expect(await loadSuite('arithmetic')).toEqual(arithmeticSuite());
  });

  it('loads a JSONL suite, skipping blank lines and accepting a numeric answer written as a JSON number', async () => {
    const path = await file(
      'ok.jsonl',
      jsonl(
        { id: 'q1', question: 'Two plus two?', answer: '4', kind: 'number' },
        { id: 'q2', question: 'Capital of the moon base?', answer: 'B', choices: ['Alpha', 'Tycho'], kind: 'choice' },
      ) + '\n' + JSON.stringify({ id: 'q3', question: 'Debt?', answer: -1500, kind: 'number' }) + '\n',
    );
    const items = await loadSuite(path);
    expect(items.map((i) => i.id)).toEqual(['q1', 'q2', 'q3']);
    expect(items[2]?.answer).toBe('-1500');
  });

  it('names the file, line and field of a missing field', async () => {
    const path = await file('missing.jsonl', jsonl({ id: 'a', question: 'Q?', answer: '1', kind: 'number' }, { id: 'b', answer: '2', kind: 'number' }));
    const err = await failure(() => loadSuite(path));
    expect(err.message).toContain(path);
    expect(err.message).toContain('line 2');
    expect(err.message).toContain('field `question`');
    expect(err.code).toBe('SUITE_INVALID');
    expect(err.hint).toBeDefined();
  });

  it('names an unknown field and a bad kind', async () => {
    const path = await file('extra.jsonl', jsonl({ id: 'a', question: 'Q?', answer: '1', kind: 'numeric', note: 'x' }));
    const err = await failure(() => loadSuite(path));
    expect(err.message).toMatch(/line 1: .*field `kind`/);
    expect(err.message).toContain('field `note`');
  });

  it('names the index of a bad entry in choices', async () => {
    const path = await file('choice-type.jsonl', jsonl({ id: 'a', question: 'Q?', answer: 'A', choices: ['x', 3], kind: 'choice' }));
    expect((await failure(() => loadSuite(path))).message).toContain('field `choices[1]`');
  });

  it('rejects at load time a number answer that is not a number', async () => {
    const path = await file('nan.jsonl', jsonl({ id: 'a', question: 'Q?', answer: 'forty', kind: 'number' }));
    const err = await failure(() => loadSuite(path));
    expect(err.message).toMatch(/line 1: field `answer`: "forty" is not a number/);
  });

  it('rejects at load time a choice letter that is not among the choices', async () => {
    const path = await file('letter.jsonl', jsonl({ id: 'a', question: 'Q?', answer: 'E', choices: ['w', 'x', 'y', 'z'], kind: 'choice' }));
    const err = await failure(() => loadSuite(path));
    expect(err.message).toMatch(/line 1: field `answer`: "E" is not one of the choice letters A, B, C, D/);
  });

  it('requires choices for a choice item and forbids them elsewhere', async () => {
    const path = await file('no-choices.jsonl', jsonl({ id: 'a', question: 'Q?', answer: 'A', kind: 'choice' }));
    expect((await failure(() => loadSuite(path))).message).toContain('field `choices`: is required');
    const other = await file('stray-choices.jsonl', jsonl({ id: 'a', question: 'Q?', answer: '1', choices: ['1', '2'], kind: 'number' }));
    expect((await failure(() => loadSuite(other))).message).toContain('field `choices`: is only allowed');
  });

  it('rejects a duplicate id, naming both lines', async () => {
    const item = { question: 'Q?', answer: '1', kind: 'number' };
    const path = await file('dup.jsonl', jsonl({ id: 'x', ...item }, { id: 'y', ...item }, { id: 'x', ...item }));
    const err = await failure(() => loadSuite(path));
    expect(err.message).toMatch(/line 3: field `id`: duplicate id "x" \(first used on line 1\)/);
  });

  it('names the line of invalid JSON', async () => {
    const path = await file('broken.jsonl', `${JSON.stringify({ id: 'a', question: 'Q?', answer: '1', kind: 'number' })}\n{"id": "b",\n`);
    expect((await failure(() => loadSuite(path))).message).toMatch(/broken\.jsonl line 2: not valid JSON/);
  });

  it('says so when the suite is neither built in nor a readable file', async () => {
    const err = await failure(() => loadSuite(join(dir, 'nope.jsonl')));
    expect(err.code).toBe('SUITE_NOT_FOUND');
    expect(err.hint).toContain('`arithmetic`');
  });

  it('rejects a blank gold answer, question or id, which no reply could ever be scored against', async () => {
    const blank = (field: string, value: string) => parseSuite(jsonl({ id: 'a', question: 'Q?', answer: 'Na', kind: 'text', [field]: value }), 'blank.jsonl');
    expect(() => blank('answer', '  ')).toThrow(/blank\.jsonl line 1: field `answer`: is blank, so no answer could ever be scored right/);
    expect(() => blank('question', ' \n')).toThrow(/field `question`: is blank/);
    expect(() => blank('id', ' ')).toThrow(/field `id`: is blank/);
  });

  it('rejects a choice item whose choices an answer by letter could not tell apart: a blank choice, or two alike', async () => {
    const choice = (choices: string[]) => parseSuite(jsonl({ id: 'c', question: 'Which?', answer: 'A', kind: 'choice', choices }), 'choices.jsonl');
    expect(() => choice(['x', ' x '])).toThrow("choices.jsonl line 1: field `choices[1]`: choice B repeats choice A (\"x\")");
    expect(() => choice(['x', ' '])).toThrow('field `choices[1]`: choice B is blank');
    expect(choice(['x', 'y']).map((i) => i.choices)).toEqual([['x', 'y']]);
  });

  it('rejects an id holding a line break or an escape, which would break the progress line and the tables', async () => {
    for (const id of ['q1\nbench: 100/100', 'q\u001b[2J1', 'q\t1']) {
      expect(() => parseSuite(jsonl({ id, question: 'Q?', answer: '1', kind: 'number' }), 'ids.jsonl')).toThrow(/ids\.jsonl line 1: field `id`: .* holds a control character/);
    }
  });

  it('writes a numeric answer given as a JSON number in exponent form as plain digits', async () => {
    const items = parseSuite(`{"id":"tiny","question":"Q?","answer":1e-7,"kind":"number"}\n{"id":"huge","question":"Q?","answer":2e21,"kind":"number"}\n`, 'exp.jsonl');
    expect(items.map((i) => i.answer)).toEqual(['0.0000001', '2000000000000000000000']);
  });

  it('rejects an empty suite', async () => {
    expect(() => parseSuite('\n\n', 'empty.jsonl')).toThrow(/empty\.jsonl has no items/);
  });
});

describe('importGsm8k', () => {
  it('takes the number after #### as the answer, with separators and minus sign', async () => {
    const path = await file(
      'gsm.jsonl',
      jsonl(
        { question: 'A farmer has 3 hens that lay 4 eggs each. How many eggs?', answer: 'Each lays 4.\n3*4=12\n#### 12' },
        { question: 'A shop sells 1,000 pens at 2 each. Revenue?', answer: '1000*2=2000\n#### 2,000' },
        { question: 'A balance of 5 drops by 12. New balance?', answer: '5-12=-7\n####  -7 ' },
      ),
    );
    expect(await importGsm8k(path)).toEqual([
      { id: 'gsm8k-0001', question: 'A farmer has 3 hens that lay 4 eggs each. How many eggs?', answer: '12', kind: 'number' },
      { id: 'gsm8k-0002', question: 'A shop sells 1,000 pens at 2 each. Revenue?', answer: '2000', kind: 'number' },
      { id: 'gsm8k-0003', question: 'A balance of 5 drops by 12. New balance?', answer: '-7', kind: 'number' },
    ]);
  });

  it('names file, line and field when the answer has no #### N', async () => {
    const path = await file('gsm-bad.jsonl', jsonl({ question: 'Q?', answer: '#### 3' }, { question: 'Q2?', answer: 'It is 4' }));
    const err = await failure(() => importGsm8k(path));
    expect(err.message).toContain(path);
    expect(err.message).toMatch(/line 2: field `answer`: does not end in "#### N"/);
  });

  it('names a missing question', async () => {
    const path = await file('gsm-noq.jsonl', jsonl({ answer: '#### 3' }));
    expect((await failure(() => importGsm8k(path))).message).toMatch(/line 1: field `question`/);
  });
});

describe('parseCsv', () => {
  it('handles quoted commas, line breaks and doubled quotes, and reports where each record starts', () => {
    const text = 'a,"b, c","say ""hi"""\r\n"multi\nline",,x\n\n"",z\n';
    expect(parseCsv(text, 't.csv')).toEqual([
      { fields: ['a', 'b, c', 'say "hi"'], line: 1 },
      { fields: ['multi\nline', '', 'x'], line: 2 },
      { fields: ['', 'z'], line: 5 },
    ]);
  });

  it('reads a last record without a final line break', () => {
    expect(parseCsv('1,2\n3,"4"', 't.csv')).toEqual([
      { fields: ['1', '2'], line: 1 },
      { fields: ['3', '4'], line: 2 },
    ]);
  });

  it('names the line of an unclosed quote and of text after a closing quote', () => {
    expect(() => parseCsv('ok,1\n"open,2\n', 't.csv')).toThrow(/t\.csv line 2: column 1: quoted field is never closed/);
    expect(() => parseCsv('"a"b,1\n', 't.csv')).toThrow(/t\.csv line 1: column 1: text after a closing quote/);
  });
});

describe('importMmlu', () => {
  const rows =
    'Which planet in this made-up list is closest to its star?,Zorb,"Quix, the small one","The ""hot"" one",Blip,C\n' +
    '"A two-line\nquestion?",yes,no,maybe,never,a\n';

  it('reads rows of question, four options and answer letter', async () => {
    const items = await importMmlu(await file('mmlu.csv', rows));
    expect(items).toEqual([
      {
        id: 'mmlu-0001',
        question: 'Which planet in this made-up list is closest to its star?',
        answer: 'C',
        choices: ['Zorb', 'Quix, the small one', 'The "hot" one', 'Blip'],
        kind: 'choice',
      },
      { id: 'mmlu-0002', question: 'A two-line\nquestion?', answer: 'A', choices: ['yes', 'no', 'maybe', 'never'], kind: 'choice' },
    ]);
  });

  it('skips an optional header row', async () => {
    const items = await importMmlu(await file('mmlu-header.csv', `question,A,B,C,D,answer\n${rows}`));
    expect(items.map((i) => i.answer)).toEqual(['C', 'A']);
    expect(items[0]?.id).toBe('mmlu-0002');
  });

  it('names file, line and field of a bad answer letter', async () => {
    const path = await file('mmlu-bad.csv', `${rows}Q3?,w,x,y,z,E\n`);
    const err = await failure(() => importMmlu(path));
    expect(err.message).toContain(path);
    expect(err.message).toMatch(/line 4: field `answer`: expected a letter A to D, got "E"/);
  });

  it('names the line of a row with the wrong number of columns', async () => {
    const path = await file('mmlu-short.csv', 'Q?,w,x,y,B\n');
    expect((await failure(() => importMmlu(path))).message).toMatch(/line 1: expected 6 columns .*found 5/);
  });
});
