import type { ChatMessage, RoundJudgement, TurnRecord } from './records.js';
import { clip } from './clip.js';

/** The typed constraints and trade-offs an agent answer may add (src/protocol/constraints.ts). */
export const STATED_FIELDS = ', and if any apply, "constraints" ({"kind": "requires", "prohibits" or "prefers", "subject", "detail"} each) and "tradeOffs" (one line each)';

/**
 * Prompt builders: pure functions from debate state to chat messages.
 * Wording is Conclave's own; every builder states the JSON shape it expects
 * in words as well, because small models follow prose better than grammar alone.
 */

const DEFAULT_PERSONA =
  'You are a careful, independent analyst on a review panel. You reason from evidence, say plainly what you do not know, and change your mind only for a better argument.';

export interface PeerView {
  agentId: string;
  position: string;
  /** Set when the text was cut to fit the context window. */
  shortened?: boolean;
}

export function systemPrompt(persona: string | null | undefined): string {
  return persona && persona.trim() !== '' ? persona.trim() : DEFAULT_PERSONA;
}

export function openingMessages(question: string, persona: string | null | undefined): ChatMessage[] {
  return [
    { role: 'system', content: systemPrompt(persona) },
    {
      role: 'user',
      content: [
        'Answer the question below on your own. Other panelists answer it separately; you will see their answers later.',
        '',
        `Question: ${question}`,
        '',
        `Reply with a JSON object: "position" (your answer in a few sentences, concrete enough to act on), "reasoning" (the main reasons and facts behind it, and the caveats that matter), "confidence" (a whole number from 0 to 100)${STATED_FIELDS}.`,
      ].join('\n'),
    },
  ];
}

/**
 * The simplified request of a quality retry (docs/quality.md): `base` holds only the question
 * and the agent's role (and its part of the question, for a sub-answer), never peers' answers,
 * dependencies or attached material; the note says what a usable answer looks like.
 */
export function retryMessages(base: ChatMessage[]): ChatMessage[] {
  const note = 'Your previous reply to this was too thin to use. Give a position of at least one full sentence, and the reasons behind it.';
  const last = base.at(-1);
  if (!last || last.role !== 'user') return [...base, { role: 'user', content: note }];
  return [...base.slice(0, -1), { role: 'user', content: `${last.content}\n\n${note}` }];
}

export function critiqueMessages(
  question: string,
  persona: string | null | undefined,
  round: number,
  ownPosition: string | null,
  peers: PeerView[],
  clashes = '',
  brief = '',
): ChatMessage[] {
  const peerText = peers
    .map((p) => `[${p.agentId}]${p.shortened ? ' (shortened to fit)' : ''}\n${p.position}`)
    .join('\n\n');
  const ids = peers.map((p) => p.agentId).join(', ');
  return [
    { role: 'system', content: systemPrompt(persona) },
    {
      role: 'user',
      content: [
        `Question: ${question}`,
        '',
        ownPosition ? `Your position after the previous round:\n${ownPosition}` : 'You gave no usable answer in the previous round.',
        '',
        `This is critique round ${round}. Here is what the other panelists said in the previous round:`,
        '',
        peerText,
        '',
        ...(clashes ? [clashes, ''] : []),
        ...(brief ? [brief, ''] : []),
        'Read them critically. Say where you agree with whom, where you disagree with whom and why (argue from substance, not from who said it), then give your updated position. Keep a point you still believe even if everyone else disagrees; change it if a peer showed you are wrong.',
        `Reply with a JSON object: "agreements" (a list of {"with": peer id, "on": the point}), "disagreements" (a list of {"with": peer id, "on": the point, "reason": why}), "updatedPosition" (your position now, complete on its own), "confidence" (a whole number from 0 to 100)${clashes ? ', "clashUpdates" (a list of {"tension": clash id, "stance": "maintain", "narrow" or "concede"}, one per open clash listed)' : ''}${STATED_FIELDS}. Peer ids: ${ids}.`,
      ].join('\n'),
    },
  ];
}

export function judgeMessages(question: string, round: number, positions: PeerView[]): ChatMessage[] {
  const body = positions.map((p) => `[${p.agentId}]${p.shortened ? ' (shortened)' : ''}\n${p.position}`).join('\n\n');
  return [
    {
      role: 'system',
      content:
        'You measure agreement between panelists. You do not judge who is right, and you add no opinion of your own. Score only how close their positions are.',
    },
    {
      role: 'user',
      content: [
        `Question under debate: ${question}`,
        '',
        `Positions after round ${round}:`,
        '',
        body,
        '',
        'First give "rationale": one or two sentences on where they agree and where they still differ.',
        'Then score three things as whole numbers from 0 (complete disagreement) to 100 (complete agreement):',
        '- "recommendation": do they recommend the same central course of action or answer?',
        '- "facts": do they rely on the same key supporting facts?',
        '- "caveats": do they name the same critical caveats and conditions?',
        'Reply with a JSON object with those fields, in that order.',
      ].join('\n'),
    },
  ];
}

