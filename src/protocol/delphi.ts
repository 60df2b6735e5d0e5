import { plural } from '../plural.js';
import { mulberry32 } from './random.js';
import { clip } from './clip.js';
import { systemPrompt } from './prompts.js';
import type { ChatMessage, TurnRecord } from './records.js';
import type { RoundStances } from './stances.js';

/**
 * The Delphi method's pure rules and prompts (docs/protocol-delphi.md): anonymous rounds in which
 * every panelist reads the others' last answers without names, in a shuffled order, with the median
 * and quartiles of their numbers when the question asks for one, and revises with a reason. The
 * rounds end when the spread stops narrowing. Nothing here names a panelist in a prompt. The
 * reply's schema is in delphi-schema.ts, so the views read these rules without zod.
 */

/** One panelist's Delphi reply: the answer, the number it comes to (when asked), the reason, and how sure it is. */
export interface DelphiReply {
  answer: string;
  estimate?: number | null;
  reason: string;
  confidence: number;
}

/** How a round's replies are asked for: before the panel's first answers it is not known whether the question asks for a number. */
export type DelphiMode = 'open' | 'numeric' | 'stances';

/** The turn fields of a reply: kept in the opening's shape (position, reasoning), with its number alongside. */
export function delphiFields(v: DelphiReply): Pick<TurnRecord, 'position' | 'confidence' | 'opening' | 'critique'> {
  const opening = { position: v.answer, reasoning: v.reason, confidence: v.confidence, ...(v.estimate === undefined ? {} : { estimate: v.estimate }) };
  return { position: v.answer, confidence: v.confidence, opening, critique: null };
}

/** The number a usable turn carries, or null. */
export function estimateOf(turn: TurnRecord): number | null {
  if (turn.status !== 'ok') return null;
  const value = (turn.opening as { estimate?: unknown } | null)?.estimate;
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** A question is numeric when more than half of round 0's usable answers carry a number. */
export function isNumeric(turns: readonly TurnRecord[]): boolean {
  const usable = turns.filter((t) => t.status === 'ok');
  return usable.length > 0 && usable.filter((t) => estimateOf(t) !== null).length * 2 > usable.length;
}

/** The median and quartiles of a round's numbers (linear interpolation between order statistics). */
export interface NumberSummary {
  n: number;
  median: number;
  q1: number;
  q3: number;
  /** q3 − q1: the round's spread (the largest finite number when it is wider than a double holds). */
  iqr: number;
}

export function summarize(values: readonly number[]): NumberSummary | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number): number => {
    const pos = (sorted.length - 1) * p;
    const lo = Math.floor(pos);
    return between(sorted[lo]!, sorted[Math.ceil(pos)]!, pos - lo);
  };
  const q1 = at(0.25);
  const q3 = at(0.75);
  return { n: sorted.length, median: at(0.5), q1, q3, iqr: iqrOf(q1, q3) };
}

/** The point a fraction f of the way from a to b (a ≤ b), finite for any finite a and b. */
function between(a: number, b: number, f: number): number {
  if (f === 0 || a === b) return a;
  const width = b - a;
  // The usual form is exact at the ends and for ordinary numbers; a width past the largest double
  // (a and b of opposite signs near ±1.8e308) is weighed term by term, which cannot overflow.
  return Number.isFinite(width) ? a + width * f : a * (1 - f) + b * f;
}

/**
 * q3 − q1, held at the largest finite number when the quartiles lie further apart than a double
 * holds: a spread that overflowed to Infinity would be recorded as null and compare as no spread.
 */
export function iqrOf(q1: number, q3: number): number {
  return Math.min(q3 - q1, Number.MAX_VALUE);
}

/** The modal stance of a round the judge grouped: the largest stance (the first listed on a tie), its share of the usable answers. */
export interface ModalStance {
  stance: string;
  summary: string;
  agents: string[];
  share: number;
  tie: boolean;
  /** The other stances, largest first: the spread shown beside the mode. */
  others: { stance: string; summary: string; agents: string[] }[];
}

