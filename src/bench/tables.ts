import type { BenchReport, ConditionStats } from './report.js';
import type { FlipMatrix } from './stats.js';
import type { RunRescore } from './rescore.js';
import { plural } from '../plural.js';

/** One table of a report, rendered the same way by the Markdown and HTML writers. */
export interface ReportTable {
  id: string;
  title: string;
  /** One or two sentences on how to read it. */
  legend: string;
  headers: string[];
  /** Columns right-aligned (numbers). */
  numeric: number[];
  rows: string[][];
  /** Said instead of an empty table. */
  empty?: string;
}

export function pct(x: number | null | undefined, digits = 1): string {
  return x === null || x === undefined || !Number.isFinite(x) ? '–' : `${(x * 100).toFixed(digits)}%`;
}

export function interval(low: number | null, high: number | null): string {
  return low === null || high === null || !Number.isFinite(low) || !Number.isFinite(high) ? '–' : `[${(low * 100).toFixed(1)}, ${(high * 100).toFixed(1)}]`;
}

/** A difference in percentage points, signed. */
export function points(x: number): string {
  const value = (x * 100).toFixed(1);
  return `${x > 0 ? '+' : ''}${value === '-0.0' ? '0.0' : value} pp`;
}

export function signedInterval(low: number, high: number): string {
  const p = (x: number): string => {
    const v = (x * 100).toFixed(1);
    return `${x > 0 ? '+' : ''}${v === '-0.0' ? '0.0' : v}`;
  };
  return `[${p(low)}, ${p(high)}]`;
}

function num(x: number | null | undefined, digits = 1): string {
  return x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(digits);
}

function flipRow(preset: string, level: string, m: FlipMatrix): string[] {
  const net = m.wrongToRight - m.rightToWrong;
  return [preset, level, String(m.rightToRight), String(m.rightToWrong), String(m.wrongToRight), String(m.wrongToWrong), `${net > 0 ? '+' : ''}${net}`];
}

/** The accuracy table rows: available conditions with numbers, the others with their reason. */
export function conditionRows(conditions: ConditionStats[]): string[][] {
  return conditions.map((c) =>
    c.available
      ? [c.preset, c.label, pct(c.accuracy), interval(c.ciLow, c.ciHigh), `${c.correct}/${c.n}`, num(c.callsPerItem), num(c.tokensPerItem, 0)]
      : // The reason goes with "unavailable", not under tokens/item where it read as a figure.
        [c.preset, c.label, c.note ? `unavailable: ${c.note}` : 'unavailable', '–', '–', '–', '–'],
  );
}

