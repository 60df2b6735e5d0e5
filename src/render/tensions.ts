import type { DebateEvent } from '../engine/events.js';
import { clip } from '../protocol/clip.js';
import type { Round2Decision, Tension, TargetedExchange, TensionMap, TensionUpdate } from '../protocol/tensions.js';
import { bySeverity, malformedClashesOf, resolutionText, round2Decision, round2Defaults } from '../protocol/tension-order.js';
import type { StoredDebate } from '../store/store.js';
import type { StoredTensionMap } from '../store/tensions.js';
import type { Paint } from './style.js';
import { plural } from '../plural.js';

/**
 * How the tension map shows: live and in replays (from its events), on the card,
 * in `show` (Markdown) and in the JSON document (from the stored record).
 */

const STANCE_TEXT = { maintain: 'maintains', narrow: 'narrows', concede: 'concedes' } as const;
const OUTCOME_TEXT = { resolved: 'resolved', narrowed: 'narrowed, not resolved', unresolved: 'not resolved' } as const;

function tags(t: Tension): string {
  const out = [t.loadBearing ? 'load-bearing' : 'not load-bearing', t.resolvable ? 'resolvable' : 'judgement call'];
  if (t.resolution !== 'open') out.push(resolutionText(t));
  return out.join(', ');
}

function tensionHead(t: Tension): string {
  return `${t.id.padEnd(3)} ${String(t.severity).padStart(2)} ${t.type.padEnd(13)} ${t.agentA} ↔ ${t.agentB}`;
}

/** The live (and replayed) lines for one step of the tension stage. */
export function tensionLiveLines(update: TensionUpdate, paint: Paint, columns: number): string[] {
  const width = Math.max(40, columns - 10);
  const lines: string[] = [];
  switch (update.step) {
    case 'claims': {
      lines.push(
        paint('bold', '\nTension map') +
          paint('dim', ` · ${plural(update.agents.length, 'agent')} · ${plural(update.claims.length, 'load-bearing claim')} · ${plural(update.pairs, 'pair')} in ${update.clashCalls} clash call${update.clashCalls === 1 ? '' : 's'}`),
      );
      const counts = update.agents.map((a) => `${a} ${update.claims.filter((c) => c.agentId === a).length}`).join(' · ');
      if (counts) lines.push(`  ${paint('dim', 'claims:')} ${counts}`);
      for (const g of update.gaps) lines.push(paint('yellow', `  ! ${g}`));
      break;
    }
    case 'clashes': {
      for (const g of update.gaps) lines.push(paint('yellow', `  ! ${g}`));
      if (update.malformed) lines.push(paint('yellow', `  ! ${droppedText(update.malformed)}: the map model named claims that could not be read, even after a repair`));
      if (update.tensions.length === 0) lines.push(`  ${paint('dim', 'tensions:')} none found${update.malformed ? paint('yellow', ' (possible false consensus)') : ''}`);
      else lines.push(`  ${paint('bold', 'tensions')}, most severe first:`);
      for (const t of bySeverity(update.tensions)) {
        const colour = t.type === 'factual' ? 'red' : t.type === 'interpretive' ? 'yellow' : 'dim';
        lines.push(`    ${paint(colour, tensionHead(t))}  ${paint('dim', tags(t))}`);
        lines.push(`        ${paint('magenta', t.agentA)}: ${clip(t.claimA, width - t.agentA.length)}`);
        lines.push(`        ${paint('magenta', t.agentB)}: ${clip(t.claimB, width - t.agentB.length)}`);
      }
      if (update.decision) lines.push(round2Line(update.decision, paint));
      // A pipeline or a parallel run maps its round-0 answers too, and holds no critique round after.
      else if (update.tensions.length) lines.push(paint('dim', `  drawn on the round-${update.round ?? 0} answers; any critique round that follows shows each agent its open clashes`));
      break;
    }
    case 'settled': {
      const resolved = update.resolved.map((r) => `${r.id} (${r.by} conceded)`).join(', ');
      lines.push(
        `  ${paint('bold', 'clashes')} after round ${update.round}: ${resolved ? paint('green', `resolved ${resolved}`) : paint('dim', 'none resolved')}` +
          paint('dim', ` · open: ${update.open.length ? update.open.join(', ') : 'none'}`),
      );
      break;
    }
    case 'decision':
      lines.push(paint('bold', '\nTensions after the last round'));
      lines.push(round2Line(update.decision, paint));
      break;
    case 'targeted':
      lines.push(...exchangeLines(update.exchange, paint, width));
      break;
    case 'map': {
      const r = update.result;
      if (r.status === 'failed') {
        const few = /^claims came from (\d+) agents?; a map needs two or more$/.exec(r.error);
        const why = few ? `not drawn: claims came from only ${plural(Number(few[1]), 'agent')}, and a map compares two or more` : `failed: ${r.error}`;
        lines.push(paint('red', `  tension map ${why}`) + paint('dim', ' · the run goes on without it'));
        break;
      }
      const m = r.map;
      lines.push(`  ${paint('bold', 'map:')} ${m.synthesis.headline}`);
      lines.push(
        paint(
          'dim',
          `    ${m.consensus.length} consensus zone${m.consensus.length === 1 ? '' : 's'} · ${m.tensions.length} tension${m.tensions.length === 1 ? '' : 's'}${malformedClashesOf(m.review) ? ` · ${droppedText(malformedClashesOf(m.review))}` : ''} · ${m.synthesis.openQuestions.length} open question${m.synthesis.openQuestions.length === 1 ? '' : 's'} · pairs compared ${m.coverage.pairsCompared}/${m.coverage.pairsTotal}`,
        ),
      );
      if (m.review.flagged) lines.push(paint('yellow', `  ⚑ flagged for human review: ${m.review.reasons.map((x) => x.detail).join('; ')}`));
      break;
    }
  }
  return lines;
}

