import type { StoredDebate } from '../store/store.js';
import { confidenceNotes, confidenceOf, confidenceText, modelConfidenceText, restsOnText } from './confidence.js';
import { panelCardLines } from './panel.js';
import { inertDeep } from './inert.js';
import { withoutCallBodies } from './panel-record.js';
import { exitTextBeside } from './exit.js';
import { type TermStyle, painter, plainStyle } from './style.js';
import { adviceLine, adviceOf, kindOf, protocolCardLines, protocolFooter } from './protocols.js';
import { qualityCardLines } from './quality.js';
import { constraintCardLines } from './constraints.js';
import { tensionCardLines } from './tensions.js';
import { materialCardLines } from './material.js';
import { votingCardLines } from './voting.js';
import { debateSettingsLine } from '../protocol/anti-conformity.js';
import { fitText } from './wrap.js';

/** The final card a run prints on stdout: recommendation, triggers, confidence, kept dissent, gaps. */
export function renderCard(stored: StoredDebate, style: TermStyle = plainStyle): string {
  const d = inertDeep(withoutCallBodies(stored));
  const paint = painter(style);
  const width = Math.min(style.columns, 100);
  const lines: string[] = [];
  const heading = (text: string): void => {
    lines.push('', paint('bold', text));
  };
  const debaters = d.agents.filter((a) => a.role === 'debater').length;
  lines.push(paint('bold', `━━ ${d.question}`));
  // The user's constraints: the answer below was asked under them.
  for (const c of d.preset.constraints ?? []) lines.push(`  ${paint('dim', 'constraint:')} ${c}`);
  const advice = adviceOf(d);
  if (advice) lines.push(...wrap(`protocol: ${adviceLine(advice)}`, width - 2).map((l) => `  ${paint('dim', l)}`));
  const settings = kindOf(d) === 'debate' ? debateSettingsLine(d.preset.protocol) : null;
  if (settings) lines.push(...wrap(`protocol: ${settings}`, width - 2).map((l) => `  ${paint('dim', l)}`));
  const s = d.synthesis?.synthesis;
  const computed = confidenceOf(d);
  const confidence = (): void => {
    if (!computed) return;
    heading(`CONFIDENCE: ${confidenceText(computed)}`);
    for (const note of confidenceNotes(computed)) lines.push(...wrap(note, width - 2).map((l) => `  ${paint('yellow', l)}`));
  };
  if (kindOf(d) === 'pipeline') {
    // The report (protocolCardLines) is the result; the synthesis record carries its verdict.
    if (s) {
      heading('VERDICT');
      lines.push(...wrap(s.recommendation, width - 2).map((l) => `  ${l}`));
    }
    confidence();
  } else if (!s) {
    lines.push('', paint('red', `No synthesis: ${d.synthesis?.error ?? d.error ?? 'the debate did not reach synthesis'}.`));
    // A decomposition without its reassembly still has a (LOW) confidence from its parts.
    confidence();
    lines.push(...finalPositionLines(d, paint, width));
  } else {
    heading('RECOMMENDATION');
    lines.push(...wrap(s.recommendation, width - 2).map((l) => `  ${l}`));
    if (s.triggersToRevisit.length) {
      heading('TRIGGERS TO REVISIT');
      for (const t of s.triggersToRevisit) lines.push(...wrap(t, width - 4).map((l, i) => (i === 0 ? `  - ${l}` : `    ${l}`)));
    }
    confidence();
    const names = computed && restsOnText(computed);
    if (names) lines.push(...wrap(names, width - 2).map((l) => `  ${paint('dim', l)}`));
    lines.push(...wrap(modelConfidenceText(s.confidence.level, s.confidence.converged), width - 2).map((l) => `  ${paint('dim', l)}`));
    for (const m of s.minorityPositions) {
      heading(`MINORITY POSITION (${m.agent}, round ${m.round})`);
      lines.push(...wrap(m.argument, width - 2).map((l) => `  ${l}`));
      lines.push(...wrap(`Why it still matters: ${m.whyItMatters}`, width - 2).map((l) => `  ${paint('dim', l)}`));
    }
    if (s.failedAgents.length) {
      heading('AGENTS WITHOUT A FINAL ANSWER');
      for (const f of s.failedAgents) lines.push(`  - ${f.agent}: ${f.reason}`);
    }
  }
  lines.push(...panelCardLines(d, paint, width, wrap));
  lines.push(...protocolCardLines(d, paint, width, wrap));
  lines.push(...constraintCardLines(d, paint, width, wrap));
  lines.push(...tensionCardLines(d, paint, width, wrap));
  lines.push(...votingCardLines(d, paint, width, wrap));
  lines.push(...materialCardLines(d, paint, width, wrap));
  lines.push(...qualityCardLines(d, paint, width, wrap));
  const scores = d.rounds
    .filter((r) => r.convergence !== null)
    .map((r) => `r${r.round} ${r.convergence!.toFixed(2)}`)
    .join(' → ');
  const why = exitTextBeside(d.status, d.exitReason);
  lines.push('');
  lines.push(
    paint(
      'dim',
      `debate ${d.id} · ${d.status}${why === null ? '' : ` (${why})`} · ${protocolFooter(d)}${scores ? ` · convergence ${scores}` : ''}`,
    ),
  );
  // Sections drawn by other modules (the tension map, the footer) keep the card's width too.
  return `${fitText(lines.join('\n'), width)}\n`;
}