export interface TranscriptRound {
  round: number;
  turns: TurnRecord[];
  judgement: RoundJudgement | null;
  /** The agent whose turn this round was devil's advocacy by assignment (docs/protocol-advocate.md), not its own view. */
  advocate?: string | null;
}

/**
 * The debate as the synthesizer reads it: per round, each agent's position and confidence; for
 * round 0 the reasoning behind the answer (clipped to `maxReasoningChars`, left out at 0), and for
 * the critique rounds where each agent agreed and disagreed with its peers.
 */
export function renderTranscript(rounds: TranscriptRound[], maxCharsPerTurn = Infinity, maxReasoningChars = Infinity): string {
  const parts: string[] = [];
  for (const r of rounds) {
    const score = r.judgement?.convergence;
    parts.push(`## Round ${r.round}${score == null ? '' : ` (judge convergence ${score.toFixed(2)})`}`);
    for (const t of r.turns) {
      if (t.status !== 'ok' || !t.position) {
        parts.push(`[${t.agentId}] no usable answer (${t.error ?? t.status})`);
        continue;
      }
      const text = clip(t.position, maxCharsPerTurn);
      const conf = t.confidence == null ? '' : ` (confidence ${t.confidence.toFixed(2)})`;
      const reasoning = t.opening?.reasoning.trim() && maxReasoningChars > 0 ? `\n  reasoning: ${clip(t.opening.reasoning.trim(), Math.min(maxReasoningChars, maxCharsPerTurn))}` : '';
      const agrees = t.critique?.agreements.length ? `\n  agrees: ${t.critique.agreements.map((a) => `${a.with} on ${clip(a.on, 160)}`).join('; ')}` : '';
      const dis = t.critique?.disagreements.length
        ? `\n  disagrees: ${t.critique.disagreements.map((d) => `${d.with} on ${clip(d.on, 160)} because ${clip(d.reason, 200)}`).join('; ')}`
        : '';
      // An advocate's turn argues what it was told to: the synthesizer must not read it as the agent's view.
      const role = t.agentId === r.advocate ? " devil's advocate this round, by assignment: this argues against the majority and is not its own view; do not count it among the positions the recommendation rests on" : '';
      parts.push(`[${t.agentId}]${conf}${role}\n${text}${reasoning}${agrees}${dis}`);
    }
  }
  return parts.join('\n\n');
}

export function synthesisMessages(
  question: string,
  transcript: string,
  agentIds: string[],
  failed: { agent: string; reason: string }[],
  extraSections: string[] = [],
): ChatMessage[] {
  return [
    {
      role: 'system',
      content:
        'You write the final answer of a panel debate. You did not take part. Weigh every panelist equally, attribute views to the panelists who held them, and never drop a well-argued minority view just because it lost the vote.',
    },
    {
      role: 'user',
      content: [
        `Question: ${question}`,
        `Panelists: ${agentIds.join(', ')}`,
        failed.length ? `Panelists with no usable final answer: ${failed.map((f) => `${f.agent} (${f.reason})`).join('; ')}` : 'Every panelist answered.',
        '',
        'Transcript, round by round, with the judge\'s convergence score (agreement only, not correctness):',
        '',
        transcript,
        '',
        ...extraSections.flatMap((section) => [section, '']),
        'Reply with a JSON object:',
        '- "recommendation": the answer the panel\'s arguments support, concrete enough to act on. Where the panel is split on a point the answer depends on, say so in the recommendation and name what would decide it; do not smooth a disagreement into a consensus the transcript does not show.',
        '- "triggersToRevisit": conditions under which this answer should be reconsidered.',
        '- "confidence": {"level": "high" | "medium" | "low", "converged": how many panelists ended on the recommendation}.',
        '- "restsOn": the ids of the panelists whose final positions the recommendation rests on.',
        '- "minorityPositions": for each substantive dissent, {"agent", "round" (the round where it was argued best), "argument", "whyItMatters"}. Include dissents that were later abandoned if the risk they named is still real.',
        '- "failedAgents": {"agent", "reason"} for each panelist without a usable answer.',
      ].join('\n'),
    },
  ];
}

export function repairMessages(original: ChatMessage[], badReply: string, problem: string): ChatMessage[] {
  return [
    ...original,
    { role: 'assistant', content: badReply },
    {
      role: 'user',
      content: `That reply could not be used: ${problem}\nReply again with only the JSON object, with every required field filled in and nothing else.`,
    },
  ];
}