function round2Line(d: Round2Decision, paint: Paint): string {
  if (d.fire && d.target) {
    return `  ${paint('bold', 'Targeted exchange')}: ${d.reason}; re-asking only ${d.target.agentA} and ${d.target.agentB} about ${d.target.id}`;
  }
  return `  ${paint('dim', `Targeted exchange: not needed (${d.reason})`)}`;
}

function exchangeLines(x: TargetedExchange, paint: Paint, width: number): string[] {
  const lines = [paint('bold', `  Targeted exchange · ${x.tensionId}`) + paint('dim', ` · ${x.agents.join(' and ')}, each shown the other's claim`)];
  for (const turn of x.turns) {
    if (turn.reply) {
      lines.push(`    ${paint('magenta', turn.agentId)} ${paint('dim', `(${STANCE_TEXT[turn.reply.stance]}, confidence ${turn.reply.confidence.toFixed(2)})`)}: ${clip(turn.reply.response, width)}`);
      lines.push(`      ${paint('dim', 'now holds:')} ${clip(turn.reply.revisedClaim, width - 10)}`);
    } else {
      lines.push(paint('red', `    ${turn.agentId}: no usable answer (${turn.error ?? 'failed'})`));
    }
  }
  lines.push(`    → ${x.outcome === 'resolved' ? paint('green', OUTCOME_TEXT[x.outcome]) : paint('yellow', OUTCOME_TEXT[x.outcome])}`);
  return lines;
}

/** A listener piece for the live renderer: the lines to print for an event, if it is one of ours. */
export function tensionLiveView(paint: Paint, columns: number): (event: DebateEvent) => string[] {
  return (event) => (event.type === 'tensions.update' ? tensionLiveLines(event.update, paint, columns) : []);
}

/** The critique rounds after the clashes were mapped, in which they were settled. */
function settledRounds(d: StoredDebate, t: StoredTensionMap): number[] {
  const from = t.earlyRound ?? 0;
  return d.rounds.map((r) => r.round).filter((r) => r > from);
}

/**
 * The stored map as the stage reported it, step by step, for replays. Each event carries the
 * round after whose judgement it happened (a debate maps its clashes after round 0 and settles
 * them after each critique round), or null for the steps after the last round.
 */
