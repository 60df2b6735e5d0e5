import { inert } from './inert.js';

/** A plain text table with aligned columns (figures in `rightAligned` columns flush right); the last column is left unpadded. Cells are made inert. */
export function formatTable(headers: string[], untrusted: string[][], rightAligned: readonly number[] = []): string {
  const rows = untrusted.map((r) => r.map((c) => inert(c).replace(/[\t\n]+/g, ' ')));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (rightAligned.includes(i) ? c.padStart(widths[i] ?? 0) : i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return `${[line(headers), ...rows.map(line)].join('\n')}\n`;
}

/**
 * The table fitted to `columns`: the last column (free text, e.g. a question) is clipped with an
 * ellipsis to the room the others leave, never below `minLast` characters.
 */
export function formatFittedTable(headers: string[], untrusted: string[][], columns: number, minLast = 20): string {
  const rows = untrusted.map((r) => r.map((c) => inert(c).replace(/[\t\n]+/g, ' ')));
  const fixed = headers.slice(0, -1).map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const room = Math.max(minLast, columns - fixed.reduce((sum, w) => sum + w + 2, 0));
  const clip = (text: string): string => (text.length > room ? `${text.slice(0, room - 1)}…` : text);
  return formatTable(headers, rows.map((r) => [...r.slice(0, -1), clip(r.at(-1) ?? '')]));
}