/** Every table of the report, in reading order. */
export function reportTables(report: BenchReport, options: { maxItems?: number } = {}): ReportTable[] {
  const maxItems = options.maxItems ?? 50;
  const tables: ReportTable[] = [
    {
      id: 'accuracy',
      title: 'Accuracy by condition',
      legend: `Share of items answered correctly, with a 95% percentile bootstrap interval (${report.bootstrap.iterations} resamples, seed ${report.bootstrap.seed}). An answer that could not be read counts as wrong. Calls and tokens are per item, repairs included: self-consistency uses as many agent calls (k) as the debate's agents made on that item, and so does self-correction: each agent revises its own round-0 answer alone, once per critique turn it made, and the last answers are voted.`,
      headers: ['preset', 'condition', 'accuracy', '95% CI', 'correct', 'calls/item', 'tokens/item'],
      numeric: [2, 4, 5, 6],
      rows: conditionRows(report.conditions),
    },
    {
      id: 'differences',
      title: 'Differences between conditions',
      legend: 'Accuracy of the first condition minus the second on the same items, in percentage points, with a paired bootstrap interval: an interval that contains 0 means the run cannot tell the two apart. Debate + majority − self-correction is what the peers\' content adds beyond each agent re-examining its own answer.',
      headers: ['scope', 'comparison', 'difference', '95% CI', 'items'],
      numeric: [2, 4],
      rows: report.differences.map((d) => [d.scope, `${d.a} − ${d.b}`, points(d.diff), signedInterval(d.ciLow, d.ciHigh), String(d.n)]),
      empty: 'No two conditions have results on the same items yet.',
    },
    {
      id: 'rounds',
      title: 'Accuracy by round',
      legend: 'Majority vote of the positions held after each round, and the mean accuracy of the agents one by one. A debate that stopped early counts with its final positions in the later rounds.',
      headers: ['preset', 'round', 'majority', 'mean agent', 'debates reaching it'],
      numeric: [1, 2, 3, 4],
      rows: report.byRound.map((r) => [r.preset, String(r.round), pct(r.majority), pct(r.agentMean), `${r.debatesReaching}/${r.n}`]),
      empty: 'No finished debates yet.',
    },
    {
      id: 'flips',
      title: 'Flips from round 0 to the final round',
      legend: 'How answers moved between the independent round 0 and the last round: per agent (each agent on each item) and for the panel majority. Net = wrong→right minus right→wrong.',
      headers: ['preset', 'level', 'right→right', 'right→wrong', 'wrong→right', 'wrong→wrong', 'net'],
      numeric: [2, 3, 4, 5, 6],
      rows: report.flips.flatMap((f) => [flipRow(f.preset, 'agents', f.agents), flipRow(f.preset, 'majority', f.majority)]),
    },
    {
      id: 'early-exit',
      title: 'Early exit',
      legend: 'Debates the judge stopped before the last round, the critique rounds that saved (and their share of the rounds the debates could have run), and how many of those early stops had converged on a wrong answer.',
      headers: ['preset', 'debates', 'max rounds', 'early exits', 'rounds saved', 'share saved', 'wrong early exits', 'share wrong'],
      numeric: [1, 2, 3, 4, 5, 6, 7],
      rows: report.earlyExit.map((e) => [e.preset, String(e.debates), String(e.maxRounds), String(e.earlyExits), String(e.roundsSaved), pct(e.roundsSavedShare), String(e.wrongExits), pct(e.wrongExitShare)]),
    },
    {
      id: 'minority',
      title: 'Minority positions kept by the synthesizer',
      legend: "Each minority position the synthesis kept, read from that agent's own answer in the round named. Rescues: items where the synthesizer was wrong but a kept minority position was right.",
      headers: ['preset', 'items with a minority', 'positions', 'correct', 'share correct', 'rescues'],
      numeric: [1, 2, 3, 4, 5],
      rows: report.minority.map((m) => [m.preset, String(m.itemsWithMinority), String(m.positions), String(m.correct), pct(m.share), String(m.rescues)]),
    },
    {
      id: 'conformity',
      title: 'Conformity and independence',
      legend:
        "Adoption: agents outside an item's round-0 majority answer that hold it at the end. Right→wrong: an agent's right answer turned wrong in the next round, to the previous round's majority answer or away from it. Same wrong: the share of items on which two agents are wrong with the same round-0 answer, over all pairs; ρ̄: the mean over pairs of same-wrong over both-wrong; effective voters m/(1+(m−1)ρ̄) (docs/confidence.md).",
      headers: ['preset', 'outside majority', 'joined', 'adoption', 'right→wrong to majority', 'right→wrong away', 'same wrong', 'ρ̄', 'effective voters'],
      numeric: [1, 2, 3, 4, 5, 6, 7, 8],
      rows: (report.conformity ?? []).map((c) => [
        c.preset,
        String(c.outsideMajority),
        String(c.joinedMajority),
        pct(c.majorityAdoption),
        String(c.rightToWrongToMajority),
        String(c.rightToWrongAway),
        pct(c.sameWrongShare),
        c.meanCorrelation === null ? '–' : c.meanCorrelation.toFixed(2),
        c.effectiveVoters === null ? '–' : c.effectiveVoters.toFixed(2),
      ]),
    },
    {
      id: 'parsing',
      title: 'Answer parsing',
      legend: 'Answers read per model and stage. Unparsed: the reply held no readable final answer even after one repair request (scored wrong). Call errors: the call itself failed (timeout, server error), also scored wrong but not a parse failure.',
      headers: ['model', 'stage', 'answers', 'unparsed', 'call errors', 'parse-failure rate'],
      numeric: [2, 3, 4, 5],
      rows: report.parseFailures.map((p) => [p.model, p.stage, String(p.answers), String(p.unparsed), String(p.errors), pct(p.rate)]),
      empty: 'No answers yet.',
    },
    {
      id: 'models',
      title: 'Models',
      legend: 'Every call of the finished items (debates and baselines). Latency is wall time per call, queueing and model loads included; tokens per second is generation speed as Ollama reports it.',
      headers: ['model', 'calls', 'mean latency', 'mean prompt tokens', 'mean completion tokens', 'tokens/s'],
      numeric: [1, 2, 3, 4, 5],
      rows: report.models.map((m) => [
        m.model,
        String(m.calls),
        m.meanLatencyMs === null ? '–' : m.meanLatencyMs >= 1000 ? `${(m.meanLatencyMs / 1000).toFixed(2)} s` : `${Math.round(m.meanLatencyMs)} ms`,
        num(m.meanPromptTokens, 0),
        num(m.meanCompletionTokens, 0),
        num(m.tokensPerSecond),
      ]),
      empty: 'No calls yet.',
    },
  ];

  const mark = (a: { answer: string | null; correct: boolean } | undefined): string =>
    a === undefined ? '–' : `${a.answer ?? '∅'} ${a.correct ? '✓' : '✗'}`;
  if (report.rules) tables.push(rulesTable(report.rules));
  // One table per preset: each has its own agents, so its own columns.
  for (const preset of report.run.presets) {
    const rows = report.items.filter((i) => i.preset === preset.name);
    const shown = rows.slice(0, maxItems);
    const columns = report.conditions
      .filter((c) => c.preset === preset.name && c.available)
      .map((c) => (c.variant === '' ? c.condition : `${c.condition}:${c.variant}`));
    const title = report.run.presets.length > 1 ? `Items: ${preset.name}` : 'Items';
    tables.push({
      id: `items-${preset.name}`,
      title: rows.length > shown.length ? `${title} (first ${shown.length} of ${rows.length})` : title,
      legend: 'What each condition answered (✓ right, ✗ wrong, ∅ nothing readable), with the debate to open with `conclave show`.',
      headers: ['item', 'gold', ...columns, 'rounds', 'exit', 'debate'],
      numeric: [],
      rows: shown.map((i) => [i.id, i.gold, ...columns.map((c) => mark(i.answers[c])), i.rounds === null ? '–' : String(i.rounds), i.exitReason ?? '–', i.debateId ?? '–']),
      empty: 'No finished items yet.',
    });
  }
  return tables;
}

