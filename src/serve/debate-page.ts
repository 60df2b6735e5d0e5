import type { RoundJudgement, TurnRecord } from '../engine/events.js';
import { confidenceNotes, confidenceOf, confidenceText, modelConfidenceText } from '../render/confidence.js';
import { familiesText, panelOf } from '../render/panel.js';
import { readSteps } from '../render/panel-record.js';
import { MOVE_WORD } from '../render/stance-lines.js';
import { BLOCKING_CONFIDENCE, type Finding, blockingFirst } from '../protocol/pipeline.js';
import { exitText } from '../render/exit.js';
import { placeText } from '../render/place.js';
import { malformedClashesOf, resolutionText } from '../protocol/tension-order.js';
import { budgetSummary } from '../render/material.js';
import { abstainingClusters } from '../render/voting.js';
import type { SchedulePlan } from '../schedule/plan.js';
import type { StoredCall, StoredDebate } from '../store/store.js';
import { fixed, formatSeconds, formatTime, type Html, html, page, trusted } from './html.js';
import { apiName, plannedHostText, synthesizerUsed } from '../render/backends.js';
import { collisionText, constraintText, constraintsView, userWords } from '../render/constraints.js';
import { adviceLine, adviceOf, advocateEffect, answeredBy, fallbacksOf, kindOf, trajectoryText } from '../render/protocols.js';
import { argumentText, lastOf, sidesText, sideTag, verdictText } from '../render/oxford.js';
import { formatNumber, plural } from '../plural.js';
import { delphiOf, delphiResultText, delphiRoundText, spreadText } from '../render/delphi-lines.js';
import { fmt } from '../protocol/delphi.js';
import { FILE_LIMITS } from '../config/read-file.js';

/**
 * The debate page, rendered on the server so it reads with script off. app.js
 * keeps a running debate's grid, judge row and calls table up to date from the
 * event stream, building the same markup with textContent.
 */

const AXES = ['recommendation', 'facts', 'caveats'] as const;

function roundsOf(d: StoredDebate): number[] {
  const held = new Set([...d.turns.map((t) => t.round), ...d.rounds.map((r) => r.round)]);
  if (d.status === 'running') held.add(0);
  return [...held].sort((a, b) => a - b);
}

function roundLabel(round: number, kind = 'debate'): string {
  if (kind === 'oxford') return ['openings', 'rebuttals', 'closings'][round] ?? `round ${round}`;
  if (round === 0) return 'round 0 (answers)';
  return kind === 'tournament' ? `bracket round ${round}` : `round ${round}`;
}

export function turnCell(t: TurnRecord | undefined, round: number, agentId: string): Html {
  if (!t) return html`<td class="turn empty" data-round="${round}" data-agent="${agentId}"><span class="muted">…</span></td>`;
  const c = t.critique;
  return html`<td class="turn turn-${t.status}" data-round="${round}" data-agent="${agentId}">
<p class="position">${t.position ?? (t.error ? `no usable answer: ${t.error}` : 'no usable answer')}</p>
<p class="meta">${t.status === 'ok' ? '' : html`<span class="status status-${t.status}">${t.status}</span> `}confidence ${fixed(t.confidence)}</p>
${c && c.agreements.length > 0 ? html`<ul class="agree">${c.agreements.map((a) => html`<li><span class="peer">${a.with}</span>: ${a.on}</li>`)}</ul>` : ''}
${c && c.disagreements.length > 0 ? html`<ul class="disagree">${c.disagreements.map((a) => html`<li><span class="peer">${a.with}</span>: ${a.on}. <span class="reason">${a.reason}</span></li>`)}</ul>` : ''}
${t.opening?.reasoning ? html`<details><summary>reasoning</summary><p>${t.opening.reasoning}</p></details>` : ''}
</td>`;
}

export function judgeCell(j: RoundJudgement | undefined, round: number): Html {
  if (!j) return html`<td class="judge" data-judge-round="${round}"><span class="muted">…</span></td>`;
  if (!j.score) return html`<td class="judge" data-judge-round="${round}"><span class="status status-failed">judge failed</span> ${j.error ?? ''}</td>`;
  return html`<td class="judge" data-judge-round="${round}"><strong>${fixed(j.convergence)}</strong>
<span class="axes">recommendation ${fixed(j.score.recommendation)} · facts ${fixed(j.score.facts)} · caveats ${fixed(j.score.caveats)}</span>
<p class="rationale">${j.score.rationale}</p></td>`;
}

function grid(d: StoredDebate): Html {
  const rounds = roundsOf(d);
  const debaters = d.agents.filter((a) => a.role === 'debater');
  const steps = (d.steps ?? []).map((s) => s.step);
  return html`<div class="scroll"><table class="grid" id="grid">
<thead><tr><th>agent</th>${rounds.map((r) => html`<th data-round="${r}">${roundLabel(r, d.preset.protocol.kind)}</th>`)}</tr></thead>
<tbody>
${debaters.map(
  (a) => html`<tr data-agent="${a.id}"><th><span class="agent">${a.id}</span><br><span class="muted">${a.model}${sideTag(steps, a.id)}</span></th>${rounds.map((r) =>
    turnCell(
      d.turns.find((t) => t.round === r && t.agentId === a.id),
      r,
      a.id,
    ),
  )}</tr>`,
)}
${d.preset.protocol.kind === 'debate' ? html`<tr class="judge-row"><th>judge</th>${rounds.map((r) => judgeCell(d.rounds.find((j) => j.round === r), r))}</tr>` : ''}
</tbody>
</table></div>`;
}

