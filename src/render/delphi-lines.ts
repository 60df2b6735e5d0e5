import type { ProtocolStep } from '../engine/protocol-events.js';
import { fmt } from '../protocol/delphi.js';
import type { Paint } from './style.js';
import { plural } from '../plural.js';

/**
 * A Delphi run's own shape (docs/protocol-delphi.md) in every view: per round, the panel's numbers
 * (median and quartiles) or its modal stance, and the spread; then the result. The live view and a
 * replay print one step at a time; the card, Markdown and the viewer read every step at once.
 */

export type DelphiRound = Extract<ProtocolStep, { kind: 'delphi' }>;
export type DelphiResult = Extract<ProtocolStep, { kind: 'delphi-result' }>;

/**
 * The rounds (the last step recorded for each: a round asked again after an interruption is
 * recorded again) and the result, as every view reads them.
 */
export function delphiOf(steps: readonly ProtocolStep[]): { rounds: DelphiRound[]; result: DelphiResult | null } {
  const byRound = new Map<number, DelphiRound>();
  let result: DelphiResult | null = null;
  for (const s of steps) {
    if (s.kind === 'delphi') byRound.set(s.round, s);
    else if (s.kind === 'delphi-result') result = s;
  }
  return { rounds: [...byRound.values()].sort((a, b) => a.round - b.round), result };
}

/**
 * The summary's figures when the record holds them all as finite numbers. A record written before
 * the quartiles were computed without overflow holds null for them (JSON writes Infinity as null),
 * and a hand-made one may hold anything: those read as a summary that is not there.
 */
function figures(s: DelphiRound['summary'] | undefined): { n: number; median: number; q1: number; q3: number } | null {
  if (!s || typeof s.n !== 'number') return null;
  return [s.median, s.q1, s.q3].every(Number.isFinite) ? s : null;
}

const numbers = (n: number): string => `${n} number${n === 1 ? '' : 's'}`;

/** A round in one clause: `median 50 (quartiles 42.5–60, 3 numbers)` or `modal stance S1 "…" 2 of 3 (67%)`. */
export function delphiRoundText(r: Pick<DelphiRound, 'numeric' | 'summary' | 'mode'>): string {
  if (r.numeric) {
    if (!r.summary) return 'no numbers';
    const s = figures(r.summary);
    return s ? `median ${fmt(s.median)} (quartiles ${fmt(s.q1)}–${fmt(s.q3)}, ${numbers(s.n)})` : `no summary (${typeof r.summary.n === 'number' ? `${numbers(r.summary.n)}; ` : ''}the record holds no median or quartiles)`;
  }
  if (!r.mode) return 'no stances from the judge';
  return `modal stance ${r.mode.stance} "${r.mode.summary}" held by ${r.mode.agents.join(', ')} (${Math.round(r.mode.share * 100)}%${r.mode.tie ? ', tied' : ''})`;
}

/** The spread in words: an IQR, or the share outside the modal stance. */
export function spreadText(numeric: boolean, spread: number | null): string {
  if (typeof spread !== 'number' || !Number.isFinite(spread)) return 'spread not measured';
  return numeric ? `IQR ${fmt(spread)}` : `${Math.round(spread * 100)}% outside the mode`;
}

/** The result in one sentence, as the card, Markdown and the viewer state it. */
export function delphiResultText(r: DelphiResult): string {
  if (r.numeric) {
    if (!r.summary) return `no result: none of the ${plural(r.of, 'final answer')} gave a number`;
    const s = figures(r.summary);
    return s
      ? `median ${fmt(s.median)} (quartiles ${fmt(s.q1)}–${fmt(s.q3)}; ${s.n} of ${r.of} answers gave a number)`
      : `no summary: the record holds no median or quartiles of the final numbers (${typeof r.summary.n === 'number' ? r.summary.n : '?'} of ${r.of} answers gave one)`;
  }
  if (!r.mode) return `no result: the judge grouped none of the ${r.of} final answers`;
  const others = r.mode.others.map((o) => `"${o.summary}" (${o.agents.join(', ')})`).join('; ');
  return `modal stance "${r.mode.summary}" (${r.mode.agents.join(', ')}: ${r.mode.agents.length} of ${r.of}${r.mode.tie ? ', tied' : ''})${others ? `; the rest: ${others}` : '; no other stance'}`;
}

/** What the live view and a replay print for a Delphi step. */
export function delphiStepLines(step: DelphiRound | DelphiResult, paint: Paint, clip: (s: string) => string): string[] {
  if (step.kind === 'delphi-result') return [`  ${paint('magenta', 'Delphi result:')} ${clip(delphiResultText(step))} ${paint('dim', `· ${step.stopped}`)}`];
  const order = step.shown.length ? paint('dim', ` · answers shown anonymously, in a shuffled order per panelist`) : '';
  return [`  ${paint('dim', `round ${step.round}:`)} ${clip(delphiRoundText(step))} ${paint('dim', `· ${spreadText(step.numeric, step.spread)}`)}${order}`];
}

/** The card's DELPHI block: each round's figures and spread, then the result. */
export function delphiCardLines(steps: readonly ProtocolStep[], paint: Paint, width: number, wrap: (text: string, width: number) => string[]): string[] {
  const { rounds, result } = delphiOf(steps);
  if (!rounds.length && !result) return [];
  const item = (text: string): string[] => wrap(text, width - 4).map((l, i) => (i === 0 ? `  - ${l}` : `    ${l}`));
  const lines = ['', paint('bold', `DELPHI (anonymous rounds${rounds[0]?.numeric ? ', numeric question' : ''})`)];
  for (const r of rounds) lines.push(...item(`round ${r.round}: ${delphiRoundText(r)}, ${spreadText(r.numeric, r.spread)}`));
  if (result) lines.push(...item(`result: ${delphiResultText(result)}`), ...item(`stopped: ${result.stopped}`));
  return lines;
}

/** The Markdown section (the steps come escaped). */
export function delphiMarkdown(steps: readonly ProtocolStep[]): string[] {
  const { rounds, result } = delphiOf(steps);
  if (!rounds.length && !result) return [];
  const out = ['## Delphi rounds', '', '_Each panelist read the others\' answers without names, in a shuffled order._', ''];
  for (const r of rounds) out.push(`- Round ${r.round}: ${delphiRoundText(r)}, ${spreadText(r.numeric, r.spread)}`);
  if (result) out.push('', `**Result:** ${delphiResultText(result)}.`, '', `_Stopped: ${result.stopped}._`);
  out.push('');
  return out;
}
