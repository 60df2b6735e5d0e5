/**
 * The confidence of a run's answer, computed by the engine from the record, never taken from a
 * model. Each protocol has its rule, all of them here (docs/confidence.md): a debate reads the
 * judge's last score and the final positions the synthesis rests on, a decomposition the
 * confidences of its parts, a review pipeline its findings and its reviews, a tournament its
 * bracket, an Oxford debate its verdict's margin. A cluster vote's rejected positions never count as support.
 */

import { fmt, iqrOf } from './delphi.js';
import { reaches } from './reaches.js';
import { stancesSplit } from './convergence.js';
import { plural } from '../plural.js';

export type ConfidenceLevel = 'high' | 'medium' | 'low';

export type ConfidenceRule = 'debate' | 'parallel' | 'tournament' | 'decompose' | 'pipeline' | 'oxford' | 'delphi';

export interface ComputedConfidence {
  level: ConfidenceLevel;
  /** Which protocol's rule computed it. */
  rule: ConfidenceRule;
  /** The judge's last score, or null when no round was scored. */
  judgeScore: number | null;
  threshold: number;
  /** Panelists with a usable final position the synthesis rests on, in panel order (without the positions the vote rejected). */
  restsOn: string[];
  /** Panelists with a usable final position. */
  of: number;
  /** The synthesis named no panelist it rests on (a record from before the field existed). */
  restsOnUnknown: boolean;
  /** Why HIGH was lowered to MEDIUM: the support was not independent (docs/confidence.md); null when it was not. */
  capped: string | null;
  /** Agents the synthesis named whose final position the cluster vote rejected: not counted in `restsOn`. */
  rejected: string[];
  /** The 0-1 figure the level comes from, for the rules that read confidences (decompose, pipeline); else null. */
  score: number | null;
  /** The facts the level rests on, one short clause each, as the card prints them after the level. */
  basis: string[];
  /** What lowered the level below what its figure alone gives, one sentence each. */
  lowered: string[];
}

/** A level from a 0-1 figure: the same bands for every rule that reads confidences. */
export const HIGH_SCORE = 0.8;
export const MEDIUM_SCORE = 0.6;
/** A fallback part counts at this share of its stated confidence: its assignee gave nothing usable. */
export const FALLBACK_WEIGHT = 0.5;

const RANK: Record<ConfidenceLevel, number> = { low: 0, medium: 1, high: 2 };
const atMost = (level: ConfidenceLevel, cap: ConfidenceLevel): ConfidenceLevel => (RANK[level] > RANK[cap] ? cap : level);
const bandOf = (score: number): ConfidenceLevel => (reaches(score, HIGH_SCORE) ? 'high' : reaches(score, MEDIUM_SCORE) ? 'medium' : 'low');

function blank(rule: ConfidenceRule, threshold: number): Omit<ComputedConfidence, 'level'> {
  return { rule, judgeScore: null, threshold, restsOn: [], of: 0, restsOnUnknown: false, capped: null, rejected: [], score: null, basis: [], lowered: [] };
}

/**
 * A debate, parallel answers, or any run with a synthesis over final positions: the judge's last
 * score against the threshold, and whether the synthesis rests on a majority of the usable final
 * positions. A position the cluster vote rejected is not support. HIGH needs independent support.
 */