/** The judge's three axes and their mean per round, with the threshold, as inline SVG (numbers only). */
export function judgeChart(d: StoredDebate): Html {
  const scored = d.rounds.filter((r) => r.score !== null);
  if (scored.length === 0) return html`<p class="muted" id="judge-chart">No judge scores yet.</p>`;
  const width = 480;
  const height = 190;
  const left = 36;
  const right = width - 150;
  const top = 12;
  const bottom = height - 30;
  const maxRound = Math.max(1, ...d.rounds.map((r) => r.round));
  const x = (round: number): number => left + ((right - left) * round) / maxRound;
  const y = (v: number): number => bottom - (bottom - top) * Math.max(0, Math.min(1, v));
  const n = (v: number): string => (Math.round(v * 10) / 10).toString();
  const parts: string[] = [];
  for (const tick of [0, 0.5, 1]) {
    parts.push(`<line class="grid-line" x1="${left}" x2="${right}" y1="${n(y(tick))}" y2="${n(y(tick))}"/><text class="tick" x="${left - 6}" y="${n(y(tick) + 4)}" text-anchor="end">${tick}</text>`);
  }
  // A tick per round, or, when the rounds recorded are far apart (a record edited and sealed again), one per round recorded.
  const ticks = maxRound <= Math.max(1, d.rounds.length) ? Array.from({ length: maxRound + 1 }, (_, r) => r) : [...new Set([0, ...d.rounds.map((r) => r.round)])].sort((a, b) => a - b);
  for (const r of ticks) parts.push(`<text class="tick" x="${n(x(r))}" y="${bottom + 16}" text-anchor="middle">${r}</text>`);
  const threshold = d.preset.protocol.convergenceThreshold;
  parts.push(`<line class="threshold" x1="${left}" x2="${right}" y1="${n(y(threshold))}" y2="${n(y(threshold))}"><title>threshold ${threshold}</title></line>`);
  const series: { key: string; pick: (r: RoundJudgement) => number | null }[] = [
    ...AXES.map((axis) => ({ key: axis, pick: (r: RoundJudgement) => r.score?.[axis] ?? null })),
    { key: 'mean', pick: (r: RoundJudgement) => r.convergence },
  ];
  series.forEach((s, i) => {
    const points = scored.flatMap((r) => {
      const v = s.pick(r);
      return v === null || !Number.isFinite(v) ? [] : [{ round: r.round, v }];
    });
    parts.push(`<polyline class="series series-${s.key}" points="${points.map((p) => `${n(x(p.round))},${n(y(p.v))}`).join(' ')}"/>`);
    for (const p of points) parts.push(`<circle class="dot series-${s.key}" cx="${n(x(p.round))}" cy="${n(y(p.v))}" r="3"><title>round ${p.round}, ${s.key} ${p.v.toFixed(2)}</title></circle>`);
    const ly = top + 8 + i * 18;
    parts.push(`<line class="series series-${s.key}" x1="${right + 14}" x2="${right + 34}" y1="${ly}" y2="${ly}"/><text class="label" x="${right + 40}" y="${ly + 4}">${s.key}</text>`);
  });
  parts.push(`<text class="tick" x="${right + 14}" y="${top + 8 + 4 * 18 + 4}">threshold ${threshold}</text>`);
  return trusted(
    `<svg id="judge-chart" class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="Judge scores by round">${parts.join('')}</svg>`,
  );
}

/** The support roles each protocol calls; the others' rows are left out of its panel. */
const SUPPORT_ROLES: Record<string, readonly string[]> = {
  debate: ['judge', 'synthesizer'],
  tournament: ['judge', 'synthesizer'],
  parallel: ['synthesizer'],
  decompose: [],
  pipeline: [],
  oxford: ['judge', 'synthesizer'],
};

function panel(d: StoredDebate): Html {
  const kind = d.preset.protocol.kind;
  // A pipeline's panel has roles of its own (lead, analyst, reviewer, filter), not debaters.
  const roleOf = (a: StoredDebate['agents'][number]): string =>
    a.role === 'debater' && kind === 'pipeline' ? (d.preset.agents.find((x) => x.id === a.id)?.role ?? 'reviewer') : a.role;
  // A judge or synthesizer the protocol never calls is not part of its panel, unless the record shows it was called.
  const called = new Set(d.calls.map((c) => c.agentId));
  const shown = d.agents.filter((a) => a.role === 'debater' || (SUPPORT_ROLES[kind]?.includes(a.role) ?? true) || called.has(a.id));
  return html`<table class="panel" id="panel">
<thead><tr><th>id</th><th>role</th><th>model</th><th>cluster</th><th>digest</th><th>persona</th></tr></thead>
<tbody>${shown.map(
    (a) => html`<tr><td class="agent">${a.id}</td><td>${roleOf(a)}</td><td><code>${a.role === 'synthesizer' ? synthesizerUsed(d) : a.model}</code></td><td>${a.cluster ?? ''}</td><td><code>${a.digest ? a.digest.slice(0, 12) : ''}</code></td><td>${a.persona ? html`<details><summary>${clipText(a.persona, 60)}</summary><p>${a.persona}</p></details>` : ''}</td></tr>`,
  )}</tbody>
</table>`;
}

