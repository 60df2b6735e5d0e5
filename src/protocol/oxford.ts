import { z } from 'zod';
import { plural } from '../plural.js';
import { idEnum, percent } from './grammar.js';
import { type PeerView, STATED_FIELDS, systemPrompt } from './prompts.js';
import type { ChatMessage, TurnRecord } from './records.js';

/**
 * The Oxford debate (`protocol.kind: oxford`), pure parts: who speaks for and against the
 * motion, how a question becomes a motion, the speeches' prompts, the judge's verdict (its side
 * an enum, its decisive argument and the losing side's best point named per side, so every
 * reply the grammar allows reads one way only) and the synthesizer's section.
 */

export const SIDES = ['for', 'against'] as const;
export type Side = (typeof SIDES)[number];

/** The speeches, each a round of the record: openings 0, rebuttals 1, closings 2. */
export const OXFORD_PHASES = ['opening', 'rebuttal', 'closing'] as const;
export type OxfordPhase = (typeof OXFORD_PHASES)[number];
export const OXFORD_ROUND: Readonly<Record<OxfordPhase, number>> = { opening: 0, rebuttal: 1, closing: 2 };

export interface Sides {
  for: string[];
  against: string[];
  /** preset: every agent named its side; alternated: none did; mixed: those without one filled the smaller side. */
  assigned: 'preset' | 'alternated' | 'mixed';
}

/**
 * The two sides, in panel order. Agents that name a side keep it; the others go, in panel
 * order, to the side with fewer speakers so far (`for` on a tie), which alternates a panel
 * that names none: for, against, for, …
 */
export function assignSides(agents: readonly { id: string; side?: Side | undefined }[]): Sides {
  const sides: Sides = { for: [], against: [], assigned: 'preset' };
  const named = agents.filter((a) => a.side !== undefined).length;
  sides.assigned = named === agents.length ? 'preset' : named === 0 ? 'alternated' : 'mixed';
  const count = { for: agents.filter((a) => a.side === 'for').length, against: agents.filter((a) => a.side === 'against').length };
  for (const a of agents) {
    const side: Side = a.side ?? (count.for <= count.against ? 'for' : 'against');
    if (a.side === undefined) count[side] += 1;
    sides[side].push(a.id);
  }
  return sides;
}

export function sideOf(sides: Sides, agentId: string): Side {
  return sides.for.includes(agentId) ? 'for' : 'against';
}

export function otherSide(side: Side): Side {
  return side === 'for' ? 'against' : 'for';
}

/** Why a panel cannot hold an Oxford debate (a side without a speaker), or null. */
export function sidesProblem(agents: readonly { id: string; side?: Side | undefined }[]): string | null {
  const sides = assignSides(agents);
  for (const side of SIDES) {
    if (sides[side].length > 0) continue;
    const other = otherSide(side);
    return `the ${side} side has no speaker: ${agents.length === 1 ? 'the only agent is' : `all ${plural(agents.length, 'agent')} are`} \`side: ${other}\`; set \`side: ${side}\` on one of them, or leave \`side\` out to alternate them in panel order`;
  }
  return null;
}

/**
 * How the question was put as a motion: `house` a "This house …" statement, taken as it is;
 * `yes-no` a question answered yes or no; `statement` a claim; `open` a question with no yes or
 * no (which, what, how, …), which the for side answers with the course it names or implies.
 */
export type Framing = 'house' | 'yes-no' | 'statement' | 'open';

export interface Motion {
  motion: string;
  framing: Framing;
}

const YES_NO = /^(should|shall|is|are|was|were|do|does|did|can|could|will|would|must|may|might|has|have|had|ought)\b/i;
const HOUSE = /^this house\b/i;

export function frameMotion(question: string): Motion {
  const q = question.trim().replace(/\s+/g, ' ');
  if (HOUSE.test(q)) return { motion: q, framing: 'house' };
  if (!q.endsWith('?')) return { motion: `This house believes: ${q}`, framing: 'statement' };
  if (YES_NO.test(q)) return { motion: `This house says yes to: ${q}`, framing: 'yes-no' };
  return { motion: `This house would act on the most direct answer to: ${q}`, framing: 'open' };
}