export function computeConfidence(input: {
  judgeScore: number | null;
  threshold: number;
  restsOn: readonly string[] | undefined;
  usable: readonly string[];
  /** Whether the final positions it rests on are independent support; absent for records without model families. */
  independence?: { independent: boolean; reason: string } | null;
  /** Authors of the positions the cluster vote's last iteration put in its Reject tier. */
  rejectedByVote?: readonly string[];
  rule?: 'debate' | 'parallel';
  /** Seats in `usable` whose final position is the orchestrator's fallback analysis: each counts at FALLBACK_WEIGHT and caps the level at MEDIUM. */
  fallbacks?: readonly string[];
  /** The last round's devil's advocate, left out of `usable`: its last turn argued by assignment. */
  advocate?: string | null;
  /** The stances the judge gave in the round of its last score: how many, and the agents in each. */
  judgedStances?: readonly (readonly string[])[] | null;
}): ComputedConfidence {
  const named = new Set(input.restsOn ?? []);
  const vetoed = new Set(input.rejectedByVote ?? []);
  const filled = new Set(input.fallbacks ?? []);
  const rejected = input.usable.filter((id) => named.has(id) && vetoed.has(id));
  const restsOn = input.usable.filter((id) => named.has(id) && !vetoed.has(id));
  const of = input.usable.length;
  const support = restsOn.reduce((sum, id) => sum + (filled.has(id) ? FALLBACK_WEIGHT : 1), 0);
  const majority = of > 0 && support * 2 > of;
  const s = input.judgeScore;
  let level: ConfidenceLevel;
  if (s === null) level = majority ? 'medium' : 'low';
  else if (reaches(s, input.threshold)) level = majority ? 'high' : 'medium';
  else if (reaches(s, input.threshold / 2)) level = majority ? 'medium' : 'low';
  else level = 'low';
  // HIGH needs independent support: agreement among one model family, reached by moving, is not evidence enough.
  let capped: string | null = null;
  if (level === 'high' && input.independence && !input.independence.independent) {
    level = 'medium';
    capped = input.independence.reason;
  }
  const restsOnUnknown = input.restsOn === undefined;
  const judge = s === null ? 'no judge score' : `judge ${s.toFixed(2)} ${reaches(s, input.threshold) ? '≥' : '<'} ${input.threshold}`;
  const rests = restsOnUnknown ? 'rests on no named agent' : `rests on ${restsOn.length}/${of} agents`;
  const lowered = rejected.length
    ? [`The cluster vote rejected the position${rejected.length === 1 ? '' : 's'} of ${rejected.join(', ')}: not counted as support.`]
    : [];
  // A seat the orchestrator filled is not the panel's own view, as a decomposition's fallback part is not.
  const seats = input.usable.filter((id) => filled.has(id));
  if (seats.length && level === 'high') {
    level = 'medium';
    lowered.push(`MEDIUM at most: the final position${seats.length === 1 ? '' : 's'} of ${seats.join(', ')} ${seats.length === 1 ? 'is' : 'are'} the orchestrator's fallback analysis, not the agent's own.`);
  }
  // The judge's score and its stances come from one reply: a score at the threshold over positions it grouped with no majority contradicts itself.
  const stances = input.judgedStances ?? [];
  const placed = stances.reduce((n, agents) => n + agents.length, 0);
  const split = stancesSplit(stances.map((agents) => agents.length));
  if (split && level === 'high') {
    level = 'medium';
    lowered.push(`MEDIUM at most: the judge scored ${s!.toFixed(2)} but put the ${plural(placed, 'position')} it read in ${plural(stances.length, 'stance')}, none held by a majority.`);
  }
  return {
    ...blank(input.rule ?? 'debate', input.threshold),
    level,
    judgeScore: s,
    restsOn,
    of,
    restsOnUnknown,
    capped,
    rejected,
    basis: [judge, rests, ...(seats.length ? [`${seats.length} by fallback`] : []), ...(rejected.length ? [`${rejected.length} rejected by the vote`] : []), ...(capped ? ['not independent'] : []), ...(split && s !== null && reaches(s, input.threshold) ? [`judge's stances split ${stances.map((agents) => agents.length).join('/')}`] : []), ...(input.advocate ? [`${input.advocate}'s last turn was advocacy`] : [])],
    lowered,
  };
}

export interface PartConfidence {
  index: number;
  status: 'ok' | 'failed' | 'skipped' | 'not reached';
  confidence: number | null;
  fallback: boolean;
  dependsOn: readonly number[];
}

/**
 * A decomposition (seed 002: a weighted average of the parts' confidences). Each part weighs 1
 * plus the number of parts built on it, directly or not, so a foundation's doubt spreads to what
 * rests on it. A fallback part counts at half its confidence, a part without an answer at 0.
 * A fallback or a missing part caps the level at MEDIUM; a failed reassembly makes it LOW.
 */