function clipText(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function synthesisAttempts(d: StoredDebate): Html {
  const attempts = d.synthesisAttempts ?? [];
  if (attempts.length < 2 && attempts.every((a) => a.status === 'ok')) return html``;
  return html`<details class="attempts"><summary>${attempts.length} synthesis attempt${attempts.length === 1 ? '' : 's'}</summary><ol>${attempts.map(
    (a) => html`<li><span class="status status-${a.status}">${a.status}</span> <code>${a.model}</code> ${formatTime(a.at)}${a.error ? html` <span class="error">${a.error}</span>` : ''}</li>`,
  )}</ol></details>`;
}

/** The engine's confidence (docs/confidence.md), the same level the card and the JSON document carry. */
function confidenceBlock(d: StoredDebate): Html {
  const c = confidenceOf(d);
  if (!c) return html``;
  return html`<p class="confidence confidence-${c.level}"><strong>Confidence: ${confidenceText(c)}</strong></p>${confidenceNotes(c).map((n) => html`<p class="capped">${n}</p>`)}`;
}

function synthesisCard(d: StoredDebate): Html {
  const s = d.synthesis;
  const retry = d.status === 'unsynthesized' ? html`<p class="muted">Every round is kept; \`conclave synthesize ${d.id}\` tries the synthesis again.</p>` : '';
  if (!s) return html`<section id="synthesis" class="card"><h2>Synthesis</h2><p class="muted">${d.status === 'running' ? 'Not written yet.' : 'No synthesis was recorded.'}</p>${confidenceBlock(d)}${retry}${synthesisAttempts(d)}</section>`;
  if (!s.synthesis) return html`<section id="synthesis" class="card"><h2>Synthesis</h2><p class="error">The synthesis failed: ${s.error ?? 'unknown error'}</p>${confidenceBlock(d)}${retry}${synthesisAttempts(d)}</section>`;
  const y = s.synthesis;
  return html`<section id="synthesis" class="card">
<h2>Synthesis</h2>
${synthesisAttempts(d)}
<h3>Recommendation</h3>
<p class="recommendation">${y.recommendation}</p>
${y.triggersToRevisit.length && kindOf(d) !== 'pipeline' ? html`<h3>Triggers to revisit</h3><ul>${y.triggersToRevisit.map((t) => html`<li>${t}</li>`)}</ul>` : ''}
${confidenceBlock(d)}${kindOf(d) !== 'debate' ? '' : html`<p class="dim">${modelConfidenceText(y.confidence.level, y.confidence.converged)}</p>`}
${y.minorityPositions.length ? html`<h3>Minority positions</h3>${y.minorityPositions.map((m) => html`<div class="minority"><p><span class="agent">${m.agent}</span>, round ${m.round}: ${m.argument}</p><p class="muted">Why it still matters: ${m.whyItMatters}</p></div>`)}` : ''}
${y.failedAgents.length ? html`<h3>Failed agents</h3><ul>${y.failedAgents.map((f) => html`<li><span class="agent">${f.agent}</span>: ${f.reason}</li>`)}</ul>` : ''}
</section>`;
}

function constraintSection(d: StoredDebate): Html {
  const view = constraintsView(d);
  if (!view) return html``;
  return html`<section id="stated-constraints" class="card">
<h2>Constraints and trade-offs</h2>
<p class="muted">Merged from what the agents stated, as the ${view.stage} was given them (the user's first).</p>
<ul>${view.constraints.map((c) => html`<li>${constraintText(c)}</li>`)}</ul>
${view.collisions.length ? html`<h3>Conflicts</h3><ul class="conflicts">${view.collisions.map((c) => html`<li><strong>${c.id}</strong> ${collisionText(c)}${c.userBinding ? ` (${userWords(c)})` : ''}<br><span class="${c.resolution ? 'muted' : 'error'}">${c.resolution ? `Resolved: ${c.resolution}` : 'The synthesis did not say how it resolves this.'}</span></li>`)}</ul>` : ''}
${view.tradeOffs.length ? html`<h3>Trade-offs</h3><ul>${view.tradeOffs.map((t) => html`<li>${t.agentId}: ${t.tradeOff}</li>`)}</ul>` : ''}
</section>`;
}

function tensionSection(d: StoredDebate): Html {
  const t = d.tensions;
  if (!t) return html``;
  const m = t.map;
  const tensions = m?.tensions ?? t.tensions;
  return html`<section id="tensions">
<h2>Tension map</h2>
${m ? html`<p><strong>${m.synthesis.headline}</strong></p>` : html`<p class="error">${t.status === 'failed' ? 'The map failed' : 'The map is incomplete'}: ${t.error ?? 'the debate stopped before the map was drawn'}</p>`}
${m?.review.flagged ? html`<div class="flagged"><strong>⚑ Flagged for human review.</strong><ul>${m.review.reasons.map((r) => html`<li>${r.detail}</li>`)}</ul></div>` : ''}
${
  tensions.length
    ? html`<table class="tensions"><thead><tr><th>id</th><th class="num">severity</th><th>type</th><th>agents</th><th>claims</th><th>load-bearing</th><th>resolvable</th><th>how it stands</th></tr></thead><tbody>${tensions.map(
        (x) => html`<tr class="tension-${x.type}"><td>${x.id}</td><td class="num">${x.severity}</td><td>${x.type}</td><td class="nowrap">${x.agentA} ↔ ${x.agentB}</td><td><p><span class="agent">${x.agentA}</span>: ${x.claimA}</p><p><span class="agent">${x.agentB}</span>: ${x.claimB}</p><p class="muted">Weigh it: ${x.recommendation}</p></td><td>${x.loadBearing ? 'yes' : 'no'}</td><td>${x.resolvable ? 'yes' : 'no'}</td><td>${resolutionText(x)}</td></tr>`,
      )}</tbody></table>`
    : html`<p class="muted">No tensions were found between the agents' claims.</p>`
}
${m && malformedClashesOf(m.review) ? html`<p class="error">${malformedClashesOf(m.review)} clash${malformedClashesOf(m.review) === 1 ? ' was' : 'es were'} dropped as malformed: the map model named claims that could not be read, even after a repair.</p>` : ''}
${
  t.exchange
    ? html`<h3>Targeted exchange on ${t.exchange.tensionId} (${t.exchange.outcome})</h3>
<p>${t.exchange.question}</p><p class="muted">Why it fired: ${t.exchange.reason}.</p>
${t.exchange.turns.map((turn) =>
  turn.reply
    ? html`<div class="exchange"><p><span class="agent">${turn.agentId}</span> ${turn.reply.stance} (confidence ${fixed(turn.reply.confidence)}): ${turn.reply.response}</p><p class="muted">Now holds: ${turn.reply.revisedClaim}</p></div>`
    : html`<div class="exchange"><p><span class="agent">${turn.agentId}</span>: no usable answer (${turn.error ?? 'failed'}).</p></div>`,
)}`
    : ''
}
${m && m.consensus.length ? html`<h3>Consensus</h3><ul>${m.consensus.map((z) => html`<li>${z.claim} <span class="muted">(${z.supportingAgents.join(', ')}; confidence ${fixed(z.confidence)}${z.loadBearing ? ', load-bearing' : ''})</span></li>`)}</ul>` : ''}
${m && m.synthesis.openQuestions.length ? html`<h3>Open questions</h3><ul>${m.synthesis.openQuestions.map((q) => html`<li>${q}</li>`)}</ul>` : ''}
</section>`;
}

/** A tournament's bracket and verdicts, or a decomposition's sub-questions and parts (docs/protocols.md). */
/** A pipeline's phases in order: who took part in each, and what each wrote (the lead's plan, the analysts' and reviewers' observations). */
function phasesSection(d: StoredDebate): Html {
  const steps = (d.steps ?? []).map((s) => s.step);
  const phases = steps.filter((s) => s.kind === 'phase');
  const written = steps.filter((s) => s.kind === 'observations');
  if (phases.length === 0) return html``;
  return html`<section id="phases"><h2>Phases</h2>${phases.map(
    (ph) => html`<section class="phase" data-phase="${ph.phase}"><h3>${ph.phase === 'plan' ? 'Plan' : ph.phase === 'review' ? 'Review' : 'Filter'}: ${ph.agents.map((a) => `${a.id} (${a.role})`).join(', ')}</h3>
${written
  .filter((o) => o.phase === ph.phase)
  .map(
    (o) => html`<div class="observations" data-agent="${o.agentId}"><p><span class="agent">${o.agentId}</span> (${o.role})${o.status !== 'ok' ? html` <span class="error">${o.status}: ${o.error ?? ''}</span>` : ''}${o.phase === 'review' && !o.withPlan ? html` <span class="muted">without a plan</span>` : ''}</p>
${o.summary ? html`<p>${o.summary}</p>` : ''}
${o.observations.length ? html`<ul>${o.observations.map((x) => html`<li>${x.blocking ? html`<strong>blocking</strong> ` : ''}${x.text}${x.evidence ? html` <span class="muted">(${x.evidence})</span>` : ''}</li>`)}</ul>` : ''}</div>`,
  )}${ph.phase === 'final' && !written.some((o) => o.phase === 'final') ? html`<p class="muted">It wrote the <a href="#review-report">review report</a> from the plan and the observations above.</p>` : ''}</section>`,
  )}</section>`;
}

function protocolSection(d: StoredDebate): Html {
  // The advocates' effect read from the stances as every view reads them.
  const steps = readSteps(d).map((s) => s.step);
  const brackets = steps.filter((s) => s.kind === 'bracket');
  const verdicts = steps.filter((s) => s.kind === 'verdict');
  const champion = steps.find((s) => s.kind === 'champion');
  const split = steps.find((s) => s.kind === 'split');
  const parts = steps.filter((s) => s.kind === 'subanswer');
  const rotation = steps.find((s) => s.kind === 'synthesizer');
  const out: Html[] = [];
  if (rotation) out.push(html`<p class="muted">Synthesizer <code>${rotation.model}</code>, rotation turn ${rotation.turn + 1} over ${rotation.candidates.join(', ')}${rotation.panelAgents.length ? ` (it also debated as ${rotation.panelAgents.join(', ')})` : ''}.</p>`);
  if (brackets.length) {
    out.push(html`<section id="bracket"><h2>Bracket</h2>
<p>Seeding by round-0 confidence: ${brackets[0]!.seeding.join(', ')}${champion ? html` · champion <strong>${champion.agentId}</strong>${champion.runnerUp ? `, runner-up ${champion.runnerUp}` : ''}` : ''}</p>
<table class="bracket"><thead><tr><th>round</th><th>match</th><th>winner</th><th>decided by</th><th>reasons</th></tr></thead><tbody>${brackets.flatMap((b) =>
      b.pairings.map((p) => {
        const v = verdicts.find((x) => x.round === b.round && x.a === p.a && x.b === p.b);
        return p.b === null
          ? html`<tr><td class="num">${b.round}</td><td>${p.a}</td><td>${p.a}</td><td>bye</td><td></td></tr>`
          : html`<tr><td class="num">${b.round}</td><td>${p.a} vs ${p.b}</td><td>${v?.winner ?? '-'}</td><td>${v?.decidedBy ?? 'not played'}</td><td>${(v?.reasons ?? []).join('; ')}</td></tr>`;
      }),
    )}</tbody></table></section>`);
  }
  const advocates = steps.filter((s) => s.kind === 'advocate').sort((a, b) => a.round - b.round);
  if (advocates.length) {
    out.push(html`<section id="advocate"><h2>Devil's advocate</h2>
<p class="muted">Each advocate's turn is left out of the convergence score.</p>
<table class="advocate"><thead><tr><th class="num">round</th><th>advocate</th><th>against</th><th>raised</th><th>after it</th></tr></thead><tbody>${advocates.map(
      (a) => html`<tr><td class="num">${a.round}</td><td>${a.agentId}</td><td>${a.against ?? 'no clear majority'}</td><td>${a.raised ?? 'no usable turn'}</td><td>${advocateEffect(a)}</td></tr>`,
    )}</tbody></table></section>`);
  }
  const motion = lastOf(steps, 'motion');
  if (motion) {
    const ruling = lastOf(steps, 'ruling');
    const r = ruling?.ruling;
    out.push(html`<section id="oxford"><h2>Oxford debate</h2>
<p><strong>Motion:</strong> ${motion.motion}</p>
<p>${sidesText(motion)}</p>
<p><strong>Verdict:</strong> ${ruling ? verdictText(ruling) : 'none recorded'}</p>
${r ? html`<ul>${r.reasons.map((x) => html`<li>${x}</li>`)}</ul>
<table class="ruling"><tbody><tr><th>decisive argument</th><td>${argumentText(r.decisive)}</td></tr><tr><th>the losing side's best point</th><td>${argumentText(r.losingBest)}</td></tr></tbody></table>` : ''}</section>`);
  }
  const fallbacks = fallbacksOf(d);
  if (fallbacks.length) {
    out.push(html`<section id="fallbacks"><h2>Fallback analyses</h2>
<p class="muted">Written by the orchestrator in the seats whose turn failed; not the agents' own.</p>
<table class="fallbacks"><thead><tr><th class="num">round</th><th>seat</th><th>its failure</th><th>written by</th><th class="num">confidence</th><th>fallback analysis</th></tr></thead><tbody>${fallbacks.map(
      (f) => html`<tr><td class="num">${f.round}</td><td>${f.agentId}</td><td>${f.failure}</td><td>${f.model}</td><td class="num">${f.confidence === null ? '-' : f.confidence.toFixed(2)}</td><td>${f.status === 'ok' ? (f.position ?? '') : `failed too: ${f.error ?? ''}`}</td></tr>`,
      )}</tbody></table></section>`);
  }
  const { rounds: delphiRounds, result: delphiResult } = delphiOf(steps);
  if (delphiRounds.length || delphiResult) {
    out.push(html`<section id="delphi"><h2>Delphi rounds</h2>
<p class="muted">Each panelist read the others' answers without names, in a shuffled order of its own.</p>
${delphiResult ? html`<p>Result: <strong>${delphiResultText(delphiResult)}</strong> · stopped: ${delphiResult.stopped}</p>` : ''}
<table class="delphi"><thead><tr><th class="num">round</th><th>panel</th><th>spread</th><th>numbers</th></tr></thead><tbody>${delphiRounds.map(
      (r) => html`<tr><td class="num">${r.round}</td><td>${delphiRoundText(r)}</td><td>${spreadText(r.numeric, r.spread)}</td><td>${r.estimates.map((e) => `${e.agentId} ${e.estimate === null ? '-' : fmt(e.estimate)}`).join(', ')}</td></tr>`,
    )}</tbody></table></section>`);
  }
  const trajectory = steps.find((s) => s.kind === 'trajectory');
  if (trajectory) {
    out.push(html`<section id="trajectory"><h2>Decision by trajectory</h2>
<p>Chosen: ${trajectoryText(trajectory)}</p>
<table class="trajectory"><thead><tr><th>stance</th><th>summary</th><th class="num">Free-MAD score</th></tr></thead><tbody>${trajectory.scores.map(
      (x) => html`<tr><td>${x.stance}</td><td>${x.summary}</td><td class="num">${x.score}</td></tr>`,
    )}</tbody></table></section>`);
  }
  if (split) {
    out.push(html`<section id="decomposition"><h2>Decomposition by ${split.decomposer}</h2>
${split.notes.map((n) => html`<p class="muted">note: ${n}</p>`)}
<table class="decomposition"><thead><tr><th class="num">#</th><th>sub-question</th><th>after</th><th>agent</th><th>answer</th></tr></thead><tbody>${split.subQuestions.map((s) => {
      const part = parts.find((x) => x.index === s.index);
      return html`<tr><td class="num">${s.index}</td><td>${s.question}</td><td>${s.dependsOn.join(', ')}</td><td>${s.assignee}</td><td>${!part ? 'not reached' : part.status === 'ok' ? html`${part.fallback ? html`<em>${answeredBy(part)}:</em> ` : ''}${part.answer ?? ''}` : `${part.status}: ${part.reason ?? ''}`}</td></tr>`;
    })}</tbody></table></section>`);
  }
  const report = steps.find((s) => s.kind === 'report');
  if (report) {
    const row = (f: Finding) =>
      html`<tr class="${f.blocking ? 'blocking' : ''}"><td>${f.id}</td><td>${f.blocking ? 'blocking' : f.downgraded ? 'downgraded' : 'not blocking'}</td><td class="num">${f.confidence}</td><td>${f.text}</td><td>${f.raisedBy.join(', ')}</td><td>${f.evidence}</td></tr>`;
    const downgrades = steps.filter((s) => s.kind === 'downgrade');
    out.push(html`<section id="review-report"><h2>Review report by ${report.filter}</h2>