/** The best rule at no more tokens per item than the run's own scoring, per preset, in words. */
export function bestRuleLines(r: RunRescore): string[] {
  return r.run.presets.map((preset) => {
    const best = r.best[preset];
    const own = r.own[preset] ?? '–';
    if (!best) return `${preset}: no rule decided every item at no more tokens per item than its own scoring (${own}).`;
    return best.rule === own
      ? `${preset}: its own scoring (${own}, ${pct(best.accuracy)} at ${num(best.tokensPerItem, 0)} tokens/item) is the best rule at its compute.`
      : `${preset}: best at equal or lower compute than its own scoring (${own}, ${pct(best.ownAccuracy)} at ${num(best.ownTokensPerItem, 0)} tokens/item) is ${best.rule}, ${pct(best.accuracy)} at ${num(best.tokensPerItem, 0)} tokens/item.`;
  });
}

export function rulesTable(r: RunRescore): ReportTable {
  return {
    id: 'rules',
    title: 'Rules re-scored from the record',
    legend: `Other stopping, aggregation and early-majority rules applied to the recorded answers, with no model called again (see docs/rescore.md). A rule that needs a round the debate never ran is unavailable on that item, not guessed; its accuracy covers only the items it decided. "vs own" is the paired difference against the run's own scoring. ${bestRuleLines(r).join(' ')}`,
    headers: ['preset', 'rule', 'decided', 'accuracy', '95% CI', 'vs own', '95% CI', 'calls/item', 'tokens/item', 'GPU-s/item', 'note'],
    numeric: [2, 3, 5, 7, 8, 9],
    rows: r.rules.map((f) => [
      f.preset,
      f.rule,
      `${f.n}/${f.items}`,
      pct(f.accuracy),
      interval(f.ciLow, f.ciHigh),
      f.vsOwn === null ? '–' : points(f.vsOwn.diff),
      f.vsOwn === null ? '–' : signedInterval(f.vsOwn.ciLow, f.vsOwn.ciHigh),
      num(f.callsPerItem),
      num(f.tokensPerItem, 0),
      num(f.gpuSecondsPerItem, 2),
      f.unavailable === null ? '' : `unavailable on ${f.items - f.n}: ${f.unavailable}`,
    ]),
    empty: 'No finished items to re-score.',
  };
}

