import { z } from 'zod';
import type { Preset, ProtocolKind } from '../config/preset-schema.js';
import { boundedText } from './grammar.js';
import type { ChatMessage } from './records.js';

/**
 * `protocol.kind: auto`: before any panel call, an advisor model classifies the question (the
 * domains it touches, whether its parts stand alone or depend on each other, how deep to go)
 * and chooses among Conclave's own protocols, depth and execution pattern, through a schema
 * whose enums are exactly those choices. The engine then runs what it chose. Pure: no I/O.
 */

export const depths = ['shallow', 'deep'] as const;
export const patterns = ['single-domain', 'multi-domain', 'cross-system'] as const;
export type ExecutionPattern = (typeof patterns)[number];

/**
 * Default token budget of each execution pattern, for a preset that sets none. After seed 002's
 * ladder (about 12K, 17K and 35K tokens for one domain, several, and several systems), doubled
 * and more for local models, whose replies run longer, and for panels of three to six.
 */
export const PATTERN_BUDGETS: Readonly<Record<ExecutionPattern, number>> = {
  'single-domain': 24_000,
  'multi-domain': 48_000,
  'cross-system': 96_000,
};

const PROTOCOL_TEXT: Readonly<Record<ProtocolKind, string>> = {
  debate: 'debate: every panelist answers, then critiques the others in rounds until they converge; for contested questions where the reasons matter',
  parallel: 'parallel: every panelist answers once and a synthesizer merges the answers; for questions with one clear answer where breadth is enough',
  tournament: 'tournament: the answers meet in pairwise matches judged one against one; for choosing the best of several competing options',
  decompose: 'decompose: the question is split into sub-questions answered separately, then reassembled; for questions made of distinct parts',
  pipeline: 'pipeline: a lead plans, reviewers review, a filter reduces the findings; for reviewing a plan, a design or a change',
  delphi: 'delphi: panelists revise their answers in anonymous rounds, reading the others\' answers (and their median) without names; for estimates and forecasts where a panel should not anchor on who said what',
};

export interface Advice {
  domains: string[];
  parts: 'one' | 'independent' | 'dependent';
  protocol: ProtocolKind;
  depth: (typeof depths)[number];
  pattern: ExecutionPattern;
  reason: string;
}

/** The advisor's schema: its protocol an enum of the ones this panel can run. */
export function adviceSchemaFor(choices: readonly ProtocolKind[]): z.ZodType<Advice> {
  return z.strictObject({
    domains: z.array(boundedText(60)).max(5).describe('The domains the question touches, a few words each.'),
    parts: z.enum(['one', 'independent', 'dependent']).describe('one: a single question; independent: parts that stand alone; dependent: parts that build on each other.'),
    protocol: z.enum(choices as [ProtocolKind, ...ProtocolKind[]]).describe('The protocol to run.'),
    depth: z.enum(depths).describe('shallow: a quick answer is enough; deep: worth the full rounds or sub-questions.'),
    pattern: z.enum(patterns).describe('single-domain, multi-domain, or cross-system (several systems whose constraints must agree).'),
    reason: boundedText(300).describe('One sentence on why.'),
  }) as unknown as z.ZodType<Advice>;
}

/** The advisor's prompt: the question and the choices, each with what it is for. */
export function adviceMessages(question: string, choices: readonly ProtocolKind[], panel: readonly string[]): ChatMessage[] {
  return [
    {
      role: 'system',
      content: 'You route questions to the way a panel of models should work on them. You do not answer the question.',
    },
    {
      role: 'user',
      content: [
        `Question: ${question}`,
        `Panel: ${panel.length} panelists (${panel.join(', ')}).`,
        '',
        'Classify the question, then choose how the panel works on it:',
        ...choices.map((k) => `- ${PROTOCOL_TEXT[k]}`),
        '',
        'Reply with a JSON object: "domains" (the domains it touches), "parts" ("one", "independent" or "dependent"), "protocol" (one of the above), "depth" ("shallow" or "deep"), "pattern" ("single-domain", "multi-domain" or "cross-system"), "reason" (one sentence).',
      ].join('\n'),
    },
  ];
}

/**
 * The preset as the advice runs it: the protocol chosen; a shallow debate holds at most 2
 * critique rounds and a shallow decomposition at most 3 sub-questions; the pattern's budget
 * when the preset sets none.
 */
export function applyAdvice(preset: Preset, advice: Advice): Preset {
  const protocol = { ...preset.protocol, kind: advice.protocol };
  if (advice.depth === 'shallow') {
    if (advice.protocol === 'debate') protocol.maxRounds = Math.min(protocol.maxRounds, 2);
    if (advice.protocol === 'decompose') protocol.maxSubQuestions = Math.min(protocol.maxSubQuestions ?? 6, 3);
  }
  if (protocol.tokenBudget === undefined) protocol.tokenBudget = PATTERN_BUDGETS[advice.pattern];
  // Seed 002 hands the classification to every prompt after it: the agents and the synthesizer read it as the run's brief.
  protocol.brief = [preset.protocol.brief, adviceBrief(advice)].filter(Boolean).join('\n');
  return { ...preset, protocol };
}

const PARTS_TEXT: Readonly<Record<Advice['parts'], string>> = {
  one: 'it is a single question',
  independent: 'its parts stand alone',
  dependent: 'its parts build on each other, so an answer must keep them consistent',
};

const PATTERN_TEXT: Readonly<Record<ExecutionPattern, string>> = {
  'single-domain': 'it stays within one domain',
  'multi-domain': 'it spans several domains, each with its own expertise',
  'cross-system': 'it crosses several systems whose constraints must agree with each other',
};

/** The advisor's classification in words, as the agents and the synthesizer read it. */
export function adviceBrief(advice: Advice): string {
  const domains = advice.domains.length ? `It touches ${advice.domains.join(', ')}; ` : '';
  const depth = advice.depth === 'deep' ? 'it is worth a thorough answer' : 'a concise answer is enough';
  return `${domains}${PARTS_TEXT[advice.parts]}; ${PATTERN_TEXT[advice.pattern]}; ${depth}.`;
}

/** The advice in words: `debate (deep, multi-domain; budget 48,000 tokens): reason`. */
export function adviceText(advice: Advice, budget: number | undefined): string {
  return `${advice.protocol} (${advice.depth}, ${advice.pattern}${budget ? `; budget ${budget.toLocaleString('en-US')} tokens` : ''}): ${advice.reason}`;
}
