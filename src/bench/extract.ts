import type { SuiteItem } from './item.js';

export type AnswerKind = SuiteItem['kind'];

/**
 * Where an answer came from: a JSON `answer` field, a `\boxed{…}`, the last
 * number in the reply, a choice letter, prose (an "answer is …" statement, or
 * the whole reply for text items), or nowhere.
 */
export type ExtractMethod = 'json' | 'boxed' | 'last-number' | 'letter' | 'text' | 'none';

export interface ExtractedAnswer {
  /** Canonical form: a plain decimal number, an upper-case letter, or trimmed text; null when nothing parses. */
  value: string | null;
  method: ExtractMethod;
}

const MINUS = '\\-\\u2212\\u2012\\u2013\\uFE63\\uFF0D';
const GROUP_SEPARATOR = ',\\u00A0\\u2009\\u202F ';
// A sign counts only when glued to the digits and not preceded by a word, so
// the `-` in `0-3` or `246 - 539` is subtraction, not a negative number.
const NUMBER_SOURCE =
  `(?<![\\w.)\\]])([${MINUS}])?(?<![\\w.])` +
  `(\\d{1,3}(?:([${GROUP_SEPARATOR}])\\d{3}(?!\\d))(?:\\3\\d{3}(?!\\d))*|\\d+)(\\.\\d+)?`;
const NUMBER_LITERAL = new RegExp(`^\\s*${NUMBER_SOURCE}\\s*\\.?\\s*$`);
const NUMBER_TOLERANCE = 1e-6;

interface FoundNumber {
  value: number;
  /** Index just past the match. */
  end: number;
}

function numberFrom(match: RegExpExecArray): FoundNumber {
  const [, sign, digits = '', separator, fraction = ''] = match;
  const plain = separator === undefined ? digits : digits.split(separator).join('');
  const value = Number(`${sign === undefined ? '' : '-'}${plain}${fraction}`);
  return { value, end: match.index + match[0].length };
}

function findNumbers(text: string): FoundNumber[] {
  return [...text.matchAll(new RegExp(NUMBER_SOURCE, 'g'))].map(numberFrom);
}

function canonicalNumber(value: number): string {
  return String(value === 0 ? 0 : value);
}

/**
 * Parses a string that is one number and nothing else (a gold answer, a JSON
 * field): minus signs of any style, `1,234` or `1 234` grouping, decimals, a
 * trailing period. Returns null for anything else.
 */
export function parseNumber(text: string): number | null {
  const match = NUMBER_LITERAL.exec(text);
  if (!match) return null;
  const { value } = numberFrom(match);
  return Number.isFinite(value) ? value : null;
}

/** A number stated somewhere in a short string: the whole string if it is one, else its last number. */
function numberIn(text: string): string | null {
  const whole = parseNumber(text);
  if (whole !== null) return canonicalNumber(whole);
  const last = findNumbers(text).at(-1);
  return last === undefined ? null : canonicalNumber(last.value);
}

/** Every top-level `{…}` in the text that parses as a JSON object, in order. */
function jsonObjects(text: string): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  let start = text.indexOf('{');
  while (start !== -1) {
    const end = matchingBrace(text, start);
    let parsed: unknown;
    if (end !== -1) {
      try {
        parsed = JSON.parse(text.slice(start, end + 1));
      } catch {
        parsed = undefined;
      }
    }
    if (isRecord(parsed)) {
      found.push(parsed);
      start = text.indexOf('{', end + 1);
    } else {
      start = text.indexOf('{', start + 1);
    }
  }
  return found;
}

