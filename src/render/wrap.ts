/**
 * Fitting lines to the terminal: word-wrapped at its width, escape sequences (colour) kept and
 * not counted, continuation lines indented under the text. A word longer than the width is cut.
 */

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;

/** Columns a text takes on a terminal: escape sequences take none, East Asian wide characters two. */
export function visibleWidth(text: string): number {
  let width = 0;
  for (const ch of text.replace(ANSI, '')) width += isWide(ch.codePointAt(0)!) ? 2 : 1;
  return width;
}

function isWide(cp: number): boolean {
  return (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1faff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  );
}

/** The line as lines no wider than `columns`; continuations are indented two past the line's own indent. */
export function wrapLine(line: string, columns: number): string[] {
  if (visibleWidth(line) <= columns) return [line];
  const indent = /^ */.exec(line.replace(ANSI, ''))![0].length;
  const hang = ' '.repeat(Math.min(indent + 2, Math.floor(columns / 2)));
  const words = line.trimStart().split(' ');
  const out: string[] = [];
  let current = ' '.repeat(indent);
  let currentWidth = indent;
  let empty = true;
  for (const word of words) {
    const w = visibleWidth(word);
    if (!empty && currentWidth + 1 + w > columns) {
      out.push(current);
      current = hang;
      currentWidth = hang.length;
      empty = true;
    }
    if (w > columns - currentWidth) {
      // A word wider than the room left: cut it, keeping its escapes out of the count.
      const room = Math.max(1, columns - currentWidth - (empty ? 0 : 1));
      current += `${empty ? '' : ' '}${cut(word, room)}`;
      out.push(current);
      current = hang;
      currentWidth = hang.length;
      empty = true;
      continue;
    }
    current += `${empty ? '' : ' '}${word}`;
    currentWidth += (empty ? 0 : 1) + w;
    empty = false;
  }
  if (!empty || out.length === 0) out.push(current);
  return out;
}

/** The line cut to `columns`, with an ellipsis when it was longer. */
export function clipLine(line: string, columns: number): string {
  return visibleWidth(line) <= columns ? line : cut(line, columns);
}

/** Every line of a text fitted to `columns`. */
export function fitText(text: string, columns: number): string {
  return text
    .split('\n')
    .flatMap((line) => wrapLine(line, columns))
    .join('\n');
}

function cut(word: string, room: number): string {
  let width = 0;
  let out = '';
  for (const part of word.split(/(\u001b\[[0-9;]*m)/)) {
    if (part.startsWith('\u001b[')) {
      out += part;
      continue;
    }
    for (const ch of part) {
      const w = isWide(ch.codePointAt(0)!) ? 2 : 1;
      // One column is kept for the ellipsis; a colour left open is closed.
      if (width + w > room - 1) return `${out}…${word.includes('\u001b[') ? '\u001b[0m' : ''}`;
      out += ch;
      width += w;
    }
  }
  return out;
}