export function tensionEvents(d: StoredDebate): { after: number | null; event: DebateEvent }[] {
  const t = d.tensions;
  if (!t) return [];
  const at = t.generatedAt ?? d.finishedAt ?? d.createdAt;
  const spec = d.preset.tensions;
  const perCall = spec?.pairsPerCall ?? 5;
  const pairs = (t.agents.length * (t.agents.length - 1)) / 2;
  const updates: TensionUpdate[] = [];
  const claimGaps = t.gaps.filter((g) => g.startsWith('no claims'));
  updates.push({ step: 'claims', agents: t.agents, claims: t.claims, gaps: claimGaps, answerTokens: t.review?.answerTokens ?? 0, pairs, clashCalls: Math.ceil(pairs / perCall), ...(t.earlyRound === null ? {} : { round: t.earlyRound }) });
  const early = t.earlyRound !== null && d.rounds.some((r) => r.round > t.earlyRound!);
  if (t.agents.length >= 2 && (t.tensions.length > 0 || t.status !== 'incomplete')) {
    const asDetected = t.tensions.map((x) => ({ ...x, resolution: 'open' as const, resolvedInRound: null, concededBy: null }));
    const openNow = t.tensions.map((x) => (x.resolvedInRound ? x : { ...x, resolution: 'open' as const }));
    let decision: Round2Decision =
      spec?.round2.enabled === false
        ? { fire: false, qualifying: [], target: null, reason: 'the targeted exchange is switched off in the preset' }
        : round2Decision(openNow, spec?.round2 ?? round2Defaults);
    if (t.exchange) {
      const target = asDetected.find((x) => x.id === t.exchange!.tensionId) ?? null;
      decision = { ...decision, fire: true, target, reason: t.exchange.reason };
    }
    const gaps = t.gaps.filter((g) => !g.startsWith('no claims'));
    if (early) {
      updates.push({ step: 'clashes', tensions: asDetected, gaps, decision: null, round: t.earlyRound ?? 0 });
      for (const round of settledRounds(d, t)) {
        const resolved = t.tensions.filter((x) => x.resolvedInRound === round).map((x) => ({ id: x.id, by: x.concededBy ?? '?' }));
        const open = t.tensions.filter((x) => !(x.resolvedInRound && x.resolvedInRound <= round)).map((x) => x.id);
        updates.push({ step: 'settled', round, resolved, open });
      }
      if (t.status !== 'incomplete' || t.exchange) updates.push({ step: 'decision', decision });
    } else {
      updates.push({ step: 'clashes', tensions: asDetected, gaps, decision });
    }
  }
  if (t.exchange) updates.push({ step: 'targeted', exchange: t.exchange });
  if (t.status === 'ok' && t.map) updates.push({ step: 'map', result: { status: 'ok', map: t.map } });
  if (t.status === 'failed') updates.push({ step: 'map', result: { status: 'failed', error: t.error ?? 'unknown error', gaps: t.gaps } });
  return updates.map((update) => ({
    after: update.step === 'settled' ? update.round : update.step === 'clashes' && early ? (update.round ?? 0) : update.step === 'claims' && early ? (t.earlyRound ?? 0) : null,
    event: { type: 'tensions.update', update, at },
  }));
}

/** The card's TENSION MAP section: headline, flag, tensions by severity with both claims, the targeted exchange, agreement. */
export function tensionCardLines(d: StoredDebate, paint: Paint, width: number, wrap: (text: string, width: number) => string[]): string[] {
  const t = d.tensions;
  if (!t) return [];
  const lines: string[] = [];
  const para = (text: string, indent: string, style?: Parameters<Paint>[0]): void => {
    // A bullet's continuation lines hang under its text, not under the dash.
    const hang = text.startsWith('- ') ? `${indent}  ` : indent;
    wrap(text, width - hang.length).forEach((l, i) => lines.push(`${i === 0 ? indent : hang}${style ? paint(style, l) : l}`));
  };
  const m = t.map;
  if (!m) {
    lines.push('', paint('bold', t.status === 'failed' ? 'TENSION MAP FAILED' : 'TENSION MAP INCOMPLETE'));
    para(failureText(d, t), '  ', 'red');
    if (t.tensions.length) {
      lines.push(`  Clashes found before it stopped (${t.tensions.length}):`);
      for (const x of t.tensions) tensionCardEntry(x, lines, para, paint);
    }
    return lines;
  }
  const r2 = m.round2Target ? `; targeted exchange on ${m.round2Target.tensionId}: ${OUTCOME_TEXT[m.round2Target.outcome]}` : '';
  const settled = m.tensions.filter((x) => x.resolvedInRound).length;
  const inRounds = settled ? `; ${settled} resolved in the critique rounds` : '';
  const malformed = malformedClashesOf(m.review);
  const dropped = malformed ? `, ${droppedText(malformed)}` : '';
  lines.push('', paint('bold', `TENSION MAP (${m.tensions.length} tension${m.tensions.length === 1 ? '' : 's'}${dropped}, ${m.consensus.length} consensus zone${m.consensus.length === 1 ? '' : 's'}${inRounds}${r2})`));
  para(timingText(d, t, m), '  ', 'dim');
  para(m.synthesis.headline, '  ');
  if (m.review.flagged) {
    lines.push(paint('yellow', '  ⚑ FLAGGED FOR HUMAN REVIEW'));
    for (const reason of m.review.reasons) para(`- ${reason.detail}`, '    ', 'yellow');
  }
  for (const x of m.tensions) tensionCardEntry(x, lines, para, paint);
  if (m.consensus.length) {
    lines.push('  Agreed:');
    for (const z of m.consensus) para(`- ${z.claim} (${z.supportingAgents.join(', ')}; confidence ${z.confidence.toFixed(2)}${z.loadBearing ? ', load-bearing' : ''})`, '    ');
  }
  if (m.synthesis.openQuestions.length) {
    lines.push('  Open questions:');
    for (const q of m.synthesis.openQuestions) para(`- ${q}`, '    ');
  }
  const profile = Object.entries(m.synthesis.confidenceProfile).map(([a, v]) => `${a} ${v.toFixed(2)}`);
  if (profile.length) para(`${PROFILE_LABEL}: ${profile.join(' · ')}`, '  ', 'dim');
  return lines;
}