export function decompositionConfidence(parts: readonly PartConfidence[], reassembled: boolean, threshold: number): ComputedConfidence {
  const base = blank('decompose', threshold);
  if (parts.length === 0) return { ...base, level: 'low', basis: ['no split'], lowered: ['The question was never split into parts.'] };
  const dependents = new Map<number, Set<number>>(parts.map((p) => [p.index, new Set<number>()]));
  // Parts come in dependency order (a part depends only on earlier ones), so one backward pass closes the set.
  for (const p of [...parts].reverse()) {
    for (const d of p.dependsOn) {
      const set = dependents.get(d);
      if (!set) continue;
      set.add(p.index);
      for (const x of dependents.get(p.index) ?? []) set.add(x);
    }
  }
  let sum = 0;
  let weights = 0;
  for (const p of parts) {
    const w = 1 + (dependents.get(p.index)?.size ?? 0);
    const v = p.status === 'ok' && p.confidence !== null ? p.confidence * (p.fallback ? FALLBACK_WEIGHT : 1) : 0;
    sum += w * v;
    weights += w;
  }
  const score = sum / weights;
  let level = bandOf(score);
  const lowered: string[] = [];
  const fallbacks = parts.filter((p) => p.status === 'ok' && p.fallback).map((p) => p.index);
  const missing = parts.filter((p) => p.status !== 'ok').map((p) => p.index);
  if (fallbacks.length) {
    if (level === 'high') lowered.push(`MEDIUM at most: part${fallbacks.length === 1 ? '' : 's'} ${fallbacks.join(', ')} rest${fallbacks.length === 1 ? 's' : ''} on the decomposer's fallback analysis.`);
    level = atMost(level, 'medium');
  }
  if (missing.length) {
    if (level === 'high') lowered.push(`MEDIUM at most: part${missing.length === 1 ? '' : 's'} ${missing.join(', ')} ha${missing.length === 1 ? 's' : 've'} no answer.`);
    level = atMost(level, 'medium');
  }
  if (!reassembled) {
    if (level !== 'low') lowered.push('LOW: the reassembly failed, so no answer to the whole question was written.');
    level = 'low';
  }
  const answered = parts.length - missing.length;
  return {
    ...base,
    level,
    score,
    basis: [
      `parts' weighted confidence ${score.toFixed(2)}`,
      `${answered}/${parts.length} parts answered`,
      ...(fallbacks.length ? [`${fallbacks.length} by fallback`] : []),
      reassembled ? 'reassembled' : 'reassembly failed',
    ],
    lowered,
  };
}

export interface ReviewConfidence {
  role: string;
  status: 'ok' | 'failed' | 'skipped';
}

export interface FindingConfidence {
  /** 0-100, as the reviewers wrote it. */
  confidence: number;
  blocking: boolean;
}

/**
 * A review pipeline (seed 003: every observation carries its confidence). The verdict rests on
 * the blocking findings when there are any, else on every finding; the figure is their mean
 * confidence. HIGH needs every reviewer's review usable; fewer than half usable, or no report, is LOW.
 * A report with no finding at all is MEDIUM at most: a clean review says only what was not found.
 */
export function reviewConfidence(input: { reviews: readonly ReviewConfidence[]; report: { ok: boolean; findings: readonly FindingConfidence[] } | null; threshold: number }): ComputedConfidence {
  const base = blank('pipeline', input.threshold);
  const reviewers = input.reviews.filter((r) => r.role === 'reviewer');
  const usable = reviewers.filter((r) => r.status === 'ok').length;
  const coverage = `${usable}/${reviewers.length} reviews usable`;
  if (!input.report?.ok) return { ...base, level: 'low', basis: ['no report', coverage], lowered: ['LOW: the filter wrote no report.'] };
  const blocking = input.report.findings.filter((f) => f.blocking);
  const read = blocking.length ? blocking : input.report.findings;
  const score = read.length ? read.reduce((s, f) => s + f.confidence, 0) / read.length / 100 : null;
  let level: ConfidenceLevel = score === null ? 'medium' : bandOf(score);
  const lowered: string[] = [];
  if (reviewers.length === 0 || usable * 2 < reviewers.length) {
    if (level !== 'low') lowered.push(`LOW: only ${usable} of ${reviewers.length} reviewers gave a usable review.`);
    level = 'low';
  } else if (usable < reviewers.length) {
    if (level === 'high') lowered.push(`MEDIUM at most: ${reviewers.length - usable} of ${reviewers.length} reviewers gave no usable review.`);
    level = atMost(level, 'medium');
  }
  const what = score === null ? 'no finding' : `${blocking.length ? 'blocking findings' : 'findings'}' mean confidence ${score.toFixed(2)}`;
  return { ...base, level, score, basis: [what, coverage], lowered };
}

export interface MatchConfidence {
  winner: string;
  a: string;
  b: string;
  decidedBy: 'judged' | 'walkover' | 'fallback';
}

/**
 * A tournament: a bracket names a winner by one judge's pairwise verdicts; it does not measure
 * agreement, so its level is MEDIUM at most. MEDIUM when the champion won at least one match the
 * judge decided, no match of its was decided by the fallback (the judge failed), and the synthesis
 * rests on the champion's position; LOW otherwise.
 */
