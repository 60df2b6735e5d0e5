import { formatTable } from '../render/table.js';
import type { BenchReport, RunComparison } from './report.js';
import { type ReportTable, conditionRows, pct, points, reportTables, runSummaryLines, signedInterval } from './tables.js';
import { CONDITION_LABELS } from './conditions.js';

import { inertLine, markdownCell, markdownText } from '../render/inert.js';
import { plural } from '../plural.js';

// A cell holds names and answers from files and models: `[x](url)` there would be a link, `![x](url)` an image.
const cell = (text: string): string => markdownCell(text).replace(/\](?=[([])/g, '\\]');

/** Text from a file or a server on one line of Markdown: no HTML, no link, no heading. */
const mdText = (text: string): string => markdownText(inertLine(text));

/** A name as a code span, whose content Markdown shows as written: fenced by more backticks than it holds. */
function mdCode(text: string): string {
  const line = inertLine(text);
  const fence = '`'.repeat(Math.max(0, ...(line.match(/`+/g) ?? []).map((run) => run.length)) + 1);
  const pad = line.startsWith('`') || line.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${line}${pad}${fence}`;
}

const markdownSummary = { code: mdCode, text: mdText };

const LEGEND_ESCAPES: Record<string, string> = { '<': '&lt;', '>': '&gt;', '&': '&amp;', '[': '\\[', '\\': '\\\\' };
/** A legend names presets (the best rule of each): inert and without HTML or links, its own code spans kept. */
const mdLegend = (text: string): string => inertLine(text).replace(/[<>&[\\]/g, (c) => LEGEND_ESCAPES[c]!);

function markdownTable(table: ReportTable): string {
  if (table.rows.length === 0) return `${table.empty ?? 'Nothing to show.'}\n`;
  const align = table.headers.map((_, i) => (table.numeric.includes(i) ? '---:' : '---'));
  const line = (cells: string[]): string => `| ${cells.map(cell).join(' | ')} |`;
  return `${[line(table.headers), `| ${align.join(' | ')} |`, ...table.rows.map(line)].join('\n')}\n`;
}

/** The whole report as Markdown. */
export function renderBenchMarkdown(report: BenchReport): string {
  const parts = [`# Bench run ${mdText(report.run.id)}`, '', ...runSummaryLines(report, markdownSummary).map((l) => `- ${l}`), ''];
  for (const table of reportTables(report)) {
    parts.push(`## ${mdText(table.title)}`, '', mdLegend(table.legend), '', markdownTable(table));
  }
  return parts.join('\n');
}

/** The short table printed at the end of `conclave bench`: accuracy per condition. */
export function renderBenchSummary(report: BenchReport): string {
  const rows = conditionRows(report.conditions);
  const table = formatTable(['preset', 'condition', 'accuracy', '95% CI', 'correct', 'calls/item', 'tokens/item'], rows);
  // What the peers' content adds beyond re-examination, paired on the same items.
  const control = (report.differences ?? [])
    .filter((d) => d.a === CONDITION_LABELS['debate-vote'] && d.b === CONDITION_LABELS['self-correction'])
    .map((d) => `${inertLine(`${d.scope}: ${d.a} − ${d.b}`)} = ${points(d.diff)} (95% CI ${signedInterval(d.ciLow, d.ciHigh)}, ${plural(d.n, 'item')}): what the peers add beyond re-examination.\n`)
    .join('');
  const body = `${table}${control ? `\n${control}` : ''}`;
  return report.parseHealth?.warning ? `${body}\n⚠ Warning: ${report.parseHealth.warning}\n` : body;
}

/** `conclave bench compare` as Markdown. */
export function renderComparisonMarkdown(c: RunComparison): string {
  const lines = [
    `# Bench runs ${mdText(c.a.id)} (A) and ${mdText(c.b.id)} (B)`,
    '',
    `- A: suite ${mdCode(c.a.suite)}, ${plural(c.a.items, 'item')}. B: suite ${mdCode(c.b.suite)}, ${plural(c.b.items, 'item')}.`,
    c.sameSuite
      ? '- Same items and gold answers in both runs.'
      : c.a.suite === c.b.suite
        ? `- Both ran suite ${mdCode(c.a.suite)}, A on ${plural(c.a.items, 'item')} and B on ${c.b.items} (a different --limit): the items both ran are compared, by id and gold answer.`
        : '- The suites differ: only items with the same id and gold answer in both are compared.',
    '',
    'Difference = accuracy of B minus accuracy of A on the items both finished, with a 95% paired bootstrap interval.',
    '',
  ];
  if (c.rows.length === 0) {
    lines.push('The runs share no finished items under the same preset and condition, so there is nothing to compare.', '');
    return lines.join('\n');
  }
  const table: ReportTable = {
    id: 'compare',
    title: '',
    legend: '',
    headers: ['preset', 'condition', 'A', 'B', 'B − A', '95% CI', 'items'],
    numeric: [2, 3, 4, 6],
    rows: c.rows.map((r) => [r.preset, r.label, pct(r.accuracyA), pct(r.accuracyB), points(r.diff), signedInterval(r.ciLow, r.ciHigh), String(r.n)]),
  };
  lines.push(markdownTable(table));
  return lines.join('\n');
}
