import { inert } from './inert.js';

/** A plain text table with aligned columns; the last column is left unpadded. Cells are made inert. */
export function formatTable(headers: string[], untrusted: string[][]): string {
  const rows = untrusted.map((r) => r.map((c) => inert(c).replace(/[\t\n]+/g, ' ')));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return `${[line(headers), ...rows.map(line)].join('\n')}\n`;
}