/**
 * What the map's per-agent confidence is: the map model's own reading of each agent's case,
 * which a reader would otherwise take for the agents' confidences of the last round.
 */
const PROFILE_LABEL = "Confidence per agent (the map model's rating of each agent's case, not the agent's own)";

/**
 * When the clashes were found and when the map was drawn, said alike on the card and in `show`:
 * a debate maps its clashes on the round-0 answers and draws the map after its last critique
 * round (and the targeted exchange, when one ran); the other protocols map their final answers.
 */
function timingText(d: StoredDebate, t: StoredTensionMap, m: TensionMap): string {
  const exchange = m.round2Target ? `the targeted exchange on ${m.round2Target.tensionId}` : null;
  if (t.earlyRound !== null && d.rounds.some((r) => r.round > t.earlyRound!)) {
    const last = Math.max(...d.rounds.map((r) => r.round));
    return `Clashes mapped on the round-${t.earlyRound} answers, before the first critique round; map drawn at the end, after ${plural(last, 'critique round')}${exchange ? ` and ${exchange}` : ''}.`;
  }
  const on = d.preset.protocol.kind === 'pipeline' ? 'the reviews' : 'the final answers';
  return `Clashes mapped on ${on}; map drawn ${exchange ? `after ${exchange}` : 'with no targeted exchange'}.`;
}

/**
 * Why no map was drawn, for a reader new to maps: the stage's error, and when too few agents gave
 * claims, which agents those were and who gave none (a skipped or failed answer leaves nothing to compare).
 */
function failureText(d: StoredDebate, t: StoredTensionMap): string {
  const error = t.error ?? 'the debate stopped before the map was drawn';
  // Fewer than two usable answers: no claims were asked for.
  const lone = /^(?:only (.+)|no agent) gave a usable answer; a map needs two or more$/.exec(error);
  if (!lone && !/^claims came from \d+ agents?; a map needs two or more$/.test(error)) return error;
  const mapped = d.preset.protocol.kind === 'pipeline' ? d.preset.agents.filter((a) => a.role === 'reviewer') : d.preset.agents;
  const gave = lone ? (lone[1] === undefined ? [] : [lone[1]]) : t.agents;
  const silent = mapped.map((a) => a.id).filter((id) => !gave.includes(id));
  const had = lone
    ? `${gave.length ? `only ${gave[0]} gave a usable answer` : 'no agent gave a usable answer'}, so no claims were asked for`
    : t.agents.length
      ? `only ${t.agents.join(' and ')} gave claims to compare`
      : 'no agent gave claims to compare';
  const unread = silent.filter((id) => t.gaps.some((g) => g.startsWith(`no claims from ${id} `)));
  const unanswered = silent.filter((id) => !unread.includes(id));
  const why = [
    ...(unanswered.length ? [`${unanswered.join(' and ')} gave no usable answer to take claims from`] : []),
    ...(unread.length ? [`the claims of ${unread.join(' and ')} could not be read`] : []),
  ];
  return `Not drawn: a tension map compares the claims of two or more agents, and ${had}${why.length ? ` (${why.join('; ')})` : ''}.`;
}

function tensionCardEntry(x: Tension, lines: string[], para: (text: string, indent: string, style?: Parameters<Paint>[0]) => void, paint: Paint): void {
  const colour = x.type === 'factual' ? 'red' : x.type === 'interpretive' ? 'yellow' : 'dim';
  lines.push(`  ${paint(colour, `${x.id} ${x.type} ${x.severity}/10`)} · ${x.agentA} ↔ ${x.agentB} · ${paint('dim', tags(x))}`);
  para(`${x.agentA}: ${x.claimA}`, '     ');
  para(`${x.agentB}: ${x.claimB}`, '     ');
  para(`Weigh it: ${x.recommendation}`, '     ', 'dim');
}

