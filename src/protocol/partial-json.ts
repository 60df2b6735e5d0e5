/**
 * Reads a text field of a JSON object while the object is still being written: the reply of a
 * streamed call, cut anywhere. Only top-level keys count, so a judge's nested `recommendation`
 * score never passes for a synthesis's `recommendation` text.
 */

/** The fields that carry what an agent is saying, in the order they are looked for. */
export const STREAMED_FIELDS = ['position', 'updatedPosition', 'recommendation', 'answer', 'rationale'] as const;

export interface PartialField {
  field: string;
  /** The field's text so far, unescaped; a half-written escape at the end is left out. */
  text: string;
  /** Whether its closing quote has arrived. */
  complete: boolean;
}

const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/**
 * The first of `fields` (by their order) that the partial object has started as a string at its
 * top level, or null when none has. Linear in the text; keys are matched exactly.
 */
export function partialField(json: string, fields: readonly string[] = STREAMED_FIELDS): PartialField | null {
  const found = new Map<string, PartialField>();
  let i = json.indexOf('{');
  if (i < 0) return null;
  i += 1;
  let depth = 1;
  let expectKey = true;
  let key: string | null = null;
  const n = json.length;
  while (i < n && depth > 0) {
    const c = json[i]!;
    if (c === '"') {
      const read = readString(json, i + 1);
      if (depth === 1 && expectKey) {
        key = read.text;
      } else if (depth === 1 && key !== null && fields.includes(key)) {
        if (!found.has(key)) found.set(key, { field: key, text: read.text, complete: read.closed });
        // The best field is the first asked for: done as soon as it is found.
        if (key === fields[0]) break;
      }
      i = read.end;
      continue;
    }
    if (c === '{' || c === '[') depth += 1;
    else if (c === '}' || c === ']') depth -= 1;
    else if (c === ':' && depth === 1) expectKey = false;
    else if (c === ',' && depth === 1) {
      expectKey = true;
      key = null;
    }
    i += 1;
  }
  for (const f of fields) {
    const hit = found.get(f);
    if (hit) return hit;
  }
  return null;
}

/** A JSON string's text from just after its opening quote; `end` is past the closing quote, or the input's length. */
function readString(json: string, start: number): { text: string; end: number; closed: boolean } {
  let out = '';
  let i = start;
  const n = json.length;
  let run = i;
  while (i < n) {
    const c = json[i]!;
    if (c === '"') return { text: out + json.slice(run, i), end: i + 1, closed: true };
    if (c !== '\\') {
      i += 1;
      continue;
    }
    out += json.slice(run, i);
    const e = json[i + 1];
    if (e === undefined) return { text: out, end: n, closed: false };
    if (e === 'u') {
      const hex = json.slice(i + 2, i + 6);
      if (hex.length < 4) return { text: out, end: n, closed: false };
      const code = Number.parseInt(hex, 16);
      out += Number.isNaN(code) ? '' : String.fromCharCode(code);
      i += 6;
    } else {
      out += ESCAPES[e] ?? e;
      i += 2;
    }
    run = i;
  }
  return { text: out + json.slice(run, n), end: n, closed: false };
}

/** What a streamed reply says so far: whether the model is still thinking, and its answer field. */
export interface StreamedAnswer {
  thinking: boolean;
  hit: PartialField | null;
}

/**
 * The answer field of a streamed reply whose content may carry the model's thinking in
 * `<think>` tags (a server that does not constrain from the first token, as the final parse
 * allows): the draft inside them is not the answer. Until `</think>` arrives a reply that
 * opened one is still thinking; after it, only what follows the last one is read.
 */
export function streamedAnswer(raw: string, tokens: number): StreamedAnswer {
  const closed = raw.lastIndexOf('</think>');
  if (closed >= 0) return { thinking: false, hit: partialField(raw.slice(closed + '</think>'.length)) };
  if (raw.trimStart().startsWith('<think>')) return { thinking: true, hit: null };
  return { thinking: raw === '' && tokens > 0, hit: partialField(raw) };
}