/** Index of the `}` closing the `{` at `open`, or -1; `jsonStrings` skips braces inside JSON strings. */
function matchingBrace(text: string, open: number, jsonStrings = true): number {
  let depth = 0;
  let inString = false;
  for (let i = open; i < text.length; i++) {
    const ch = text[i];
    if (!jsonStrings) {
      if (ch === '{') depth++;
      else if (ch === '}' && --depth === 0) return i;
    } else if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') {
      inString = true;
    } else if (ch === '{') {
      depth++;
    } else if (ch === '}') {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const ANSWER_KEYS = new Set(['answer', 'final_answer', 'finalanswer', 'final answer']);

/** The `answer` field of the last JSON object that has one, searching nested objects breadth-first. */
function jsonAnswer(text: string): unknown {
  let answer: unknown;
  for (const object of jsonObjects(text)) {
    const queue: Record<string, unknown>[] = [object];
    for (let node = queue.shift(); node !== undefined; node = queue.shift()) {
      const key = Object.keys(node).find((k) => ANSWER_KEYS.has(k.toLowerCase()));
      if (key !== undefined) {
        answer = node[key];
        break;
      }
      for (const value of Object.values(node)) if (isRecord(value)) queue.push(value);
    }
  }
  return answer;
}

/** Content of the last `\boxed{…}`, with LaTeX spacing and `{,}` grouping undone. */
function boxedContent(text: string): string | null {
  let content: string | null = null;
  for (const match of text.matchAll(/\\?boxed\s*\{/g)) {
    const open = match.index + match[0].length - 1;
    const close = matchingBrace(text, open, false);
    if (close !== -1) content = text.slice(open + 1, close);
  }
  if (content === null) return null;
  return content
    .replaceAll('{,}', ',')
    .replace(/\\[,!; ]/g, '')
    .replace(/\\text\{([^}]*)\}/g, '$1')
    .replace(/\$/g, '')
    .trim();
}

const ANSWER_PHRASE = /\banswer\b\s*(?:is|=|:|equals|would be|will be|should be)\s*(?:therefore|thus|then)?[\s:*$`"']*/gi;

/** The number right after the last "answer is"/"answer:" that is not the start of an expression. */
function phraseNumber(text: string): string | null {
  let found: string | null = null;
  for (const match of text.matchAll(ANSWER_PHRASE)) {
    const sticky = new RegExp(NUMBER_SOURCE, 'y');
    sticky.lastIndex = match.index + match[0].length;
    const number = sticky.exec(text);
    if (!number) continue;
    const { value, end } = numberFrom(number);
    // `12+15*21…` is an expression, not a result; a closing `**` is only markdown bold.
    if (/^\s*(?:[-+×÷/^=]|\*(?!\*))\s*[\d(]/.test(text.slice(end))) continue;
    found = canonicalNumber(value);
  }
  return found;
}

function extractNumber(text: string): ExtractedAnswer {
  const fromJson = jsonAnswer(text);
  if (typeof fromJson === 'number' && Number.isFinite(fromJson)) return { value: canonicalNumber(fromJson), method: 'json' };
  if (typeof fromJson === 'string') {
    const value = numberIn(fromJson);
    if (value !== null) return { value, method: 'json' };
  }
  const boxed = boxedContent(text);
  if (boxed !== null) {
    const value = numberIn(boxed);
    if (value !== null) return { value, method: 'boxed' };
  }
  const phrased = phraseNumber(text);
  if (phrased !== null) return { value: phrased, method: 'text' };
  const last = findNumbers(text).at(-1);
  if (last !== undefined) return { value: canonicalNumber(last.value), method: 'last-number' };
  return { value: null, method: 'none' };
}

function letterSet(choices: readonly string[] | undefined): string {
  const all = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  return choices === undefined ? all : all.slice(0, choices.length);
}

function normalizeText(text: string): string {
  return text.trim().replace(/\s+/g, ' ').toLowerCase();
}

/** A letter given on its own (`B`, `(b)`, `B) Paris`, `**C**`), or a choice's full text. */
function letterIn(text: string, letters: string, choices: readonly string[] | undefined): string | null {
  const alone = /^[\s*"'`(\[]*([A-Za-z])(?:$|[\s.:)\]*"'`])/.exec(text);
  const letter = alone?.[1]?.toUpperCase();
  if (letter !== undefined && letters.includes(letter)) return letter;
  if (choices !== undefined) {
    const wanted = normalizeText(text).replace(/[.!]$/, '');
    const index = choices.findIndex((choice) => normalizeText(choice) === wanted);
    if (index !== -1) return letters[index] ?? null;
  }
  return lastParenLetter(text, letters);
}

/** The last `(X)` among the valid letters. */
function lastParenLetter(text: string, letters: string): string | null {
  return lastLetter(text, /\(\s*([A-Za-z])\s*\)/g, letters)?.letter ?? null;
}

/** The last valid letter the pattern's first group captures, with the index just past its match. */
function lastLetter(text: string, pattern: RegExp, letters: string, upperOnly = false): { letter: string; end: number } | null {
  let found: { letter: string; end: number } | null = null;
  for (const match of text.matchAll(pattern)) {
    const raw = match[1]!;
    const letter = raw.toUpperCase();
    if (upperOnly && raw !== letter) continue;
    if (letters.includes(letter)) found = { letter, end: match.index + match[0].length };
  }
  return found;
}

// Upper case only: "the answer is a matter of…" must not read as choice A.
const STATED_LETTER = /\banswer\b\s*(?:is|=|:|would be|will be|should be)?[\s:*"'`]*([A-Z])(?![A-Za-z'])/gi;

function extractChoice(text: string, choices: readonly string[] | undefined): ExtractedAnswer {
  const letters = letterSet(choices);
  const fromJson = jsonAnswer(text);
  if (typeof fromJson === 'string') {
    const value = letterIn(fromJson, letters, choices);
    if (value !== null) return { value, method: 'json' };
  }
  const boxed = boxedContent(text);
  if (boxed !== null) {
    const value = letterIn(boxed, letters, choices);
    if (value !== null) return { value, method: 'boxed' };
  }
  // Whichever comes last wins, so options listed as (A)…(D) before "Answer: B" do not read as D.
  const paren = lastLetter(text, /\(\s*([A-Za-z])\s*\)/g, letters);
  const stated = lastLetter(text, STATED_LETTER, letters, true);
  const latest = paren === null || (stated !== null && stated.end > paren.end) ? stated : paren;
  if (latest !== null) return { value: latest.letter, method: 'letter' };
  const whole = /^[\s*"'`]*([A-Za-z])[\s.*"'`]*$/.exec(text)?.[1]?.toUpperCase();
  if (whole !== undefined && letters.includes(whole)) return { value: whole, method: 'letter' };
  return { value: null, method: 'none' };
}

function extractText(text: string): ExtractedAnswer {
  const fromJson = jsonAnswer(text);
  if (typeof fromJson === 'string' && fromJson.trim() !== '') return { value: fromJson.trim(), method: 'json' };
  if (typeof fromJson === 'number' && Number.isFinite(fromJson)) return { value: String(fromJson), method: 'json' };
  const boxed = boxedContent(text);
  if (boxed !== null && boxed !== '') return { value: boxed, method: 'boxed' };
  const stated = [...text.matchAll(/\banswer\b\s*(?:is|=|:)\s*(.+)$/gim)].at(-1)?.[1];
  const value = (stated ?? text).trim().replace(/^\*+|\*+$/g, '').replace(/\.$/, '').trim();
  return value === '' ? { value: null, method: 'none' } : { value, method: 'text' };
}

/**
 * Reads the final answer out of a model's reply. Tries, in order: a JSON
 * object with an `answer` field anywhere in the reply; a `\boxed{…}`; then for
 * numbers an "the answer is X" statement and finally the last number, for
 * choices the later of the last `(X)` and the last letter stated after
 * "answer", then a reply that is only a letter. A reply with nothing usable gives `value: null`, which
 * {@link answersMatch} always scores as wrong.
 */
export function extractAnswer(text: string, kind: AnswerKind, choices?: readonly string[]): ExtractedAnswer {
  switch (kind) {
    case 'number':
      return extractNumber(text);
    case 'choice':
      return extractChoice(text, choices);
    case 'text':
      return extractText(text);
  }
}

/**
 * Key under which equal answers of a kind group together (for voting);
 * null when the answer does not parse for the kind.
 */
export function answerKey(answer: string | null, kind: AnswerKind): string | null {
  if (answer === null) return null;
  switch (kind) {
    case 'number': {
      const value = parseNumber(answer);
      return value === null ? null : canonicalNumber(value);
    }
    case 'choice': {
      const letter = /^\s*\(?\s*([A-Za-z])\s*\)?\s*$/.exec(answer)?.[1];
      return letter === undefined ? null : letter.toUpperCase();
    }
    case 'text': {
      const text = normalizeText(answer);
      return text === '' ? null : text;
    }
  }
}

/**
 * Whether a predicted answer scores as right: numbers within 1e-6, letters
 * and text ignoring case and whitespace. A null or unparseable prediction is
 * always wrong.
 */
export function answersMatch(pred: string | null, gold: string, kind: AnswerKind): boolean {
  if (kind === 'number') {
    const predicted = pred === null ? null : parseNumber(pred);
    const expected = parseNumber(gold);
    return predicted !== null && expected !== null && Math.abs(predicted - expected) <= NUMBER_TOLERANCE;
  }
  const predicted = answerKey(pred, kind);
  return predicted !== null && predicted === answerKey(gold, kind);
}
