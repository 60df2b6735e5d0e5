import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { InputError } from '../errors.js';
import { arithmeticSuite } from './arithmetic.js';
import { parseNumber } from './extract.js';
import type { SuiteItem } from './item.js';

const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** One benchmark item, as written on each line of a suite file. */
export const suiteItemSchema = z
  .strictObject({
    id: z.string().min(1),
    question: z.string().min(1),
    answer: z.string().min(1),
    choices: z.array(z.string()).min(2).max(LETTERS.length).optional(),
    kind: z.enum(['number', 'choice', 'text']),
  })
  .superRefine((item, ctx) => {
    // An id names its item in progress lines and report tables; a line break or an escape in it would break them.
    if (item.id.trim() === '') ctx.addIssue({ code: 'custom', path: ['id'], message: 'is blank' });
    else if (CONTROL.test(item.id)) ctx.addIssue({ code: 'custom', path: ['id'], message: `${JSON.stringify(item.id)} holds a control character (a line break, tab or escape)` });
    if (item.question.trim() === '') ctx.addIssue({ code: 'custom', path: ['question'], message: 'is blank' });
    // A blank gold answer matches no reply, so every condition would score the item wrong.
    if (item.answer.trim() === '') {
      ctx.addIssue({ code: 'custom', path: ['answer'], message: 'is blank, so no answer could ever be scored right' });
      return;
    }
    if (item.kind === 'number' && parseNumber(item.answer) === null) {
      ctx.addIssue({ code: 'custom', path: ['answer'], message: `${JSON.stringify(item.answer)} is not a number` });
    }
    if (item.kind === 'choice') {
      if (item.choices === undefined) {
        ctx.addIssue({ code: 'custom', path: ['choices'], message: 'is required for kind `choice`' });
        return;
      }
      // A blank choice, or two alike, cannot be told apart by an agent answering with its letter.
      item.choices.forEach((choice, i) => {
        const first = item.choices!.findIndex((c) => c.trim() === choice.trim());
        if (choice.trim() === '') ctx.addIssue({ code: 'custom', path: ['choices', i], message: `choice ${LETTERS[i]} is blank` });
        else if (first < i) ctx.addIssue({ code: 'custom', path: ['choices', i], message: `choice ${LETTERS[i]} repeats choice ${LETTERS[first]} (${JSON.stringify(choice.trim())})` });
      });
      const letters = LETTERS.slice(0, item.choices.length);
      if (!/^[A-Z]$/.test(item.answer) || !letters.includes(item.answer)) {
        ctx.addIssue({
          code: 'custom',
          path: ['answer'],
          message: `${JSON.stringify(item.answer)} is not one of the choice letters ${letters.split('').join(', ')}`,
        });
      }
    } else if (item.choices !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['choices'], message: `is only allowed for kind \`choice\`, not \`${item.kind}\`` });
    }
  });

export type { SuiteItem };

// The schema and the plain type say the same thing: a change to one without the other fails here.
const sameShape: z.ZodType<SuiteItem, z.input<typeof suiteItemSchema>> = suiteItemSchema;
void sameShape;

const BUILT_IN: Record<string, () => SuiteItem[]> = {
  arithmetic: () => arithmeticSuite(),
};

/** Names accepted by {@link loadSuite} without a file. */
export const builtInSuites: readonly string[] = Object.keys(BUILT_IN);

const SUITE_HINT =
  'Each line of a suite is a JSON object with `id`, `question`, `answer` and `kind` (number, choice or text); choice items also need `choices`, and their answer is a letter.';

function invalid(file: string, line: number, detail: string, hint = SUITE_HINT): InputError {
  return new InputError('SUITE_INVALID', `${file} line ${line}: ${detail}`, { hint });
}

function fieldName(path: readonly PropertyKey[]): string {
  return path.map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`)).join('');
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      if (issue.code === 'unrecognized_keys') {
        const prefix = issue.path.length === 0 ? '' : `${fieldName(issue.path)}.`;
        return issue.keys.map((key) => `field \`${prefix}${key}\`: is not a suite item field`).join('; ');
      }
      return `field \`${issue.path.length === 0 ? '(item)' : fieldName(issue.path)}\`: ${issue.message}`;
    })
    .join('; ');
}

function checkItem(value: unknown, file: string, line: number): SuiteItem {
  const result = suiteItemSchema.safeParse(value);
  if (!result.success) throw invalid(file, line, describeIssues(result.error));
  return result.data;
}