${report.status !== 'ok' ? html`<p>No report: ${report.error ?? ''}</p>` : ''}
${report.summary ? html`<p>${report.summary}</p>` : ''}
${report.artifact ? html`<h3>${report.artifact.title}</h3><pre class="artifact">${report.artifact.document}</pre>` : ''}
${report.findings.length ? html`<table class="findings"><thead><tr><th>id</th><th>blocking</th><th class="num">confidence</th><th>finding</th><th>raised by</th><th>evidence</th></tr></thead><tbody>${blockingFirst(report.findings).map(row)}</tbody></table>` : ''}
${downgrades.length ? html`<h3>Downgraded (blocking below confidence ${BLOCKING_CONFIDENCE})</h3><ul>${downgrades.map((g) => html`<li>${g.agentId}/${g.observationId} at confidence ${g.confidence}: ${g.text}</li>`)}</ul>` : ''}
</section>`);
  }
  return html`${out}`;
}

function votingSection(d: StoredDebate): Html {
  const v = d.voting;
  if (!v || v.iterations.length === 0) return html``;
  const debaters = d.agents.filter((a) => a.role === 'debater');
  return html`<section id="voting">
<h2>Cluster vote</h2>
${v.iterations.map((it) => {
  const cast = new Map(it.ballots.map((b) => [`${b.voterId}\u0000${b.artifactId}`, b]));
  return html`<h3>Iteration ${it.iteration}</h3>
<div class="scroll"><table class="votes"><thead><tr><th>voter</th>${it.artifacts.map((a, i) => html`<th title="${a.text}">#${i + 1} ${a.authorId}</th>`)}</tr></thead>
<tbody>${debaters.map(
    (voter) => html`<tr><th>${voter.id}${voter.cluster ? html` <span class="muted">(${voter.cluster})</span>` : ''}</th>${it.artifacts.map((a) => {
      const b = cast.get(`${voter.id}\u0000${a.artifactId}`);
      if (!b) return html`<td class="vote vote-none">${a.authorId === voter.id ? '·' : ''}</td>`;
      return html`<td class="vote vote-${b.vote}" title="${b.reason ?? b.error ?? ''}">${b.vote}</td>`;
    })}</tr>`,
  )}</tbody></table></div>
<details><summary>positions voted on</summary><ol>${it.artifacts.map((a) => html`<li><span class="agent">${a.authorId}</span> (${a.origin}): ${a.text}</li>`)}</ol></details>
${
  it.tiers.length
    ? html`<table class="tiers"><thead><tr><th class="num">rank</th><th>tier</th><th>position of</th><th>approved by</th><th class="num">ρ</th><th class="num">score</th><th class="num">yes/no/abstain</th></tr></thead><tbody>${it.tiers.map(
        (t) => html`<tr class="tier-${t.tier}"><td class="num">${t.rank}</td><td>${t.tier}</td><td>${it.artifacts.find((a) => a.artifactId === t.artifactId)?.authorId ?? t.artifactId}</td><td>${t.approvalSet.join(', ') || 'no cluster'}${abstainingClusters(t).length > 0 ? ` · ${abstainingClusters(t).join(', ')} abstained` : ''}</td><td class="num">${fixed(t.agreementRatio)}</td><td class="num">${fixed(t.score)}</td><td class="num">${t.yes}/${t.no}/${t.abstentions}</td></tr>`,
      )}</tbody></table>`
    : ''
}`;
})}
</section>`;
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? 'null';
}

/** The most of one call's prompt, thinking or reply a page shows; the whole text stays in the JSON document. */
export const PAGE_TEXT_LIMIT = 100_000;

/**
 * A long text cut for the page, with what was left out and where it is whole. A record can hold
 * replies of any size (one from someone else too): rendered whole, a record of a few hundred
 * megabytes held the viewer for seconds per request and took gigabytes of memory.
 */
function clipped(text: string, debateId: string, limit = PAGE_TEXT_LIMIT): Html | string {
  if (text.length <= limit) return text;
  // Cut at a whole character: a lone surrogate half would show as a replacement box.
  const end = /[\ud800-\udbff]/.test(text[limit - 1] ?? '') ? limit - 1 : limit;
  return html`${text.slice(0, end)}<span class="muted clipped">… ${formatNumber(text.length - end)} more characters, left off this page: the whole text is in <a href="/api/debates/${debateId}">the debate's JSON document</a>.</span>`;
}

export function callRows(c: StoredCall, debateStart: number): Html {
  const m = c.metrics;
  return html`<tr class="call call-${c.status}" data-call-id="${c.id}">
<td class="num">${c.id}</td><td>${c.stage}</td><td>${placeText(c.stage, c.round)}</td><td>${c.agentId}</td><td><code>${c.model}</code></td><td class="num">${c.attempt}</td>
<td><span class="status status-${c.status}">${c.status === 'aborted' ? 'cancelled' : c.status}</span></td>
<td class="num">${m.promptTokens ?? '-'}</td><td class="num">${m.completionTokens ?? '-'}</td>
<td class="num">${formatSeconds(m.loadDurationNs)}</td><td class="num">${formatSeconds(m.totalDurationNs)}</td>
<td class="num">+${((c.startedAt - debateStart) / 1000).toFixed(1)} s</td>
</tr>
<tr class="call-detail" data-call-detail="${c.id}"><td colspan="12"><details><summary>messages, reply and parsed JSON of call ${c.id}</summary>
<p class="muted served">served by <code>${c.host}</code> (${apiName(c.api)} API)</p>
${c.error ? html`<p class="error">${c.error}</p>` : ''}${c.validationError ? html`<p class="error">validation: ${c.validationError}</p>` : ''}${c.truncation ? html`<p class="muted">context: ${c.truncation}</p>` : ''}
${c.normalized?.length ? html`<h4>normalized by the engine</h4><ul>${c.normalized.map((n) => html`<li>${n}</li>`)}</ul>` : ''}
${c.messages.map((msg) => html`<h4>${msg.role}</h4><pre>${clipped(msg.content, c.debateId)}</pre>`)}
${c.thinking ? html`<details class="thinking"><summary>thinking: ${formatNumber(c.thinkingTokens ?? 0)} tokens${c.think === undefined ? '' : ` (think: ${String(c.think)})`}</summary><pre class="thinking">${clipped(c.thinking, c.debateId)}</pre></details>` : ''}
<h4>${c.partial ? 'partial reply (the stream broke before it finished)' : 'raw reply'}</h4><pre class="raw${c.partial ? ' partial' : ''}">${clipped(c.raw, c.debateId)}</pre>
<h4>parsed</h4><pre>${json(c.parsed)}</pre>
<h4>options</h4><pre>${json(c.options)}</pre>
</details></td></tr>`;
}

const CALL_HEADERS = ['#', 'stage', 'place', 'agent', 'model', 'attempt', 'status', 'prompt tok.', 'reply tok.', 'load', 'total', 'started'];

function callsTable(d: StoredDebate): Html {
  return html`<div class="scroll"><table class="calls" id="calls">
<thead><tr>${CALL_HEADERS.map((h, i) => html`<th${i === 0 || i >= 7 || i === 5 ? html` class="num"` : ''}>${h}</th>`)}</tr></thead>
<tbody>${d.calls.map((c) => callRows(c, d.createdAt))}</tbody>
</table></div>`;
}

function exitLine(d: StoredDebate, detail: string | null): Html {
  if (d.status === 'running') return html`<p id="exit" class="muted">Running: the page follows the debate as calls are recorded.</p>`;
  // The reason in words, as the live view said it; the detail only when it adds something.
  const reason = d.exitReason ? exitText(d.exitReason) : 'none';
  const more = detail && detail !== d.exitReason && detail !== reason ? detail : null;
  return html`<p id="exit"><strong>Exit:</strong> <span class="exit-reason">${reason}</span>${more ? html` (${more})` : ''}${d.error ? html` <span class="error">${d.error}</span>` : ''}</p>`;
}

function planSection(plan: unknown): Html {
  if (!plan) return html`<p class="muted" id="plan">No plan recorded.</p>`;
  const p = plan as Partial<SchedulePlan>;
  const raw = html`<details><summary>The plan as recorded (JSON)</summary><pre>${json(plan)}</pre></details>`;
  if (!Array.isArray(p.models) || !Array.isArray(p.hosts)) return html`<div id="plan">${raw}</div>`;
  return html`<div id="plan">
<ul>${p.hosts.map((h) => html`<li>Host <code>${h.url}</code>: ${plannedHostText(h)}</li>`)}</ul>
<table class="plan"><thead><tr><th>model</th><th class="num">num_ctx</th><th class="num">VRAM need</th><th class="num">calls in flight</th><th>hosts</th></tr></thead>
<tbody>${p.models.map((m) => html`<tr><td><code>${m.model}</code></td><td class="num">${m.numCtx}</td><td class="num">${(m.vramBytes / 1e9).toFixed(1)} GB</td><td class="num">${m.slots}</td><td>${m.hosts.join(', ')}</td></tr>`)}</tbody></table>
${Array.isArray(p.groups) ? html`<p>Panel groups per round: ${p.groups.map((g) => g.join(' + ')).join(', then ')}${p.allResident ? '; every model stays loaded' : ''}.</p>` : ''}
${Array.isArray(p.warnings) && p.warnings.length ? html`<ul class="warnings">${p.warnings.map((w) => html`<li>warning: ${w}</li>`)}</ul>` : ''}
${raw}
</div>`;
}

/** The quality rating of every agent result (docs/quality.md); nothing for debates recorded before them. */
function qualitySection(d: StoredDebate): Html | string {
  const ratings = d.quality ?? [];
  if (ratings.length === 0) return '';
  return html`<h2>Quality</h2>
<div class="scroll"><table class="quality" id="quality">
<thead><tr><th>agent</th><th>result</th><th>try</th><th class="num">score</th><th>action</th><th>reasons</th></tr></thead>
<tbody>${ratings.map(
    (q) => html`<tr class="quality-${q.action.toLowerCase()}"><td><span class="agent">${q.agentId}</span></td><td>${q.stage} ${q.round}</td><td>${q.try === 0 ? 'first' : 'retry'}</td><td class="num">${q.score}</td><td>${q.action}</td><td>${q.reasons.join('; ')}</td></tr>`,
  )}</tbody>
</table></div>`;
}

/** The attached files (each readable whole, as the panel had it) and the token budget's use and decisions; nothing when the run had neither. */
function materialSection(d: StoredDebate): Html | string {
  const files = d.attachments ?? [];
  const b = budgetSummary(d);
  const decisions = d.budgetDecisions ?? [];
  if (files.length === 0 && b.limit === null) return '';
  const attached = files.length
    ? html`<h2>Attached material</h2>
<ul class="attachments" id="attachments">${files.map(
        (f) => html`<li><details><summary><code>${f.name}</code> · ${formatNumber(f.bytes)} bytes · sha256 <code>${f.sha256.slice(0, 12)}…</code></summary><pre>${clipped(f.content, d.id, FILE_LIMITS.attachment)}</pre></details></li>`,
      )}</ul>
<p>${plural(d.calls.filter((c) => c.material?.length).length, 'agent call')} read it; what each read is in its prompt below.</p>`
    : '';
  const budget =
    b.limit === null
      ? ''
      : html`<h2>Token budget</h2>
<p id="budget">${formatNumber(b.used)} of ${formatNumber(b.limit)} tokens (${Math.round((b.used / b.limit) * 100)}%) in ${plural(b.calls, 'call')}${b.cutShort ? html` · <strong>cut short</strong>: ${b.cutShort}` : ''}.</p>
${decisions.length ? html`<ul class="budget-decisions">${decisions.map((x) => html`<li>${x.kind}: ${x.detail}${/ of [\d,]+ (used|tokens)/.test(x.detail) ? '' : ` (${formatNumber(x.used)} of ${formatNumber(x.limit)} used)`}</li>`)}</ul>` : ''}`;
  return html`${attached}${budget}`;
}

/** One strip per agent: its stance in each judged round, marked when it joined, left or moved; the families above. */
function stanceStrip(d: StoredDebate): Html | string {
  const p = panelOf(d);
  if (!p) return '';
  const agents = p.families?.map((f) => f.agentId) ?? [...new Set(p.rounds.flatMap((r) => r.agents.map((a) => a.agentId)))];
  const f = p.figures;
  return html`<section id="stances" class="card">
<h3>Stances</h3>
${p.families ? html`<p>Families: ${familiesText(p.families)}</p>` : ''}
${f && f.stancesAtStart !== null ? html`<p>${plural(f.stancesAtStart, 'stance')} at round 0 (effective ${fixed(f.effectivePositions)}) → ${f.stancesAtEnd} at the end${f.majorityAdoption !== null ? html` · majority adoption ${f.joinedMajority.length}/${f.outsideMajority.length}` : ''}</p>` : ''}
${p.rounds.length
  ? html`<table class="stance-strips"><thead><tr><th>agent</th>${p.rounds.map((r) => html`<th>round ${r.round}</th>`)}</tr></thead><tbody>${agents.map(
      (id) => html`<tr data-agent="${id}"><th><span class="agent">${id}</span></th>${p.rounds.map((r) => {
        const a = r.agents.find((x) => x.agentId === id);
        const s = a?.stance ? r.stances.find((x) => x.id === a.stance) : undefined;
        return a?.stance
          ? html`<td class="stance move-${a.move}" title="${s?.summary ?? ''}">${a.stance} <span class="muted">${a.move === 'opened' || a.move === 'held' ? '' : MOVE_WORD[a.move]}${a.reasoned === false ? ', no reason stated' : ''}</span></td>`
          : html`<td class="stance move-absent">–</td>`;
      })}</tr>`,
    )}</tbody></table>`
  : ''}
</section>`;
}

/** Each time the debate was resumed, as `show` lists them: when, on which host, from where, and what it reused. */
function resumptionList(d: StoredDebate): Html {
  const list = d.resumptions ?? [];
  if (list.length === 0) return html``;
  return html`<ul class="resumptions" id="resumptions">${list.map(
    (r) =>
      html`<li>Resumed ${formatTime(r.at)} on <code>${r.host}</code>, ${r.fromRound < 0 ? 'from the start' : `after round ${r.fromRound}`} (calls 1–${r.callsBefore} were recorded before)${(r.reused ?? []).length ? html`; reused without asking again: ${(r.reused ?? []).map((t) => `${t.agentId} in round ${t.round} (call ${t.call})`).join(', ')}` : ''}</li>`,
  )}</ul>`;
}

export function debatePage(d: StoredDebate, exitDetail: string | null): string {
  const p = d.preset.protocol;
  const kind = p.kind ?? 'debate';
  const constraints = d.preset.constraints ?? [];
  // Each protocol's page shows what it produced, in its own terms, and no section that does not apply.
  const shape =
    kind === 'debate'
      ? html` · max ${plural(p.maxRounds, 'critique round')} · threshold ${p.convergenceThreshold} · ${plural(d.roundsCompleted, 'round')} held · final convergence ${fixed(d.finalConvergence)}`
      : kind === 'pipeline'
        ? html` · roles ${d.preset.agents.map((a) => `${a.id} (${a.role ?? 'reviewer'})`).join(', ')} · filter mode ${p.filterMode ?? 'list'}`
        : '';
  const body = html`<h1 id="question">${d.question}</h1>
${constraints.length ? html`<ul class="constraints" id="constraints">${constraints.map((c) => html`<li>Constraint: ${c}</li>`)}</ul>` : ''}
<p class="facts"><span class="status status-${d.status}" id="status">${d.status}</span>
· preset <strong>${d.presetName}</strong>${kind !== 'debate' ? html` · protocol <strong>${kind}</strong>` : ''}${shape}
· started ${formatTime(d.createdAt)}${d.finishedAt ? html` · finished ${formatTime(d.finishedAt)}` : ''}
· host <code>${d.host}</code> · engine ${d.engineVersion} · id <code class="id">${d.id}</code>
· <a href="/api/debates/${encodeURIComponent(d.id)}">JSON</a></p>
${resumptionList(d)}
${adviceOf(d) ? html`<p class="advice" id="advice">Protocol chosen by the advisor: ${adviceLine(adviceOf(d)!)}</p>` : ''}
${exitLine(d, exitDetail)}
<ol id="live-log" class="live-log"></ol>
${kind === 'debate' || kind === 'parallel' ? synthesisCard(d) : ''}
<h2>Panel</h2>
${panel(d)}
${stanceStrip(d)}
<details><summary>Preset as run (hash <code>${d.presetHash.slice(0, 12)}</code>)</summary><pre>${json(d.preset)}</pre></details>
${kind === 'debate' || kind === 'parallel' ? html`<h2>${kind === 'parallel' ? 'Answers' : 'Rounds'}</h2>
${grid(d)}` : ''}
${kind === 'debate' ? html`<h2>Judge</h2>
${judgeChart(d)}` : ''}
${kind === 'pipeline' ? phasesSection(d) : ''}
${protocolSection(d)}
${constraintSection(d)}
${tensionSection(d)}
${votingSection(d)}
${kind === 'debate' || kind === 'parallel' ? '' : synthesisCard(d)}
${materialSection(d)}
${qualitySection(d)}
<h2>Calls</h2>
${callsTable(d)}
<h2>Schedule plan</h2>
${planSection(d.plan)}`;
  return page({ title: clipText(d.question, 80), body, data: { page: 'debate', debate: d.id, status: d.status, start: String(d.createdAt) } });
}
