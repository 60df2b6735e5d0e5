import type { DebateListEntry } from '../render/list-document.js';
import type { BenchRunSummary } from '../store/bench.js';
import { type BenchVerdict, benchSealWord } from '../store/bench-seal.js';
import { debateStatuses } from '../store/schema.js';
import { fixed, formatTime, html, page } from './html.js';

export interface ListFilter {
  status: string;
  preset: string;
  text: string;
  /** Show the debates `conclave bench` ran as items; hidden otherwise, so they do not flood the list. */
  bench: boolean;
}

const DEBATE_STATUSES: readonly string[] = debateStatuses;

export function filterFromQuery(query: URLSearchParams): ListFilter {
  const status = query.get('status') ?? '';
  return {
    status: DEBATE_STATUSES.includes(status) ? status : '',
    preset: (query.get('preset') ?? '').slice(0, 200),
    text: (query.get('q') ?? '').trim().slice(0, 200),
    bench: query.get('bench') === '1',
  };
}

function matchesText(text: string, ...fields: string[]): boolean {
  if (text === '') return true;
  const wanted = text.toLowerCase();
  return fields.some((f) => f.toLowerCase().includes(wanted));
}

export function filterDebates(rows: DebateListEntry[], f: ListFilter): DebateListEntry[] {
  return rows.filter((r) => r.bench === f.bench && (f.status === '' || r.status === f.status) && (f.preset === '' || r.presetName === f.preset) && matchesText(f.text, r.id, r.question, r.presetName));
}

export function filterBenchRuns(runs: BenchRunSummary[], f: ListFilter): BenchRunSummary[] {
  const names = (r: BenchRunSummary): string[] => r.presets.map((p) => p.name);
  return runs.filter(
    (r) => (f.status === '' || r.status === f.status) && (f.preset === '' || names(r).includes(f.preset)) && matchesText(f.text, r.id, r.suite, ...names(r)),
  );
}

/** The front page: debates and bench runs, newest first, with a filter form that works without script. */
/** `seals`: each bench run's seal as `bench list` checks it (`glanceBenchRun`), by run id. */
export function listPage(all: DebateListEntry[], runs: BenchRunSummary[], f: ListFilter, dbPath: string, seals: ReadonlyMap<string, BenchVerdict | null> = new Map()): string {
  const debates = filterDebates(all, f);
  const hiddenBench = f.bench ? 0 : filterDebates(all, { ...f, bench: true }).length;
  const benchRuns = filterBenchRuns(runs, f);
  const presets = [...new Set([...all.map((r) => r.presetName), ...runs.flatMap((r) => r.presets.map((p) => p.name))])].sort();
  const option = (value: string, label: string, selected: string) => html`<option value="${value}"${value === selected ? html` selected` : ''}>${label}</option>`;
  const body = html`<h1>Debates</h1>
<p class="muted">Record: <code>${dbPath}</code></p>
<p id="changed" class="changed" hidden>The record has changed since this page loaded: <a href="">show the latest</a>.</p>
<form class="filter" method="get" action="/">
<label>Status <select name="status">${option('', 'any', f.status)}${DEBATE_STATUSES.map((s) => option(s, s, f.status))}</select></label>
<label>Preset <select name="preset">${option('', 'any', f.preset)}${presets.map((p) => option(p, p, f.preset))}</select></label>
<label>Text <input type="search" name="q" value="${f.text}" placeholder="question or id"></label>
<label><input type="checkbox" name="bench" value="1"${f.bench ? html` checked` : ''}> bench items</label>
<button type="submit">Filter</button>
</form>
${hiddenBench > 0 ? html`<p class="muted" id="bench-hidden">${hiddenBench} debate${hiddenBench === 1 ? '' : 's'} run as bench items ${hiddenBench === 1 ? 'is' : 'are'} not listed: <a href="/?bench=1">show the bench items</a>.</p>` : ''}
${
  debates.length === 0
    ? html`<p class="muted" id="no-debates">${all.filter((r) => !r.bench).length === 0 && !f.bench ? 'No debates recorded yet. Run one with `conclave run "question" --preset NAME`, or try `conclave demo`.' : 'No debate matches the filter.'}</p>`
    : html`<table class="list" id="debates">
<thead><tr><th>created</th><th>status</th><th>preset</th><th>question</th><th class="num">rounds</th><th class="num">conv.</th><th class="num">agents</th><th class="num">calls</th><th>id</th></tr></thead>
<tbody>
${debates.map(
  (r) => html`<tr data-id="${r.id}">
<td class="nowrap">${formatTime(r.createdAt)}</td>
<td><span class="status status-${r.status}">${r.status}</span>${r.exitReason && r.exitReason !== 'converged' && r.exitReason !== 'max_rounds' ? html` <span class="muted">(${r.exitReason})</span>` : ''}${r.flaggedForReview ? html` <span class="flag" title="tension map flagged for human review">⚑</span>` : ''}</td>
<td>${r.presetName}</td>
<td><a href="/debates/${encodeURIComponent(r.id)}">${r.question}</a></td>
<td class="num">${r.roundsCompleted}</td>
<td class="num">${fixed(r.finalConvergence)}</td>
<td class="num">${r.agentCount}</td>
<td class="num">${r.callCount}</td>
<td><code class="id">${r.id}</code></td>
</tr>`,
)}
</tbody>
</table>`
}
<h2>Bench runs</h2>
${
  benchRuns.length === 0
    ? html`<p class="muted">${runs.length === 0 ? 'No bench runs recorded. See `conclave bench --help`.' : 'No bench run matches the filter.'}</p>`
    : html`<table class="list" id="bench-runs">
<thead><tr><th>started</th><th>status</th><th>seal</th><th>suite</th><th>presets</th><th class="num">trials done</th><th>id</th></tr></thead>
<tbody>
${benchRuns.map(
  (r) => html`<tr>
<td class="nowrap">${formatTime(r.createdAt)}</td>
<td><span class="status status-${r.status}">${r.status}</span></td>
${sealCell(seals.get(r.id) ?? null)}
<td>${r.suite}</td>
<td>${r.presets.map((p) => p.name).join(', ')}</td>
<td class="num">${r.trialsDone}/${r.itemCount * r.presets.length}</td>
<td><a href="/bench/${encodeURIComponent(r.id)}"><code class="id">${r.id}</code></a></td>
</tr>`,
)}
</tbody>
</table>`
}`;
  return page({ title: 'Debates', body, data: { page: 'list' } });
}

/** A bench run's seal in the word `bench list` uses; a broken run names its first changed row on hover. */
function sealCell(v: BenchVerdict | null) {
  const word = benchSealWord(v);
  const tone = word === 'BROKEN' ? 'failed' : word === 'unsealed' || word === 'adopted' || word === '?' ? 'interrupted' : 'completed';
  const title = v?.state === 'broken' ? v.problem : v?.state === 'unsealed' ? v.reason : null;
  return html`<td class="seal"><span class="status status-${tone}"${title === null ? '' : html` title="${title}"`}>${word}</span></td>`;
}
