import { inert } from '../render/inert.js';
import type { Condition } from './conditions.js';
import type { BenchReport, ConditionStats, RoundAccuracy } from './report.js';
import { type ReportTable, pct, reportTables, runSummaryLines } from './tables.js';
import { type RuleFigure, type RunRescore, paretoFront } from './rescore.js';

/**
 * A self-contained HTML page of a bench report: inline CSS and hand-drawn SVG,
 * no script and no network, so it opens offline in any browser.
 */

export function escapeHtml(text: string): string {
  // Inert first: the page may go to a terminal (no --out), and direction controls show as `<U+202E>`.
  return escapeMarkup(inert(text));
}

/** Escapes the five characters that HTML gives meaning to, and nothing else. */
export function escapeMarkup(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

const CONDITION_COLORS: Record<Condition, string> = {
  single: '#8c8c8c',
  sc: '#3b75af',
  'self-correction': '#6f8fb8',
  'round0-vote': '#4aa3a2',
  parallel: '#c44e52',
  'debate-vote': '#e08a2b',
  'debate-synth': '#8a5cb8',
  'cluster-vote': '#4f9a4a',
};
const SERIES_COLORS = ['#3b75af', '#e08a2b', '#4f9a4a', '#c44e52', '#8a5cb8', '#937860'];

const fmt = (x: number): string => (Math.round(x * 10) / 10).toString();

/** Horizontal bars of accuracy per condition, grouped by preset, with the 95% interval as a whisker. */
export function accuracyChart(conditions: ConditionStats[]): string {
  const width = 820;
  const labelWidth = 330;
  const plotLeft = labelWidth + 10;
  const plotRight = width - 70;
  const rowHeight = 24;
  const headerHeight = 26;
  const top = 30;
  const x = (v: number): number => plotLeft + (plotRight - plotLeft) * Math.max(0, Math.min(1, v));
  const presets = [...new Set(conditions.map((c) => c.preset))];
  const parts: string[] = [];
  let y = top;
  for (const preset of presets) {
    parts.push(`<text x="0" y="${fmt(y + 17)}" class="group">${escapeHtml(preset)}</text>`);
    y += headerHeight;
    for (const c of conditions.filter((k) => k.preset === preset)) {
      const mid = y + rowHeight / 2;
      parts.push(`<text x="${labelWidth}" y="${fmt(mid + 4)}" text-anchor="end" class="label">${escapeHtml(c.label)}</text>`);
      if (!c.available || c.accuracy === null) {
        parts.push(`<text x="${plotLeft + 4}" y="${fmt(mid + 4)}" class="muted">unavailable${c.note ? `: ${escapeHtml(c.note)}` : ''}</text>`);
      } else {
        const color = CONDITION_COLORS[c.condition];
        const title = `${c.label}: ${pct(c.accuracy)} (95% CI ${pct(c.ciLow)} to ${pct(c.ciHigh)}), ${c.correct}/${c.n}`;
        parts.push(
          `<g><title>${escapeHtml(title)}</title>` +
            `<rect x="${plotLeft}" y="${fmt(y + 4)}" width="${fmt(Math.max(0.5, x(c.accuracy) - plotLeft))}" height="${rowHeight - 8}" fill="${color}" opacity="0.85"/>`,
        );
        if (c.ciLow !== null && c.ciHigh !== null && Number.isFinite(c.ciLow) && Number.isFinite(c.ciHigh)) {
          const lo = x(c.ciLow);
          const hi = x(c.ciHigh);
          parts.push(
            `<line x1="${fmt(lo)}" x2="${fmt(hi)}" y1="${fmt(mid)}" y2="${fmt(mid)}" class="whisker"/>` +
              `<line x1="${fmt(lo)}" x2="${fmt(lo)}" y1="${fmt(mid - 6)}" y2="${fmt(mid + 6)}" class="whisker"/>` +
              `<line x1="${fmt(hi)}" x2="${fmt(hi)}" y1="${fmt(mid - 6)}" y2="${fmt(mid + 6)}" class="whisker"/>`,
          );
        }
        parts.push(`<text x="${plotRight + 8}" y="${fmt(mid + 4)}" class="value">${pct(c.accuracy, 0)}</text></g>`);
      }
      y += rowHeight;
    }
    y += 6;
  }
  const height = y + 24;
  const grid: string[] = [];
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    const gx = fmt(x(tick));
    grid.push(`<line x1="${gx}" x2="${gx}" y1="${top - 6}" y2="${fmt(y)}" class="grid"/>`);
    grid.push(`<text x="${gx}" y="${top - 10}" text-anchor="middle" class="tick">${tick * 100}%</text>`);
    grid.push(`<text x="${gx}" y="${fmt(y + 16)}" text-anchor="middle" class="tick">${tick * 100}%</text>`);
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${fmt(height)}" width="${width}" height="${fmt(height)}" role="img" aria-label="Accuracy by condition with 95% intervals">${grid.join('')}${parts.join('')}</svg>`;
}

/** Lines of accuracy by round: majority vote (solid) and mean agent (dashed), one colour per preset. */
export function roundsChart(rows: RoundAccuracy[]): string {
  const presets = [...new Set(rows.map((r) => r.preset))];
  const width = 820;
  const left = 56;
  const right = width - 30;
  const top = 20;
  const bottom = 276;
  // The legend sits under the axis, one line per preset, so long preset names never get cut.
  const height = bottom + 56 + presets.length * 22;
  const maxRound = Math.max(1, ...rows.map((r) => r.round));
  const x = (round: number): number => left + ((right - left) * round) / maxRound;
  const y = (v: number): number => bottom - (bottom - top) * Math.max(0, Math.min(1, v));
  const parts: string[] = [];
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    parts.push(`<line x1="${left}" x2="${right}" y1="${fmt(y(tick))}" y2="${fmt(y(tick))}" class="grid"/>`);
    parts.push(`<text x="${left - 8}" y="${fmt(y(tick) + 4)}" text-anchor="end" class="tick">${tick * 100}%</text>`);
  }
  for (let round = 0; round <= maxRound; round++) {
    parts.push(`<text x="${fmt(x(round))}" y="${bottom + 18}" text-anchor="middle" class="tick">${round}</text>`);
  }
  parts.push(`<text x="${fmt((left + right) / 2)}" y="${bottom + 36}" text-anchor="middle" class="label">round (0 = independent answers)</text>`);
  presets.forEach((preset, i) => {
    const color = SERIES_COLORS[i % SERIES_COLORS.length]!;
    const series = rows.filter((r) => r.preset === preset).sort((a, b) => a.round - b.round);
    const line = (pick: (r: RoundAccuracy) => number, dashed: boolean): string => {
      const pts = series.filter((r) => Number.isFinite(pick(r))).map((r) => `${fmt(x(r.round))},${fmt(y(pick(r)))}`);
      const dots = series
        .filter((r) => Number.isFinite(pick(r)))
        .map((r) => `<circle cx="${fmt(x(r.round))}" cy="${fmt(y(pick(r)))}" r="${dashed ? 3 : 4}" fill="${dashed ? '#fff' : color}" stroke="${color}" stroke-width="2"><title>${escapeHtml(`${preset}, round ${r.round}, ${dashed ? 'mean agent' : 'majority'}: ${pct(pick(r))}`)}</title></circle>`)
        .join('');
      return `<polyline points="${pts.join(' ')}" fill="none" stroke="${color}" stroke-width="2"${dashed ? ' stroke-dasharray="6 4"' : ''}/>${dots}`;
    };
    parts.push(line((r) => r.majority, false), line((r) => r.agentMean, true));
    const ly = bottom + 62 + i * 22;
    const mid = left + (right - left) / 2;
    parts.push(
      `<line x1="${left}" x2="${left + 24}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2"/><text x="${left + 30}" y="${ly + 4}" class="label">${escapeHtml(preset)}: majority vote</text>`,
      `<line x1="${fmt(mid)}" x2="${fmt(mid + 24)}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2" stroke-dasharray="6 4"/><text x="${fmt(mid + 30)}" y="${ly + 4}" class="label">${escapeHtml(preset)}: mean agent</text>`,
    );
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="Accuracy by round">${parts.join('')}</svg>`;
}

/**
 * Accuracy against tokens per item for every re-scored rule, one colour per preset. Rules on the
 * Pareto front (none is both more accurate and cheaper) are filled, joined by a line and named.
 */
export function rulesChart(r: RunRescore): string {
  const figures = r.rules.filter((f) => f.accuracy !== null && f.tokensPerItem !== null);
  const presets = r.run.presets;
  const width = 820;
  const left = 60;
  const right = width - 30;
  const top = 20;
  const bottom = 320;
  const height = bottom + 56 + presets.length * 22;
  const maxTokens = Math.max(1, ...figures.map((f) => f.tokensPerItem!)) * 1.05;
  const x = (t: number): number => left + ((right - left) * t) / maxTokens;
  const y = (v: number): number => bottom - (bottom - top) * Math.max(0, Math.min(1, v));
  const parts: string[] = [];
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    parts.push(`<line x1="${left}" x2="${right}" y1="${fmt(y(tick))}" y2="${fmt(y(tick))}" class="grid"/>`);
    parts.push(`<text x="${left - 8}" y="${fmt(y(tick) + 4)}" text-anchor="end" class="tick">${tick * 100}%</text>`);
  }
  for (let i = 0; i <= 4; i++) {
    const t = (maxTokens * i) / 4;
    parts.push(`<text x="${fmt(x(t))}" y="${bottom + 18}" text-anchor="middle" class="tick">${Math.round(t)}</text>`);
  }
  parts.push(`<text x="${fmt((left + right) / 2)}" y="${bottom + 36}" text-anchor="middle" class="label">tokens per item (prompt + completion)</text>`);
  presets.forEach((preset, i) => {
    const color = SERIES_COLORS[i % SERIES_COLORS.length]!;
    const mine = figures.filter((f) => f.preset === preset);
    const front = paretoFront(mine);
    const onFront = new Set<RuleFigure>(front);
    if (front.length > 1) {
      parts.push(`<polyline points="${front.map((f) => `${fmt(x(f.tokensPerItem!))},${fmt(y(f.accuracy!))}`).join(' ')}" fill="none" stroke="${color}" stroke-width="1.5" stroke-dasharray="4 3"/>`);
    }
    for (const f of mine) {
      const title = `${preset}: ${f.rule}, ${pct(f.accuracy)} at ${Math.round(f.tokensPerItem!)} tokens/item (${f.n}/${f.items} items decided)${onFront.has(f) ? ', on the Pareto front' : ''}`;
      parts.push(
        `<circle cx="${fmt(x(f.tokensPerItem!))}" cy="${fmt(y(f.accuracy!))}" r="${onFront.has(f) ? 5 : 4}" fill="${onFront.has(f) ? color : '#fff'}" stroke="${color}" stroke-width="2"><title>${escapeHtml(title)}</title></circle>`,
      );
    }
    for (const f of front) parts.push(`<text x="${fmt(x(f.tokensPerItem!) + 7)}" y="${fmt(y(f.accuracy!) - 7)}" class="label">${escapeHtml(f.rule)}</text>`);
    const ly = bottom + 62 + i * 22;
    parts.push(`<circle cx="${left + 8}" cy="${ly}" r="5" fill="${color}"/><text x="${left + 20}" y="${ly + 4}" class="label">${escapeHtml(preset)}: filled = Pareto front, hollow = dominated</text>`);
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="Accuracy against tokens per item for every rule">${parts.join('')}</svg>`;
}

function htmlTable(table: ReportTable): string {
  if (table.rows.length === 0) return `<p class="muted">${escapeHtml(table.empty ?? 'Nothing to show.')}</p>`;
  const th = table.headers.map((h, i) => `<th${table.numeric.includes(i) ? ' class="num"' : ''}>${escapeHtml(h)}</th>`).join('');
  const rows = table.rows
    .map((r) => `<tr>${r.map((c, i) => `<td${table.numeric.includes(i) ? ' class="num"' : ''}>${escapeHtml(c)}</td>`).join('')}</tr>`)
    .join('\n');
  return `<table><thead><tr>${th}</tr></thead><tbody>\n${rows}\n</tbody></table>`;
}

const STYLE = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;background:#fff;margin:0;padding:24px 32px;max-width:1400px}
h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #ddd;padding-bottom:4px}
ul.summary{padding-left:18px;margin:6px 0}p.legend{color:#555;margin:4px 0 10px;max-width:900px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}th,td{padding:3px 10px;border-bottom:1px solid #eee;text-align:left}th.num,td.num{white-space:nowrap}td{max-width:24em;overflow-wrap:anywhere}
th{background:#f6f6f6;font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{fill:#888;color:#888}svg text{font:12px system-ui,sans-serif}svg .group{font-weight:600;font-size:13px}
svg .label{fill:#333}svg .tick{fill:#777;font-size:11px}svg .value{fill:#333;font-variant-numeric:tabular-nums}
svg .grid{stroke:#e4e4e4;stroke-width:1}svg .whisker{stroke:#222;stroke-width:1.5}
.scroll{overflow-x:auto}code{background:#f3f3f3;padding:0 3px;border-radius:3px}
`;

function inlineMarkdown(text: string): string {
  return escapeHtml(text)
    .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
    .replace(/`([^`]+)`/g, '<code>$1</code>');
}

/** The whole report as one offline HTML page. */
/** `backTo`: the page's way back (the viewer's list); a report written to a file has none. */
export function renderBenchHtml(report: BenchReport, opts: { backTo?: { href: string; label: string } } = {}): string {
  const tables = reportTables(report);
  const section = (table: ReportTable, chart = ''): string =>
    `<h2 id="${escapeHtml(table.id.replace(/[^\w-]+/g, '-'))}">${escapeHtml(table.title)}</h2>\n<p class="legend">${escapeHtml(table.legend)}</p>\n${chart}<div class="scroll">${htmlTable(table)}</div>`;
  const body = tables.map((t) =>
    t.id === 'accuracy'
      ? section(t, accuracyChart(report.conditions))
      : t.id === 'rounds' && report.byRound.length > 0
        ? section(t, roundsChart(report.byRound))
        : t.id === 'rules' && report.rules
          ? section(t, rulesChart(report.rules))
          : section(t),
  );
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Conclave bench ${escapeHtml(report.run.id)}</title>
<style>${STYLE}</style>
</head>
<body>
${opts.backTo ? `<nav class="back"><a href="${escapeHtml(opts.backTo.href)}">← ${escapeHtml(opts.backTo.label)}</a></nav>\n` : ''}<h1>Bench run ${escapeHtml(report.run.id)}</h1>
<ul class="summary">${runSummaryLines(report)
    .map((l) => `<li>${inlineMarkdown(l)}</li>`)
    .join('')}</ul>
${body.join('\n')}
</body>
</html>
`;
}