export function tournamentConfidence(input: { champion: string | null; matches: readonly MatchConfidence[]; restsOn: readonly string[] | undefined; threshold: number }): ComputedConfidence {
  const base = blank('tournament', input.threshold);
  if (!input.champion) return { ...base, level: 'low', basis: ['no champion'], lowered: ['LOW: the bracket named no champion.'] };
  const champion = input.champion;
  const played = input.matches.filter((m) => m.a === champion || m.b === champion);
  const judged = played.filter((m) => m.decidedBy === 'judged' && m.winner === champion).length;
  const fallback = played.filter((m) => m.decidedBy === 'fallback').length;
  const rests = (input.restsOn ?? []).includes(champion);
  const lowered: string[] = [];
  if (judged === 0) lowered.push(`LOW: ${champion} won no match the judge decided.`);
  if (fallback) lowered.push(`LOW: ${fallback} of ${champion}'s matches ${fallback === 1 ? 'was' : 'were'} decided without the judge (it failed).`);
  if (!rests) lowered.push(`LOW: the synthesis does not rest on the champion ${champion}.`);
  return {
    ...base,
    level: lowered.length ? 'low' : 'medium',
    restsOn: rests ? [champion] : [],
    of: 1,
    restsOnUnknown: input.restsOn === undefined,
    basis: [`champion ${champion}`, `${judged} judged win${judged === 1 ? '' : 's'}`, ...(fallback ? [`${fallback} without the judge`] : []), rests ? 'synthesis rests on it' : 'synthesis does not rest on it'],
    lowered,
  };
}

/**
 * An Oxford debate: the judge's verdict between two assigned sides says which case was argued
 * better, never that the panel agrees, so its level is MEDIUM at most. MEDIUM when the judge gave
 * a verdict with a margin of at least MEDIUM_SCORE, both sides closed with a usable speech, and the
 * synthesis rests on a speaker of the winning side; LOW otherwise. The score is the margin.
 */
export function oxfordConfidence(input: {
  ruling: { winner: 'for' | 'against'; margin: number } | null;
  sides: { for: readonly string[]; against: readonly string[] };
  /** Speakers with a usable closing. */
  closed: readonly string[];
  restsOn: readonly string[] | undefined;
  threshold: number;
}): ComputedConfidence {
  const base = blank('oxford', input.threshold);
  if (!input.ruling) return { ...base, level: 'low', basis: ['no verdict'], lowered: ['LOW: the judge gave no usable verdict.'] };
  const { winner, margin } = input.ruling;
  const winners = input.sides[winner];
  const rests = winners.filter((id) => (input.restsOn ?? []).includes(id));
  const lowered: string[] = [];
  if (!reaches(margin, MEDIUM_SCORE)) lowered.push(`LOW: the judge called it close (margin ${margin.toFixed(2)} < ${MEDIUM_SCORE.toFixed(2)}).`);
  for (const side of ['for', 'against'] as const) {
    if (!input.sides[side].some((id) => input.closed.includes(id))) lowered.push(`LOW: the ${side} side gave no usable closing.`);
  }
  if (rests.length === 0) lowered.push(`LOW: the synthesis does not rest on the winning (${winner}) side.`);
  return {
    ...base,
    level: lowered.length ? 'low' : 'medium',
    score: margin,
    restsOn: rests,
    of: winners.length,
    restsOnUnknown: input.restsOn === undefined,
    basis: [`verdict ${winner}`, `margin ${margin.toFixed(2)}`, `${input.closed.length} closing${input.closed.length === 1 ? '' : 's'}`, rests.length ? `synthesis rests on ${rests.length}/${winners.length} ${winner} speaker${winners.length === 1 ? '' : 's'}` : 'synthesis does not rest on the winning side'],
    lowered,
  };
}

/** The facts of a Delphi run's final round (src/protocol/delphi.ts): its numbers or its modal stance, and whether the spread narrowed. */
export interface DelphiConfidence {
  numeric: boolean;
  /** Numeric: the final median and quartiles, or null when fewer than one answer gave a number. */
  summary: { n: number; median: number; q1: number; q3: number } | null;
  /** Not numeric: the modal stance's share of the usable final answers, or null without stances. */
  modalShare: number | null;
  /** Usable final answers. */
  of: number;
  /** The spread of round 0 and of the final round (IQR, or the share outside the mode); null when not measured. */
  firstSpread: number | null;
  finalSpread: number | null;
  /**
   * The model families of the panelists whose final answers the result reads (null for a record
   * without families; a family null when unknown). HIGH needs two families or more, unless no
   * panelist had to move: the spread never narrowed from round 0.
   */
  families?: readonly (string | null)[] | null;
}

