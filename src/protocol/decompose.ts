import { z } from 'zod';
import type { ChatMessage } from './records.js';
import { STATED_FIELDS, systemPrompt, type PeerView } from './prompts.js';
import { withFallbackNote } from './fallback.js';

/**
 * Hierarchical decomposition, pure parts: the split schema (built per call, bounded by the
 * preset), the dependency rule (only earlier sub-questions), round-robin assignment, the
 * order of dispatch, and the prompts for splitting, answering a part and reassembling.
 * Sub-questions are numbered from 1 in prompts, records and documents alike.
 */

export function splitSchema(maxSubQuestions: number) {
  return z.strictObject({
    subQuestions: z
      .array(
        z.strictObject({
          question: z.string().min(1).describe('A self-contained part of the question.'),
          dependsOn: z.array(z.number().int().min(1).max(maxSubQuestions)).describe('Numbers of earlier sub-questions whose answers this one needs.'),
        }),
      )
      .min(1)
      .max(maxSubQuestions),
  });
}

export type Split = z.infer<ReturnType<typeof splitSchema>>;

export interface SubQuestion {
  /** 1-based. */
  index: number;
  question: string;
  /** Valid dependencies only: earlier sub-questions. */
  dependsOn: number[];
  assignee: string;
}

/**
 * Keeps only dependencies on earlier sub-questions (the grammar cannot express "earlier"),
 * assigns the parts to `workers` in turn, and says what it dropped.
 */
export function planSubQuestions(split: Split, workers: string[]): { subQuestions: SubQuestion[]; notes: string[] } {
  const notes: string[] = [];
  const subQuestions = split.subQuestions.map((s, i) => {
    const index = i + 1;
    const kept: number[] = [];
    for (const d of s.dependsOn) {
      if (d >= index) notes.push(`sub-question ${index}: dependency on ${d} dropped (only earlier sub-questions can be dependencies)`);
      else if (!kept.includes(d)) kept.push(d);
    }
    return { index, question: s.question, dependsOn: kept.sort((a, b) => a - b), assignee: workers[i % workers.length]! };
  });
  return { subQuestions, notes };
}

/** Why a sub-question cannot run: the first of its dependencies that has no answer. */
export function blockedBy(sub: SubQuestion, failed: ReadonlyMap<number, string>): string | null {
  for (const d of sub.dependsOn) {
    const why = failed.get(d);
    if (why !== undefined) return `depends on sub-question ${d}, which has no answer (${why})`;
  }
  return null;
}

export function splitMessages(question: string, persona: string | null | undefined, workers: string[], maxSubQuestions: number): ChatMessage[] {
  return [
    { role: 'system', content: systemPrompt(persona) },
    {
      role: 'user',
      content: [
        `Question: ${question}`,
        '',
        `Split this question into at most ${maxSubQuestions} sub-questions that together answer it. ${workers.length} other panelist${workers.length === 1 ? '' : 's'} will each answer some of them; you will then put the answers together.`,
        'Make each sub-question self-contained. Number them from 1 in the order listed. A sub-question that needs the answer of another must come after it and list that number in "dependsOn"; keep dependencies to the ones really needed, since independent sub-questions are answered at the same time.',
        'Reply with a JSON object: "subQuestions", a list of {"question", "dependsOn" (a list of numbers of earlier sub-questions, often empty)}.',
      ].join('\n'),
    },
  ];
}

export function subAnswerMessages(question: string, persona: string | null | undefined, sub: SubQuestion, inputs: PeerView[]): ChatMessage[] {
  const given = inputs.map((p) => `[${p.agentId}]${p.shortened ? ' (shortened to fit)' : ''}\n${p.position}`).join('\n\n');
  return [
    { role: 'system', content: systemPrompt(persona) },
    {
      role: 'user',
      content: [
        `The panel is answering this question: ${question}`,
        `It was split into parts. Yours is sub-question ${sub.index}: ${sub.question}`,
        ...(inputs.length ? ['', 'Answers to the sub-questions yours depends on:', '', given] : []),
        '',
        'Answer your sub-question only, on your own.',
        `Reply with a JSON object: "position" (your answer in a few sentences, concrete enough to act on), "reasoning" (the main reasons and facts behind it, and the caveats that matter), "confidence" (a whole number from 0 to 100)${STATED_FIELDS}.`,
      ].join('\n'),
    },
  ];
}

/**
 * The decomposer's fallback for a part whose assignee gave no usable answer (seed 002): the same
 * sub-question, with the failure named, asked of the orchestrator so the parts after it can go
 * on. Its answer is recorded as a fallback, never as the assignee's.
 */
export function fallbackMessages(question: string, persona: string | null | undefined, sub: SubQuestion, inputs: PeerView[], failedAgent: string, failure: string): ChatMessage[] {
  return withFallbackNote(subAnswerMessages(question, persona, sub, inputs), [
    `${failedAgent}, who was assigned sub-question ${sub.index}, gave no usable answer (${failure}).`,
    'You split the question, so give a fallback analysis of this part yourself: the parts after it depend on it.',
    'Keep it to what you can support, and say in the reasoning what a full answer would still need to check.',
  ]);
}

export function reassemblyMessages(
  question: string,
  persona: string | null | undefined,
  answers: PeerView[],
  gaps: string[],
  panel: string[],
  constraints: string | null = null,
): ChatMessage[] {
  const body = answers.map((p) => `${p.agentId}${p.shortened ? ' (shortened to fit)' : ''}\n${p.position}`).join('\n\n');
  return [
    { role: 'system', content: systemPrompt(persona) },
    {
      role: 'user',
      content: [
        `Question: ${question}`,
        `Panelists: ${panel.join(', ')}`,
        '',
        'You split this question into sub-questions; the panel answered them. Here is every answer:',
        '',
        body,
        ...(gaps.length ? ['', 'Sub-questions without an answer:', ...gaps.map((g) => `- ${g}`)] : []),
        ...(constraints ? ['', constraints] : []),
        '',
        'Put the answers together into one answer to the question. Attribute points to the panelists who made them; where the parts conflict or leave a gap, say so rather than smoothing it over.',
        'Reply with a JSON object:',
        '- "recommendation": the answer to the whole question, stated so someone can act on it.',
        '- "triggersToRevisit": conditions under which this answer should be reconsidered.',
        '- "confidence": {"level": "high" | "medium" | "low", "converged": how many panelists\' answers support the recommendation}.',
        '- "minorityPositions": for each answer that pulls against the recommendation, {"agent", "round" (its sub-question number), "argument", "whyItMatters"}.',
        '- "failedAgents": {"agent", "reason"} for each panelist whose part has no answer.',
      ].join('\n'),
    },
  ];
}