/** The `## Tension map` section of `show` and `export --format md`. */
export function tensionMarkdown(d: StoredDebate): string[] {
  const t = d.tensions;
  if (!t) return [];
  const out: string[] = ['## Tension map', ''];
  const m = t.map;
  if (!m) {
    out.push(`**${t.status === 'failed' ? 'The map failed' : 'The map is incomplete'}:** ${failureText(d, t)}`, '');
  } else {
    out.push(`**${m.synthesis.headline}**`, '');
    if (m.review.flagged) {
      out.push('> ⚑ **Flagged for human review.**');
      for (const r of m.review.reasons) out.push(`> - ${r.detail}`);
      out.push('');
    }
    out.push(
      `${timingText(d, t, m)} ${m.coverage.pairsCompared} of ${m.coverage.pairsTotal} agent pairs compared${malformedClashesOf(m.review) ? `; ${droppedText(malformedClashesOf(m.review))}` : ''}; answers about ${m.review.answerTokens} tokens; map format version ${m.version}.`,
      '',
    );
  }
  const tensions = m?.tensions ?? t.tensions;
  if (tensions.length) {
    out.push('### Tensions, most severe first', '', '| id | severity | type | agents | load-bearing | resolvable | how it stands |', '|---|---|---|---|---|---|---|');
    for (const x of tensions) {
      out.push(`| ${x.id} | ${x.severity} | ${x.type} | ${x.agentA} ↔ ${x.agentB} | ${x.loadBearing ? 'yes' : 'no'} | ${x.resolvable ? 'yes' : 'no'} | ${resolutionText(x)} |`);
    }
    out.push('');
    for (const x of tensions) {
      out.push(`- **${x.id}** ${x.agentA} [${x.claimAId}]: ${x.claimA}`, `  ${x.agentB} [${x.claimBId}]: ${x.claimB}`, `  _Weigh it:_ ${x.recommendation}`);
    }
    out.push('');
  } else if (m) {
    out.push('No tensions were found between the agents\' claims.', '');
  }
  if (t.exchange) {
    const x = t.exchange;
    out.push(`### Targeted exchange on ${x.tensionId} (${OUTCOME_TEXT[x.outcome]})`, '', `${x.question}`, '', `_Why it fired:_ ${x.reason}.`, '');
    for (const turn of x.turns) {
      if (turn.reply) {
        out.push(`**${turn.agentId}** ${STANCE_TEXT[turn.reply.stance]} (confidence ${turn.reply.confidence.toFixed(2)}). ${turn.reply.response}`, '', `> Now holds: ${turn.reply.revisedClaim}`, '');
      } else {
        out.push(`**${turn.agentId}**: no usable answer (${turn.error ?? 'failed'}).`, '');
      }
    }
  }
  if (m) {
    if (m.consensus.length) {
      out.push('### Consensus', '');
      for (const z of m.consensus) out.push(`- ${z.claim} (${z.supportingAgents.join(', ')}; confidence ${z.confidence.toFixed(2)}${z.loadBearing ? ', load-bearing' : ''})`);
      out.push('');
    }
    out.push('### Major findings', '', ...m.synthesis.majorFindings.map((f) => `- ${f}`), '');
    if (m.synthesis.openQuestions.length) out.push('### Open questions', '', ...m.synthesis.openQuestions.map((q) => `- ${q}`), '');
    const profile = Object.entries(m.synthesis.confidenceProfile);
    if (profile.length) out.push(`**${PROFILE_LABEL}:** ${profile.map(([a, v]) => `${a} ${v.toFixed(2)}`).join(', ')}`, '');
  }
  if (t.claims.length) {
    out.push('### Load-bearing claims', '');
    for (const c of t.claims) out.push(`- \`${c.id}\` ${c.agentId}: ${c.text}${c.source === 'answer' ? ' _(listed in the answer)_' : ''}`);
    out.push('');
  }
  if (t.gaps.length) out.push('### Not compared', '', ...t.gaps.map((g) => `- ${g}`), '');
  return out;
}

/** The `tensionMap` field of the JSON document; null when the debate drew no map. */
export function tensionDocument(d: StoredDebate): Record<string, unknown> | null {
  const t = d.tensions;
  if (!t) return null;
  return {
    status: t.status,
    error: t.error,
    /** The versioned map (format conclave.tension-map), when it was drawn. */
    map: t.map,
    /** As recorded, also when the map failed. */
    claims: t.claims,
    tensions: t.tensions,
    /** The targeted round with the exact prompts and the answers. */
    round2: t.exchange,
    gaps: t.gaps,
  };
}

/** How a view says that clashes were dropped because they could not be read: "2 clashes dropped as malformed". */
export function droppedText(count: number): string {
  return `${count} clash${count === 1 ? '' : 'es'} dropped as malformed`;
}