/** A Delphi's numeric spread relative to the median: the IQR over |median| (0 when the IQR is 0). */
export function relativeSpread(s: { median: number; q1: number; q3: number }): number {
  const iqr = iqrOf(s.q1, s.q3);
  if (iqr === 0) return 0;
  return s.median === 0 ? Infinity : iqr / Math.abs(s.median);
}

/**
 * A Delphi run: the final round's spread. A numeric question is HIGH when the interquartile range
 * is within 10% of the median, MEDIUM within 25%, LOW beyond; an answer without a number caps it at
 * MEDIUM, and fewer than two numbers make it LOW. Any other question reads the modal stance's share
 * of the usable final answers with the usual bands (HIGH from 0.80, MEDIUM from 0.60); no majority
 * is LOW. A spread that ends wider than it began caps the level at MEDIUM: the rounds pulled apart.
 */
export function delphiConfidence(input: DelphiConfidence & { threshold: number }): ComputedConfidence {
  const base = blank('delphi', input.threshold);
  const lowered: string[] = [];
  let level: ConfidenceLevel;
  let basis: string[];
  let score: number | null = null;
  if (input.numeric) {
    const s = input.summary;
    if (!s || s.n < 2) return { ...base, level: 'low', of: input.of, basis: [`${s?.n ?? 0} number${s?.n === 1 ? '' : 's'} in the final round`], lowered: ['LOW: fewer than two final answers gave a number, so there is no spread to read.'] };
    // A record written while an overflow stored the figures as null has no spread to read, not a spread of 0.
    if (![s.median, s.q1, s.q3].every(Number.isFinite)) return { ...base, level: 'low', of: input.of, basis: ['no summary of the final numbers in the record'], lowered: ['LOW: the record holds no median or quartiles of the final numbers, so there is no spread to read.'] };
    const r = relativeSpread(s);
    level = r <= 0.1 ? 'high' : r <= 0.25 ? 'medium' : 'low';
    basis = [`IQR ${fmt(iqrOf(s.q1, s.q3))} = ${Number.isFinite(r) ? `${Math.round(r * 100)}%` : 'all'} of the median`, `${s.n}/${input.of} answers gave a number`];
    if (s.n < input.of && level === 'high') {
      level = 'medium';
      lowered.push(`MEDIUM at most: ${input.of - s.n} final answer${input.of - s.n === 1 ? '' : 's'} gave no number.`);
    }
  } else {
    const share = input.modalShare;
    if (share === null) return { ...base, level: 'low', of: input.of, basis: ['no stances'], lowered: ['LOW: the judge grouped no final answer into stances.'] };
    score = share;
    level = share * 2 <= 1 ? 'low' : bandOf(share);
    basis = [`modal stance holds ${Math.round(share * 100)}% of ${input.of} answers`];
  }
  // Agreement reached by narrowing among one model family is conformity as much as evidence.
  const known = new Set((input.families ?? []).filter((f): f is string => f !== null));
  // Nobody had to move only when round 0's spread was measured and the result is no narrower; a round 0 without one shows nothing held.
  const measured = input.firstSpread !== null && input.finalSpread !== null;
  const held = measured && input.finalSpread! >= input.firstSpread!;
  if (level === 'high' && input.families && input.families.length > 0 && known.size < 2 && !held) {
    level = 'medium';
    const within = known.size === 1 ? `one model family (${[...known][0]})` : 'agents of unknown model family';
    lowered.push(`MEDIUM at most: the panel ${measured ? 'narrowed to' : 'reached'} its result within ${within}${measured ? '' : ', from a round 0 whose spread was not measured'}, which is not independent support.`);
  }
  if (input.firstSpread !== null && input.finalSpread !== null && input.finalSpread > input.firstSpread && level === 'high') {
    level = 'medium';
    lowered.push('MEDIUM at most: the spread ended wider than it began.');
  }
  basis.push(input.firstSpread !== null && input.finalSpread !== null ? (input.finalSpread < input.firstSpread ? 'spread narrowed' : input.finalSpread === input.firstSpread ? 'spread unchanged' : 'spread widened') : 'spread not compared');
  return { ...base, level, of: input.of, score, basis, lowered };
}