/** What an open question's framing asks of each side, said in every speech's prompt. */
const OPEN_NOTE =
  'The question is open rather than yes or no. The for side argues for the most direct course of action the question names or implies, stated concretely; the against side argues that this course is wrong or premature and says what should be done instead.';

function motionLines(m: Motion, side: Side): string[] {
  return [
    `Motion: ${m.motion}`,
    ...(m.framing === 'open' ? [OPEN_NOTE] : []),
    '',
    `You speak ${side.toUpperCase()} the motion. Argue your side as well as the evidence allows; the judge weighs substance, not confidence.`,
  ];
}

/** An opening speech: the speaker's case, made alone (no one has spoken yet). */
export function openingSpeechMessages(m: Motion, side: Side, persona: string | null | undefined): ChatMessage[] {
  return [
    { role: 'system', content: systemPrompt(persona) },
    {
      role: 'user',
      content: [
        ...motionLines(m, side),
        '',
        'This is your opening speech. Every speaker opens on their own; you will hear the other side later.',
        `Reply with a JSON object: "position" (your case ${side} the motion in a few sentences, concrete enough to act on), "reasoning" (the arguments and evidence behind it, strongest first), "confidence" (a whole number from 0 to 100: how well your side's case holds, in your honest view)${STATED_FIELDS}.`,
      ].join('\n'),
    },
  ];
}

/**
 * A rebuttal (the other side's openings) or a closing (the other side's rebuttals): the speaker
 * answers `others`, the other side's speeches, with its own last speech. It is never shown its
 * own side's other speeches.
 */
export function answerSpeechMessages(phase: 'rebuttal' | 'closing', m: Motion, side: Side, persona: string | null | undefined, own: string | null, others: PeerView[]): ChatMessage[] {
  const text = others.map((p) => `[${p.agentId}]${p.shortened ? ' (shortened to fit)' : ''}\n${p.position}`).join('\n\n');
  const ids = others.map((p) => p.agentId).join(', ');
  const rebuttal = phase === 'rebuttal';
  return [
    { role: 'system', content: systemPrompt(persona) },
    {
      role: 'user',
      content: [
        ...motionLines(m, side),
        '',
        own ? `Your last speech:\n${own}` : 'You gave no usable speech before.',
        '',
        rebuttal ? `This is your rebuttal. The ${otherSide(side)} side opened with:` : `This is your closing speech. The ${otherSide(side)} side rebutted with:`,
        '',
        text || `(the ${otherSide(side)} side gave no usable speech)`,
        '',
        rebuttal
          ? 'Answer their arguments: concede what is true (in "agreements"), and take apart what is not (in "disagreements", with the reason). Then restate your case as it stands after their openings.'
          : 'Sum up: the points your side has won, the ones you concede, and why on balance the motion should be decided your way. Add no new argument the other side has had no chance to answer.',
        `Reply with a JSON object: "agreements" (a list of {"with": speaker id, "on": the point you concede}), "disagreements" (a list of {"with": speaker id, "on": the point, "reason": why it fails}), "updatedPosition" (your ${rebuttal ? 'case now' : 'closing'}, complete on its own), "confidence" (a whole number from 0 to 100)${STATED_FIELDS}. Speaker ids: ${ids || 'none'}.`,
      ].join('\n'),
    },
  ];
}

/** The judge's verdict, with each side's strongest argument named among that side's speakers. */
export function rulingSchema(sides: Pick<Sides, 'for' | 'against'>) {
  const best = (ids: string[], side: Side) =>
    z
      .strictObject({
        speaker: idEnum(ids).describe(`The id of the ${side} speaker who made it.`),
        argument: z.string().min(1).describe('The argument, in one or two sentences.'),
      })
      .describe(`The strongest argument made ${side} the motion.`);
  return z.strictObject({
    strongestFor: best(sides.for, 'for'),
    strongestAgainst: best(sides.against, 'against'),
    winner: z.enum(SIDES).describe('The side that won the debate: for or against.'),
    reasons: z.array(z.string().min(1)).min(1).max(5).describe('Why that side won, one point per entry.'),
    margin: percent().describe('How clearly it won, from 0 (a coin toss) to 100 (no contest).'),
  });
}

export type RulingReply = z.infer<ReturnType<typeof rulingSchema>>;

export interface Argument {
  side: Side;
  speaker: string;
  argument: string;
}

