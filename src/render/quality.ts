import type { DebateEvent, QualityRecord } from '../engine/events.js';
import type { QualityAction } from '../protocol/quality.js';
import { finalRatings, qualityKey } from '../store/quality.js';
import type { StoredDebate } from '../store/store.js';
import { placeText } from './place.js';
import type { Paint } from './style.js';

/**
 * Quality indicators (docs/quality.md) in every view: a line per rating that is not a plain
 * pass in the live view and replays, a QUALITY section on the card, one in Markdown, and the
 * ratings in the JSON document. Callers pass text already made inert or escaped.
 */

const COLOUR: Record<QualityAction, 'green' | 'yellow' | 'red'> = { PASS: 'green', WARN: 'yellow', RETRY: 'yellow', REJECT: 'red' };

const STAGE_NAME: Record<string, string> = { opening: 'answer', critique: 'critique', subanswer: 'sub-answer' };

function placeOf(r: QualityRecord): string {
  const what = STAGE_NAME[r.stage] ?? r.stage;
  return r.stage === 'subanswer' ? `${what} ${r.round}` : `${what}, ${placeText(r.stage, r.round)}`;
}

function verdictOf(r: QualityRecord): string {
  if (r.try === 0 && r.action === 'RETRY') return 'asked again';
  if (r.action === 'REJECT') return 'left out';
  return 'kept';
}

/** The live view's lines for a rating: none for a first-try pass (the turn line shows its score). */
export function qualityLiveLines(event: DebateEvent, paint: Paint): string[] {
  if (event.type !== 'quality.rated') return [];
  const r = event.rating;
  if (r.action === 'PASS' && r.try === 0) return [];
  const why = r.reasons.length ? `: ${r.reasons.join('; ')}` : '';
  return [paint(COLOUR[r.action], `  ◆ ${r.agentId} ${placeOf(r)}: quality ${r.score} ${r.action} (${verdictOf(r)})${why}`)];
}

/** `quality 85 PASS`, for a turn line or heading. */
export function qualityLabel(r: QualityRecord | undefined): string {
  return r ? `quality ${r.score} ${r.action}${r.try > 0 ? ' after a retry' : ''}` : '';
}

/** A lookup of the rating that counts for each result of a stored debate. */
export function ratingOf(d: Pick<StoredDebate, 'quality'>): (stage: string, round: number, agentId: string) => QualityRecord | undefined {
  const finals = finalRatings(d.quality ?? []);
  return (stage, round, agentId) => finals.get(qualityKey(stage, round, agentId));
}

function summary(ratings: readonly QualityRecord[]): { text: string; notable: QualityRecord[] } {
  const finals = [...finalRatings(ratings).values()];
  const count = (a: QualityAction): number => finals.filter((r) => r.action === a).length;
  const retried = finals.filter((r) => r.try > 0).length;
  const mean = Math.round(finals.reduce((n, r) => n + r.score, 0) / Math.max(1, finals.length));
  const text = `${finals.length} result${finals.length === 1 ? '' : 's'} rated, mean score ${mean}: ${count('PASS')} pass, ${count('WARN')} warn, ${retried} retried, ${count('REJECT')} rejected`;
  return { text, notable: finals.filter((r) => r.action !== 'PASS' || r.try > 0) };
}

export function qualityCardLines(d: StoredDebate, paint: Paint, width: number, wrap: (text: string, width: number) => string[]): string[] {
  const ratings = d.quality ?? [];
  if (ratings.length === 0) return [];
  const { text, notable } = summary(ratings);
  const lines = ['', paint('bold', 'QUALITY'), `  ${text}`];
  for (const r of notable) {
    const head = `${r.agentId} ${placeOf(r)}: ${r.score} ${r.action}${r.try > 0 ? ' after a retry' : ''}`;
    lines.push(...wrap(`${head}${r.reasons.length ? ` (${r.reasons.join('; ')})` : ''}`, width - 4).map((l, i) => (i === 0 ? `  - ${paint(COLOUR[r.action], l)}` : `    ${l}`)));
  }
  return lines;
}

export function qualityMarkdown(d: StoredDebate): string[] {
  const ratings = d.quality ?? [];
  if (ratings.length === 0) return [];
  const { text } = summary(ratings);
  const out = ['## Quality', '', `${text}.`, ''];
  for (const r of ratings) {
    out.push(`- ${r.agentId}, ${placeOf(r)}${r.try > 0 ? ' (retry)' : ''}: **${r.score} ${r.action}**, ${verdictOf(r)}${r.reasons.length ? `: ${r.reasons.join('; ')}` : ''}`);
  }
  out.push('');
  return out;
}

export function qualityDocument(d: StoredDebate): QualityRecord[] {
  return d.quality ?? [];
}
