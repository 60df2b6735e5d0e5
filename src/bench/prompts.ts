import { z } from 'zod';
import type { ChatMessage } from '../engine/events.js';
import { memoSchema } from '../protocol/grammar.js';
import { systemPrompt } from '../protocol/prompts.js';
import type { SuiteItem } from './suite.js';

const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** What a stand-alone answer call (single agent, self-consistency sample) must return. */
export const benchAnswerSchema = z.strictObject({
  reasoning: z.string().describe('Your working, briefly.'),
  answer: z.string().min(1).describe('The final answer alone: a number, a choice letter, or a short phrase.'),
});

export type BenchAnswer = z.infer<typeof benchAnswerSchema>;

/**
 * The answer call's schema for one kind of item, so the grammar allows only a usable
 * answer: a JSON number for a number item, one of the offered letters for a choice item.
 */
export const benchAnswerSchemaFor = memoSchema((kind: SuiteItem['kind'], choices: number) => {
  const reasoning = z.string().describe('Your working, briefly.');
  if (kind === 'number') return z.strictObject({ reasoning, answer: z.number().describe('The final result as a number.') });
  if (kind === 'choice') {
    const letters = LETTERS.slice(0, Math.max(1, choices)).split('') as [string, ...string[]];
    return z.strictObject({ reasoning, answer: z.enum(letters).describe('The letter of the option you choose.') });
  }
  return benchAnswerSchema;
});

/** How each kind of item asks for its final answer, in words a small model follows. */
function finalAnswerInstruction(item: SuiteItem): string {
  switch (item.kind) {
    case 'number':
      return 'End with the final answer as one plain number, written as `Final answer: N` (keep a minus sign if the result is negative).';
    case 'choice':
      return 'End with the letter of the option you choose, written as `Final answer: (X)`.';
    case 'text':
      return 'End with `Final answer:` followed by the answer in a few words.';
  }
}

/**
 * The question as a bench puts it to a debate: the item's question, its
 * options for a choice item, and a request to end with the final answer.
 */
export function benchQuestion(item: SuiteItem): string {
  const options = item.choices?.map((choice, i) => `(${LETTERS[i]}) ${choice}`) ?? [];
  return [item.question.trim(), ...options, '', finalAnswerInstruction(item)].join('\n');
}

/** How a stand-alone reply states its answer, by the item's kind. */
function answerShape(item: SuiteItem): string {
  if (item.kind === 'number') return '"answer" (the final result as a JSON number, e.g. -42 or 3.5)';
  if (item.kind === 'choice') return '"answer" (the letter of the option you choose, e.g. "B")';
  return '"answer" (the answer in a few words)';
}

/** One agent alone, asked for a JSON reply with its reasoning and the final answer. */
export function answerMessages(item: SuiteItem, persona: string | null | undefined): ChatMessage[] {
  const shape = answerShape(item);
  return [
    { role: 'system', content: systemPrompt(persona) },
    {
      role: 'user',
      content: [
        'Answer the question below on your own.',
        '',
        `Question: ${benchQuestion(item)}`,
        '',
        `Reply with a JSON object: "reasoning" (your working, briefly), ${shape}.`,
      ].join('\n'),
    },
  ];
}

/**
 * A solo agent's system prompt: the persona the panel gave it, or a default that, unlike the
 * debate's, mentions no panel, so the self-correction control never tells an agent peers exist.
 */
export function soloSystemPrompt(persona: string | null | undefined): string {
  return persona && persona.trim() !== '' ? persona.trim() : 'You are a careful, independent analyst. You reason from evidence, say plainly what you do not know, and change your mind only for a better argument.';
}

/**
 * One revision of the self-correction control: the agent re-examines its own latest answer,
 * with nothing from anyone else and no word that anyone else answered. `previous` is null
 * when its last answer could not be used.
 */
export function revisionMessages(item: SuiteItem, persona: string | null | undefined, revision: number, previous: string | null): ChatMessage[] {
  const shape = answerShape(item);
  return [
    { role: 'system', content: soloSystemPrompt(persona) },
    {
      role: 'user',
      content: [
        `Question: ${benchQuestion(item)}`,
        '',
        previous === null ? 'Your previous answer to this question could not be used.' : `Your answer so far:\n${previous}`,
        '',
        `This is revision ${revision}. Re-examine the answer: check each step of the working again, correct any mistake you find, and keep what holds up. Change it only if you find it wrong.`,
        '',
        `Reply with a JSON object: "reasoning" (your working, briefly), ${shape}.`,
      ].join('\n'),
    },
  ];
}