export function modalStance(stances: RoundStances | null | undefined, usable: number): ModalStance | null {
  if (!stances || stances.stances.length === 0 || usable === 0) return null;
  const bySize = [...stances.stances].sort((a, b) => b.agents.length - a.agents.length);
  const top = bySize[0]!;
  return {
    stance: top.id,
    summary: top.summary,
    agents: [...top.agents],
    share: Math.min(1, top.agents.length / usable),
    tie: bySize[1]?.agents.length === top.agents.length,
    others: bySize.slice(1).map((s) => ({ stance: s.id, summary: s.summary, agents: [...s.agents] })),
  };
}

/**
 * A round's spread, smaller is narrower: a numeric round's IQR, or for a stance round the share of
 * the answers outside the modal stance (1 − the mode's share). Null when it cannot be measured.
 */
export function spreadOf(numbers: NumberSummary | null, mode: ModalStance | null, numeric: boolean): number | null {
  if (numeric) return numbers && numbers.n >= 2 ? numbers.iqr : null;
  return mode ? 1 - mode.share : null;
}

/** Why the rounds stop after `round`, or null to hold another: no spread left, a spread that did not narrow, or the round limit. */
export function delphiStop(spreads: readonly (number | null)[], round: number, maxRounds: number): { reason: 'stable' | 'max_rounds'; detail: string } | null {
  const now = spreads[round] ?? null;
  if (now === 0) return { reason: 'stable', detail: `no spread left after round ${round}: the panel gives one answer` };
  const before = [...spreads.slice(0, round)].reverse().find((s): s is number => s !== null && s !== undefined);
  if (round >= 1 && now !== null && before !== undefined && now >= before) {
    return { reason: 'stable', detail: `the spread stopped narrowing in round ${round} (${fmt(before)} → ${fmt(now)})` };
  }
  if (round >= maxRounds) return { reason: 'max_rounds', detail: `${maxRounds} revision round${maxRounds === 1 ? '' : 's'} held` };
  return null;
}

/**
 * A number as the prompts and views print it: an integer plainly; otherwise six significant digits
 * (trailing zeros dropped) and never fewer than the digits of its integer part, so 0.0002 stays
 * 0.0002 and 1234567.891 reads 1234568. Below 1e-6 and from 1e21 on it takes exponent form (2e-7,
 * 1.5e+308). It never throws: a value that is not a finite number prints as JavaScript spells it.
 */
export function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const abs = Math.abs(n);
  if (abs >= 1e21) return trimZeros(n.toPrecision(6));
  if (Number.isInteger(n)) return String(n);
  // From 1e5 on, six significant digits are the integer part: toPrecision would round 999999.7 into exponent form.
  if (abs >= 1e5) return n.toFixed(0);
  return trimZeros(n.toPrecision(6));
}

/** "0.000200000" → "0.0002", "1.50000e+308" → "1.5e+308", "2.00000e-7" → "2e-7". */
function trimZeros(s: string): string {
  return s.replace(/(\.\d*?)0+(?=$|e)/, '$1').replace(/\.(?=$|e)/, '');
}

/** A seeded order, the same for the same debate, round and panelist: a resumed run shows what the run before it showed. */
export function shuffleSeed(debateId: string, round: number, agentId: string): string {
  return `${debateId}:${round}:${agentId}`;
}

export function shuffled<T>(items: readonly T[], seed: string): T[] {
  // FNV-1a of the seed starts a mulberry32 stream; a Fisher-Yates shuffle draws from it.
  let h = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 0x01000193);
  const next = mulberry32(h);
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** One of the panel's answers as a panelist reads it: no name, its number when it gave one. */
export interface AnonymousAnswer {
  answer: string;
  estimate: number | null;
  reason: string;
}

export function anonymousText(a: AnonymousAnswer): string {
  return `${a.answer}${a.estimate === null ? '' : `\nEstimate: ${fmt(a.estimate)}`}\nReason: ${a.reason}`;
}

const ESTIMATE_ROUND0 =
  '"estimate" (the number your answer comes to, when the question asks for a quantity, a date, a count or a probability; null when it asks for none)';

/** Round 0: the question alone, as in a debate, with room for a number. */
export function delphiOpeningMessages(question: string, persona: string | null | undefined): ChatMessage[] {
  return [
    { role: 'system', content: systemPrompt(persona) },
    {
      role: 'user',
      content: [
        'Answer the question below on your own. This is round 0 of a Delphi panel: the other panelists answer it separately, and in later rounds every panelist reads the others\' answers without their names.',
        '',
        `Question: ${question}`,
        '',
        `Reply with a JSON object: "answer" (your answer in a few sentences, concrete enough to act on), ${ESTIMATE_ROUND0}, "reason" (the main reasons and facts behind it, and the caveats that matter), "confidence" (a whole number from 0 to 100).`,
      ].join('\n'),
    },
  ];
}