function rejectDuplicates(items: readonly { item: SuiteItem; line: number }[], file: string): SuiteItem[] {
  const firstLine = new Map<string, number>();
  for (const { item, line } of items) {
    const first = firstLine.get(item.id);
    if (first !== undefined) {
      throw invalid(file, line, `field \`id\`: duplicate id ${JSON.stringify(item.id)} (first used on line ${first})`, 'Give every item its own id.');
    }
    firstLine.set(item.id, line);
  }
  if (items.length === 0) {
    throw new InputError('SUITE_EMPTY', `${file} has no items.`, { hint: SUITE_HINT });
  }
  return items.map(({ item }) => item);
}

function jsonLines(text: string, file: string): { value: unknown; line: number }[] {
  const rows: { value: unknown; line: number }[] = [];
  text
    .replace(/^\uFEFF/, '')
    .split(/\r?\n/)
    .forEach((raw, i) => {
      if (raw.trim() === '') return;
      try {
        rows.push({ value: JSON.parse(raw), line: i + 1 });
      } catch (err) {
        throw invalid(file, i + 1, `not valid JSON (${(err as Error).message})`);
      }
    });
  return rows;
}

/** A JSON number as plain decimal digits (`0.0000001`, not `1e-7`); not finite stays as String writes it. */
function plainNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  return (value === 0 ? 0 : value).toLocaleString('en-US', { useGrouping: false, maximumFractionDigits: 100 });
}

/**
 * Parses suite JSONL text. Every item is checked here, so a bad line fails
 * the load (naming file, line and field) instead of the scoring.
 */
export function parseSuite(text: string, file: string): SuiteItem[] {
  const items = jsonLines(text, file).map(({ value, line }) => {
    // A bare JSON number is the natural way to write a numeric answer; written out in full, as `1e-7` is no answer a model gives.
    const withAnswer =
      typeof value === 'object' && value !== null && typeof (value as { answer?: unknown }).answer === 'number'
        ? { ...value, answer: plainNumber((value as { answer: number }).answer) }
        : value;
    return { item: checkItem(withAnswer, file, line), line };
  });
  return rejectDuplicates(items, file);
}

async function readSuiteFile(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    const known = builtInSuites.map((name) => `\`${name}\``).join(', ');
    throw new InputError('SUITE_NOT_FOUND', `Cannot read ${what} \`${path}\`: ${(err as Error).message}`, {
      hint: `Pass a built-in suite (${known}) or the path of a readable file.`,
      cause: err,
    });
  }
}

/** A built-in suite by name (`arithmetic`), otherwise a JSONL suite file. */
export async function loadSuite(nameOrPath: string): Promise<SuiteItem[]> {
  const builtIn = BUILT_IN[nameOrPath];
  if (builtIn !== undefined) return builtIn();
  return parseSuite(await readSuiteFile(nameOrPath, 'suite'), nameOrPath);
}

const gsm8kLineSchema = z.object({ question: z.string().min(1), answer: z.string().min(1) });

/** Parses GSM8K JSONL text: `question`, and `answer` whose last part is `#### N`. */
export function parseGsm8k(text: string, file: string): SuiteItem[] {
  const hint = 'Each GSM8K line is a JSON object with `question` and an `answer` ending in `#### N`.';
  const items = jsonLines(text, file).map(({ value, line }) => {
    const row = gsm8kLineSchema.safeParse(value);
    if (!row.success) throw invalid(file, line, describeIssues(row.error), hint);
    const marker = row.data.answer.lastIndexOf('####');
    const final = marker === -1 ? null : parseNumber(row.data.answer.slice(marker + 4));
    if (final === null) {
      const tail = row.data.answer.trim().split('\n').at(-1) ?? '';
      throw invalid(file, line, `field \`answer\`: does not end in "#### N" with N a number (ends ${JSON.stringify(tail)})`, hint);
    }
    const item = { id: `gsm8k-${String(line).padStart(4, '0')}`, question: row.data.question.trim(), answer: plainNumber(final), kind: 'number' };
    return { item: checkItem(item, file, line), line };
  });
  return rejectDuplicates(items, file);
}

/** Reads a GSM8K JSONL file into suite items with ids `gsm8k-<line>`. */
export async function importGsm8k(path: string): Promise<SuiteItem[]> {
  return parseGsm8k(await readSuiteFile(path, 'GSM8K file'), path);
}

