/**
 * Text from models, servers and stored records is untrusted: a reply can carry
 * terminal escape sequences (set the window title, clear the screen, rewrite
 * earlier lines) or HTML. Everything that prints such text passes it through here.
 */

// A terminated string sequence: OSC (ESC ] or 0x9d), DCS (ESC P or 0x90), SOS (ESC X or 0x98),
// PM (ESC ^ or 0x9e), APC (ESC _ or 0x9f), ended by BEL (OSC only, by convention) or ST (ESC \ or 0x9c).
const STRING_SEQUENCE = /(?:\u001b[\]PX^_]|[\u009d\u0090\u0098\u009e\u009f])[^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)/g;
// CSI (ESC [ or 0x9b): parameter bytes, intermediate bytes, one final byte.
const CSI_SEQUENCE = /(?:\u001b\[|\u009b)[\u0030-\u003f]*[\u0020-\u002f]*[\u0040-\u007e]/g;
// Any other escape: ESC, optional intermediate bytes, one final byte (e.g. ESC c resets the terminal).
const SHORT_ESCAPE = /\u001b[\u0020-\u002f]*[\u0030-\u007e]/g;
// What is left: C0 controls except tab and newline, DEL, and C1 controls.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
// The line and paragraph separators (U+2028, U+2029) break the line in many terminals, editors and
// viewers, yet pass for ordinary characters: they become newlines, which every one-line context
// already turns into spaces.
const SEPARATOR = /[\u2028\u2029]/g;
const ANY_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/;
// Direction controls: embeddings and overrides (U+202A–U+202E), isolates (U+2066–U+2069), and the
// marks (U+200E, U+200F, U+061C). They reorder what a reader sees, so `tpecca TON od` after U+202E
// reads as `do NOT accept`; every view shows them as visible text instead.
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const ANY_BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** How a direction control is shown: `<U+202E>`. */
export function bidiName(c: string): string {
  return `<U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}>`;
}

/** The text with every direction control written out visibly as `<U+XXXX>`, so it reorders nothing. */
export function visibleBidi(text: string): string {
  return ANY_BIDI.test(text) ? text.replace(BIDI, bidiName) : text;
}

/** Each direction control of the text, replaced by what `replace` makes of it (e.g. an isolated HTML element). */
export function replaceBidi(text: string, replace: (c: string) => string): string {
  return ANY_BIDI.test(text) ? text.replace(BIDI, replace) : text;
}

/**
 * The text with every control character and escape sequence removed, except newline
 * and tab. A whole sequence goes when it is complete; of an unterminated one only
 * the control characters go, so its text stays visible and inert. Direction controls
 * are written out as `<U+202E>`; line and paragraph separators (U+2028, U+2029) become newlines.
 */
export function inert(text: string): string {
  const shown = visibleBidi(text);
  if (!ANY_CONTROL.test(shown)) return shown;
  return shown.replace(STRING_SEQUENCE, '').replace(CSI_SEQUENCE, '').replace(SHORT_ESCAPE, '').replace(CONTROL, '').replace(SEPARATOR, '\n');
}

/** `inert` on one line: newlines, line and paragraph separators and tabs become spaces, so a stored value cannot start a line of its own. */
export function inertLine(text: string): string {
  return inert(text).replace(/[\n\t]+/g, ' ');
}

/** A copy of a plain-data value (records, events) with every string made inert. */
export function inertDeep<T>(value: T): T {
  return mapStrings(value, inert) as T;
}

const MARKDOWN_ESCAPES: Record<string, string> = { '<': '&lt;', '>': '&gt;', '&': '&amp;' };
const escapeMarkdown = (c: string): string => MARKDOWN_ESCAPES[c] ?? `\\${c}`;

/**
 * Text for a Markdown document: inert for terminals, HTML escaped (no tags, no
 * entities), and the Markdown syntax that could link or embed (`[`), fence code,
 * start a heading or break a table cell escaped. A heading is an ATX one (`# x`) or a
 * setext one: a line of only `=` or only `-` under a line of text, so such a line gets its
 * first mark escaped (`\===`, shown as written). List markers and other thematic breaks
 * (`***`, `- - -`) stay: models write lists, and neither makes a heading. Newlines stay;
 * use `markdownCell` inside a table.
 */
export function markdownText(text: string): string {
  return inert(text)
    .replace(/[\\`<>&|[]/g, escapeMarkdown)
    .replace(/^([ \t]*)#/gm, '$1\\#')
    .replace(/^([ \t]*)(=+|-+)([ \t]*)$/gm, '$1\\$2$3');
}

/** Text for one Markdown table cell: inert, HTML escaped, pipes escaped, on one line. */
export function markdownCell(text: string): string {
  return inert(text)
    .replace(/[\\`<>&|]/g, escapeMarkdown)
    .replace(/\s*\n\s*/g, ' ');
}

/** A copy of a plain-data value with every string made safe for Markdown by `markdownText`. */
export function markdownDeep<T>(value: T): T {
  return mapStrings(value, markdownText) as T;
}

function mapStrings(value: unknown, fn: (text: string) => string): unknown {
  if (typeof value === 'string') return fn(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, fn));
  if (value !== null && typeof value === 'object' && isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = mapStrings(v, fn);
    return out;
  }
  return value;
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * JSON for a terminal or a pipe: as JSON.stringify, with DEL, the C1 controls (which
 * JSON.stringify leaves raw), the direction controls and the line and paragraph separators
 * (which line readers such as Python's splitlines() take for line ends) written as \u escapes.
 * Parses to the same value.
 */
export function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(/[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