/**
 * Without a synthesis the debate still has an answer to show: where each agent ended,
 * with its confidence, and the judge's last reading of how far they agree.
 */
function finalPositionLines(d: StoredDebate, paint: ReturnType<typeof painter>, width: number): string[] {
  const debaters = d.agents.filter((a) => a.role === 'debater');
  if (d.turns.length === 0) return [];
  const lines: string[] = ['', paint('bold', 'FINAL POSITIONS (no synthesis)')];
  for (const agent of debaters) {
    const last = [...d.turns].reverse().find((t) => t.agentId === agent.id && t.status === 'ok' && t.position);
    if (!last) {
      lines.push(`  ${agent.id}: ${paint('dim', 'no usable answer in any round')}`);
      continue;
    }
    const confidence = last.confidence === null ? 'confidence unknown' : `confidence ${last.confidence.toFixed(2)}`;
    lines.push(`  ${paint('bold', agent.id)} ${paint('dim', `(round ${last.round}, ${confidence})`)}`);
    lines.push(...wrap(last.position!, width - 4).map((l) => `    ${l}`));
  }
  const judged = [...d.rounds].reverse().find((r) => r.convergence !== null);
  if (judged?.score) {
    const sc = judged.score;
    lines.push(
      '',
      paint('bold', `LAST JUDGE SCORE: ${judged.convergence!.toFixed(2)} after round ${judged.round}`) +
        paint('dim', ` (recommendation ${sc.recommendation.toFixed(2)}, facts ${sc.facts.toFixed(2)}, caveats ${sc.caveats.toFixed(2)})`),
    );
  } else {
    lines.push('', paint('dim', 'No judge score was recorded.'));
  }
  if (d.status === 'unsynthesized') lines.push('', paint('dim', `Finish it with \`conclave synthesize ${d.id}\` (add --model M to use another synthesizer).`));
  return lines;
}

export function wrap(text: string, width: number): string[] {
  const out: string[] = [];
  for (const paragraph of text.split(/\n+/)) {
    let line = '';
    for (const word of paragraph.split(/\s+/).filter(Boolean)) {
      if (line && line.length + 1 + word.length > width) {
        out.push(line);
        line = word;
      } else {
        line = line ? `${line} ${word}` : word;
      }
    }
    if (line) out.push(line);
  }
  return out.length ? out : [''];
}
