import { z } from 'zod';
import type { Preset, ProtocolKind } from '../config/preset-schema.js';
import { boundedText } from './grammar.js';
import type { ChatMessage } from './records.js';

/**
 * `protocol.kind: auto`: before any panel call, an advisor model classifies the question (the
 * domains it touches, whether its parts stand alone or depend on each other, what is asked of
 * the panel, how deep to go, its execution pattern) through a schema whose enums are exactly
 * those classes. Fixed rules (`routeAdvice`) turn the classification into the protocol, its
 * depth and budget, so a small advisor only has to classify. Pure: no I/O.
 */

export const depths = ['shallow', 'deep'] as const;
/** What the question asks of the panel (seed 002's modes, with `review` for code, a diff or a plan, and `estimate` for a number or a forecast). */
export const modes = ['query', 'analyze', 'compare', 'review', 'estimate'] as const;
export type AdviceMode = (typeof modes)[number];
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
  oxford: 'oxford: two sides argue a motion in openings, rebuttals and closings, and the judge gives a verdict; for testing a yes-or-no proposal against its strongest opposition',
  delphi: 'delphi: panelists revise their answers in anonymous rounds, reading the others\' answers (and their median) without names; for estimates and forecasts where a panel should not anchor on who said what',
};

export interface Advice {
  domains: string[];
  parts: 'one' | 'independent' | 'dependent';
  /** What is asked; absent in records from before the rules chose the protocol. */
  mode?: AdviceMode;
  /** The advisor's own choice, in records from before the rules chose the protocol. */
  protocol?: ProtocolKind;
  depth: (typeof depths)[number];
  pattern: ExecutionPattern;
  reason: string;
}

/** The advisor's schema: a classification only; the rules choose among `choices` from it. */
export function adviceSchemaFor(_choices: readonly ProtocolKind[]): z.ZodType<Advice> {
  return z.strictObject({
    domains: z.array(boundedText(60)).max(5).describe('The domains the question touches, a few words each.'),
    parts: z.enum(['one', 'independent', 'dependent']).describe('one: a single question; independent: parts that stand alone; dependent: parts that build on each other.'),
    mode: z.enum(modes).describe('query: a fact or a how-to; analyze: a question to weigh; compare: pick among named options; review: review code, a diff, a plan or a design; estimate: a number, a quantity or a forecast.'),
    depth: z.enum(depths).describe('shallow: a quick answer is enough; deep: worth the full rounds or sub-questions.'),
    pattern: z.enum(patterns).describe('single-domain, multi-domain, or cross-system (several systems whose constraints must agree).'),
    reason: boundedText(300).describe('One sentence on why.'),
  }) as unknown as z.ZodType<Advice>;
}

/** The protocol the rules chose from a classification, and the rule that chose it, in words. */
export interface Route {
  protocol: ProtocolKind;
  rule: string;
}

/**
 * Seed 002's router as fixed rules, first match wins, each only where the panel can run its
 * protocol: several parts → decompose; a review → pipeline; a pick among options → tournament;
 * an estimate or forecast → delphi; a shallow question within one domain → parallel; anything
 * else → debate.
 */
export function routeAdvice(advice: Advice, choices: readonly ProtocolKind[]): Route {
  const can = (k: ProtocolKind): boolean => choices.includes(k);
  const missed: string[] = [];
  if (advice.parts !== 'one') {
    if (can('decompose')) return { protocol: 'decompose', rule: `parts: ${advice.parts} → decompose (each part answered on its own${advice.parts === 'dependent' ? ', in dependency order' : ''})` };
    missed.push('decompose');
  }
  if (advice.mode === 'review') {
    if (can('pipeline')) return { protocol: 'pipeline', rule: 'mode: review → pipeline (a lead plans, reviewers review)' };
    missed.push('pipeline (it needs agents with roles)');
  }
  if (advice.mode === 'compare') {
    if (can('tournament')) return { protocol: 'tournament', rule: 'mode: compare → tournament (the answers meet one against one)' };
    missed.push('tournament');
  }
  if (advice.mode === 'estimate') {
    if (can('delphi')) return { protocol: 'delphi', rule: "mode: estimate → delphi (anonymous rounds; the panel's median)" };
    missed.push('delphi');
  }
  const unavailable = missed.length ? `; this panel cannot run ${missed.join(' or ')}` : '';
  if (advice.depth === 'shallow' && advice.pattern === 'single-domain' && can('parallel')) {
    return { protocol: 'parallel', rule: `shallow, single-domain → parallel (one answer each, merged)${unavailable}` };
  }
  return { protocol: 'debate', rule: `${advice.depth}, ${advice.pattern}${advice.mode ? `, ${advice.mode}` : ''} → debate (critique rounds until the panel converges)${unavailable}` };
}

/** The advisor's prompt: the question, the panel and the protocols the classification routes to. */
export function adviceMessages(question: string, choices: readonly ProtocolKind[], panel: readonly string[], attached: readonly string[] = []): ChatMessage[] {
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
        // Only the names: a diff or a source file named here is what makes "look at this" a review.
        ...(attached.length ? [`Attached for the panel to read: ${attached.join(', ')}.`] : []),
        '',
        'Classify the question. Your classification decides how the panel works on it, one of:',
        ...choices.map((k) => `- ${PROTOCOL_TEXT[k]}`),
        '',
        'Reply with a JSON object: "domains" (the domains it touches), "parts" ("one" for a single question, "independent" or "dependent" when it asks several things), "mode" ("query", "analyze", "compare" when it asks to pick among named options, "review" when it asks to review code, a diff, a plan or a design, "estimate" when it asks for a number, a quantity or a forecast), "depth" ("shallow" or "deep"), "pattern" ("single-domain", "multi-domain" or "cross-system"), "reason" (one sentence on the classification).',
      ].join('\n'),
    },
  ];
}

/**
 * The preset as the advice runs it, with the protocol `kind` the rules chose: a shallow debate
 * holds at most 2 critique rounds and a shallow decomposition at most 3 sub-questions; when the
 * preset sets no budget, the pattern's, halved for a shallow question.
 */
export function applyAdvice(preset: Preset, advice: Advice, kind: ProtocolKind = advice.protocol ?? 'debate'): Preset {
  const protocol = { ...preset.protocol, kind };
  if (advice.depth === 'shallow') {
    if (kind === 'debate') protocol.maxRounds = Math.min(protocol.maxRounds, 2);
    if (kind === 'decompose') protocol.maxSubQuestions = Math.min(protocol.maxSubQuestions ?? 6, 3);
  }
  if (protocol.tokenBudget === undefined) protocol.tokenBudget = PATTERN_BUDGETS[advice.pattern] / (advice.depth === 'shallow' ? 2 : 1);
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

const MODE_TEXT: Readonly<Record<AdviceMode, string>> = {
  query: 'it asks for a fact or a way to do something',
  analyze: 'it asks for a judgement to weigh',
  compare: 'it asks to pick among options',
  review: 'it asks for a review of code, a change, a plan or a design',
  estimate: 'it asks for a number, a quantity or a forecast',
};

/** The advisor's classification in words, as the agents and the synthesizer read it. */
export function adviceBrief(advice: Advice): string {
  const domains = advice.domains.length ? `It touches ${advice.domains.join(', ')}; ` : '';
  const depth = advice.depth === 'deep' ? 'it is worth a thorough answer' : 'a concise answer is enough';
  const mode = advice.mode ? `${MODE_TEXT[advice.mode]}; ` : '';
  return `${domains}${PARTS_TEXT[advice.parts]}; ${mode}${PATTERN_TEXT[advice.pattern]}; ${depth}.`;
}