/**
 * A revision round: the panelist's own last answer, the others' answers without names in the
 * order given, and for a numeric question the median and quartiles of the last round's numbers.
 * `others` are already fitted to the context window (each text may be shortened).
 */
export function delphiRoundMessages(
  question: string,
  persona: string | null | undefined,
  round: number,
  own: AnonymousAnswer | null,
  others: readonly { text: string; shortened?: boolean }[],
  summary: NumberSummary | null,
  numeric: boolean,
): ChatMessage[] {
  const listed = others.map((o, i) => `Answer ${i + 1}${o.shortened ? ' (shortened to fit)' : ''}:\n${o.text}`).join('\n\n');
  const stats = summary
    ? [`The panel's numbers in round ${round - 1} (${plural(summary.n, 'answer')}): median ${fmt(summary.median)}, lower quartile ${fmt(summary.q1)}, upper quartile ${fmt(summary.q3)}.`, '']
    : [];
  return [
    { role: 'system', content: systemPrompt(persona) },
    {
      role: 'user',
      content: [
        `Question: ${question}`,
        '',
        `This is Delphi round ${round}. The panel is anonymous: you read the other panelists' answers from round ${round - 1} without their names, in no particular order.`,
        '',
        own ? `Your answer in round ${round - 1}:\n${anonymousText(own)}` : `You gave no usable answer in round ${round - 1}.`,
        '',
        'The other answers:',
        '',
        listed || '(no other usable answer)',
        '',
        ...stats,
        'Weigh each answer on its reasons, not on how many gave it. Then revise your answer or keep it: keep a point you still believe even if the others disagree; change it where an answer showed you are wrong.',
        `Reply with a JSON object: "answer" (your answer now, complete on its own)${numeric ? ', "estimate" (the number your answer comes to now)' : ''}, "reason" (why you kept or changed your answer, naming the argument that decided it), "confidence" (a whole number from 0 to 100).`,
      ].join('\n'),
    },
  ];
}

/** What the Delphi rounds came to: the median for a number, the modal stance with its spread otherwise. */
export interface DelphiOutcome {
  numeric: boolean;
  summary: NumberSummary | null;
  mode: ModalStance | null;
  /** Usable answers in the final round. */
  of: number;
}

/** The synthesizer's section: the result it writes the answer from, and the dissent it keeps. */
export function delphiSection(outcome: DelphiOutcome, finalTurns: readonly TurnRecord[]): string {
  if (outcome.numeric && outcome.summary) {
    const s = outcome.summary;
    const outside = finalTurns.filter((t) => {
      const e = estimateOf(t);
      return e !== null && (e < s.q1 || e > s.q3);
    });
    return [
      `The Delphi result: the median of the final round's estimates is ${fmt(s.median)} (lower quartile ${fmt(s.q1)}, upper quartile ${fmt(s.q3)}; ${s.n} of ${outcome.of} panelists gave a number).`,
      'Write the recommendation from this median. Keep the estimates outside the quartiles as dissent, with their reasons:',
      ...(outside.length ? outside.map((t) => `- ${t.agentId}: ${fmt(estimateOf(t)!)}`) : ['- none: every estimate is within the quartiles.']),
    ].join('\n');
  }
  if (outcome.mode) {
    const m = outcome.mode;
    return [
      `The Delphi result: the modal stance of the final round is "${clip(m.summary, 200)}" (${m.agents.join(', ')}: ${m.agents.length} of ${outcome.of}${m.tie ? ', tied with another stance' : ''}).`,
      'Write the recommendation from it. Keep every other stance as dissent:',
      ...(m.others.length ? m.others.map((o) => `- "${clip(o.summary, 200)}" (${o.agents.join(', ')})`) : ['- none: every usable answer is in the modal stance.']),
    ].join('\n');
  }
  return 'The Delphi rounds gave no result the engine could measure (too few numbers, or no stances from the judge): write the recommendation from the final round, and keep every dissent.';
}