export interface CsvRecord {
  fields: string[];
  /** 1-based line on which the record starts. */
  line: number;
}

/**
 * RFC 4180 CSV: quoted fields may hold commas, line breaks and `""` for a
 * quote; CRLF or LF line ends; blank lines are skipped.
 */
export function parseCsv(text: string, file: string): CsvRecord[] {
  const records: CsvRecord[] = [];
  const src = text.replace(/^\uFEFF/, '');
  let fields: string[] = [];
  let field = '';
  // A quoted field exists even when empty, so `""` alone on a line is not a blank line.
  let quoted = false;
  let line = 1;
  let recordLine = 1;
  const endField = (): void => {
    fields.push(field);
    field = '';
    quoted = false;
  };
  const endRecord = (): void => {
    const blank = fields.length === 0 && field === '' && !quoted;
    endField();
    if (!blank) records.push({ fields, line: recordLine });
    fields = [];
  };
  let i = 0;
  while (i < src.length) {
    const ch = src[i];
    if (ch === '"' && field === '' && !quoted) {
      const openLine = line;
      quoted = true;
      for (i++; ; i++) {
        if (i >= src.length) {
          throw invalid(file, openLine, `column ${fields.length + 1}: quoted field is never closed`, 'Close the quote; write a quote inside a quoted field as "".');
        }
        if (src[i] === '"') {
          if (src[i + 1] !== '"') break;
          i++;
        } else if (src[i] === '\n') {
          line++;
        }
        field += src[i];
      }
      i++;
      const next = src[i];
      if (next !== undefined && next !== ',' && next !== '\n' && !(next === '\r' && src[i + 1] === '\n')) {
        throw invalid(file, line, `column ${fields.length + 1}: text after a closing quote`, 'Write a quote inside a quoted field as "".');
      }
    } else if (ch === ',') {
      endField();
      i++;
    } else if (ch === '\n' || (ch === '\r' && src[i + 1] === '\n')) {
      endRecord();
      i += ch === '\r' ? 2 : 1;
      line++;
      recordLine = line;
    } else {
      field += ch;
      i++;
    }
  }
  if (fields.length > 0 || field !== '' || quoted) endRecord();
  return records;
}

const MMLU_COLUMNS = ['question', 'A', 'B', 'C', 'D', 'answer'] as const;
const HEADER_WORDS = new Set(['question', 'prompt', 'input', 'answer', 'target', 'label', 'correct']);

/** Parses MMLU CSV text: question, four options, answer letter; an optional header row. */
export function parseMmlu(text: string, file: string): SuiteItem[] {
  const hint = 'Each MMLU row has six columns: question, options A to D, and the answer letter.';
  const records = parseCsv(text, file);
  const first = records[0];
  const isHeader =
    first !== undefined &&
    !/^\s*[A-Da-d]\s*$/.test(first.fields[5] ?? '') &&
    (HEADER_WORDS.has((first.fields[0] ?? '').trim().toLowerCase()) || HEADER_WORDS.has((first.fields[5] ?? '').trim().toLowerCase()));
  const items = (isHeader ? records.slice(1) : records).map(({ fields, line }) => {
    if (fields.length !== MMLU_COLUMNS.length) {
      throw invalid(file, line, `expected 6 columns (${MMLU_COLUMNS.join(', ')}), found ${fields.length}`, hint);
    }
    const [question = '', a = '', b = '', c = '', d = '', letter = ''] = fields;
    if (question.trim() === '') throw invalid(file, line, 'field `question`: is empty', hint);
    const answer = letter.trim().toUpperCase();
    if (!/^[A-D]$/.test(answer)) {
      throw invalid(file, line, `field \`answer\`: expected a letter A to D, got ${JSON.stringify(letter)}`, hint);
    }
    const item = { id: `mmlu-${String(line).padStart(4, '0')}`, question: question.trim(), answer, choices: [a, b, c, d].map((o) => o.trim()), kind: 'choice' };
    return { item: checkItem(item, file, line), line };
  });
  return rejectDuplicates(items, file);
}

/** Reads an MMLU CSV file into suite items with ids `mmlu-<line>`. */
export async function importMmlu(path: string): Promise<SuiteItem[]> {
  return parseMmlu(await readSuiteFile(path, 'MMLU file'), path);
}