/** The verdict as recorded: the winning side's strongest argument is the decisive one; the other side's is its best point. */
export interface Ruling {
  winner: Side;
  reasons: string[];
  /** 0–1: how clearly the winner won, as the judge put it. */
  margin: number;
  decisive: Argument;
  losingBest: Argument;
}

export function rulingOf(v: RulingReply): Ruling {
  const arg = (side: Side): Argument => ({ side, ...(side === 'for' ? v.strongestFor : v.strongestAgainst) });
  return { winner: v.winner, reasons: v.reasons, margin: v.margin, decisive: arg(v.winner), losingBest: arg(otherSide(v.winner)) };
}

/** One speech as the judge reads it. */
export interface SpeechView extends PeerView {
  side: Side;
  phase: OxfordPhase;
}

export function rulingMessages(m: Motion, speeches: SpeechView[]): ChatMessage[] {
  const block = (side: Side) =>
    OXFORD_PHASES.flatMap((phase) => {
      const said = speeches.filter((s) => s.side === side && s.phase === phase);
      return said.length ? [`${side.toUpperCase()}, ${phase}s:`, ...said.map((s) => `[${s.agentId}]${s.shortened ? ' (shortened to fit)' : ''}\n${s.position}`), ''] : [`${side.toUpperCase()}, ${phase}s: no usable speech`, ''];
    });
  return [
    {
      role: 'system',
      content: 'You judge a formal debate. Decide which side made the better case on substance: evidence, reasoning, and how well each side answered the other. Length, confidence and the number of speakers are not merit.',
    },
    {
      role: 'user',
      content: [
        `Motion: ${m.motion}`,
        ...(m.framing === 'open' ? [OPEN_NOTE] : []),
        '',
        ...block('for'),
        ...block('against'),
        'Reply with a JSON object: "strongestFor" and "strongestAgainst" (each {"speaker": the id of a speaker on that side, "argument": its strongest argument in a sentence or two}), "winner" ("for" or "against"), "reasons" (one to five short points on why that side won), "margin" (a whole number from 0 to 100: 0 a coin toss, 100 no contest).',
      ].join('\n'),
    },
  ];
}

/** The synthesizer's section: the motion, the verdict, and the losing side's best point to keep. */
export function oxfordSection(m: Motion, sides: Pick<Sides, 'for' | 'against'>, ruling: Ruling | null): string {
  const head = [
    `This panel held an Oxford debate. ${m.motion}`,
    `For: ${sides.for.join(', ')}. Against: ${sides.against.join(', ')}. The sides were assigned, so a speaker's position is its brief, not its own view; rounds 0, 1 and 2 are the openings, rebuttals and closings.`,
  ];
  if (!ruling) return [...head, 'The judge gave no verdict. Set out the strongest case of each side, say which way the arguments lean and what would decide it, and keep each side\'s best point.'].join('\n');
  return [
    ...head,
    `The judge's verdict: ${ruling.winner.toUpperCase()} the motion, margin ${Math.round(ruling.margin * 100)} of 100. Reasons: ${ruling.reasons.join('; ')}.`,
    `Decisive argument (${ruling.decisive.speaker}, ${ruling.decisive.side}): ${ruling.decisive.argument}`,
    `The losing side's best point (${ruling.losingBest.speaker}, ${ruling.losingBest.side}): ${ruling.losingBest.argument}`,
    `Base the recommendation on the ${ruling.winner} side's case. Keep the losing side's best point as a minority position, credited to ${ruling.losingBest.speaker}, and say what it would take for it to change the answer.`,
  ].join('\n');
}

/** What the judge reads of a speech: an opening's case and reasons, or a later speech with what it conceded and rebutted. */
export function speechText(turn: TurnRecord): string {
  if (turn.opening) return `${turn.opening.position}\nReasons: ${turn.opening.reasoning}`;
  const c = turn.critique;
  const conceded = c?.agreements.length ? `\nConcedes: ${c.agreements.map((a) => `${a.on} (to ${a.with})`).join('; ')}` : '';
  const rebutted = c?.disagreements.length ? `\nRebuts: ${c.disagreements.map((d) => `${d.with} on ${d.on}: ${d.reason}`).join('; ')}` : '';
  return `${turn.position ?? ''}${conceded}${rebutted}`;
}