function protocolTerms(p: BenchReport['run']['presets'][number]): string {
  switch (p.protocol) {
    case 'parallel':
      return `synthesizer ${p.synthesizer}`;
    case 'tournament':
      return `judge ${p.judge} decides each match, synthesizer ${p.synthesizer}`;
    case 'decompose':
      return 'the decomposer splits and reassembles';
    case 'pipeline':
      return 'a lead plans, reviewers review against the plan, a filter reports';
    case 'oxford':
      return `two sides argue the motion in openings, rebuttals and closings; judge ${p.judge} gives the verdict, synthesizer ${p.synthesizer}`;
    case 'delphi':
      return `anonymous rounds, up to ${p.maxRounds}, until the spread stops narrowing; judge ${p.judge} groups stances, synthesizer ${p.synthesizer}`;
    default:
      return `judge ${p.judge}, synthesizer ${p.synthesizer}; up to ${p.maxRounds} critique rounds, early exit at ${p.threshold}`;
  }
}

/** How the summary writes a recorded value: as code (a name) or as text. Markdown escapes both; HTML escapes the whole line. */
export interface SummaryFormat {
  code(text: string): string;
  text(text: string): string;
}

const asWritten: SummaryFormat = { code: (t) => `\`${t}\``, text: (t) => t };

/** A few lines that say what the run was; names, hosts and the stop reason come from files and servers, so `fmt` writes them. */
export function runSummaryLines(report: BenchReport, fmt: SummaryFormat = asWritten): string[] {
  const r = report.run;
  const presets = r.presets.map((p) => {
    const agents = p.agents.map((a) => `${a.id}: ${a.model}`).join(', ');
    const k = r.meanK[p.name];
    return `${fmt.code(p.name)}: protocol ${fmt.text(p.protocol)}, ${plural(p.agents.length, 'agent')} (${fmt.text(agents)}); ${fmt.text(protocolTerms(p))}${p.voting ? '; cluster voting' : ''}${k === null || k === undefined ? '' : `; mean k = ${k.toFixed(1)}`}`;
  });
  return [
    ...(report.parseHealth?.warning ? [`**⚠ Warning: ${report.parseHealth.warning}**`] : []),
    ...(r.sealNotice ? [`**⚠ ${fmt.text(r.sealNotice)}**`] : []),
    `Suite ${fmt.code(r.suite)}: ${plural(r.items, 'item')} (sha256 ${r.suiteHash.slice(0, 12)}). Status **${r.status}**: ${r.trialsDone} of ${r.trialsTotal} item runs finished${r.error ? ` (stopped: ${fmt.text(r.error)})` : ''}.`,
    `Host ${fmt.text(r.host)}; Conclave ${fmt.text(r.engineVersion)}; started ${r.createdAt}${r.finishedAt ? `, finished ${r.finishedAt}` : ''}.`,
    ...presets.map((p) => `Preset ${p}.`),
  ];
}
