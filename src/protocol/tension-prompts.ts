import type { ChatMessage } from './records.js';
import { clip } from './clip.js';
import { systemPrompt } from './prompts.js';
import { type Claim, type Pair, SEVERITY_BANDS, type Tension, type TargetedExchange, type TensionMap, bySeverity, resolutionText } from './tensions.js';

/**
 * Prompt builders of the tension map: pure functions from debate state to messages.
 * The wording asks for accuracy over tidiness on purpose: a map that reads settled
 * when the panel is not is the failure this stage exists to prevent.
 */

/** Tensions listed to the synthesizer at most, most severe first. */
export const MAX_TENSIONS_FOR_SYNTHESIS = 12;
/** Tensions listed to the map model at most: the rest stay on the map, which the engine assembles. */
export const MAX_TENSIONS_FOR_MAP = 24;

const band = (type: keyof typeof SEVERITY_BANDS): string => `${SEVERITY_BANDS[type].min} to ${SEVERITY_BANDS[type].max}`;

export function claimsMessages(question: string, agentId: string, answer: string, maxClaims: number): ChatMessage[] {
  return [
    {
      role: 'system',
      content:
        "You read one panelist's answer and list the claims it stands on. You add nothing of your own, and you do not judge whether the claims are true.",
    },
    {
      role: 'user',
      content: [
        `Question under debate: ${question}`,
        `Panelist: ${agentId}`,
        '',
        "The panelist's final answer:",
        '"""',
        answer,
        '"""',
        '',
        `List its load-bearing claims: the assertions that would change the panelist's conclusion if they turned out false. Leave out background, wording and hedges. Write each claim as one self-contained sentence in the panelist's own terms (not "they argue that"). At most ${maxClaims}, most important first.`,
        'Reply with a JSON object: "claims" (a list of strings).',
      ].join('\n'),
    },
  ];
}

function claimLines(claims: readonly Claim[], agents?: ReadonlySet<string>): string {
  return claims
    .filter((c) => !agents || agents.has(c.agentId))
    .map((c) => `[${c.id}] ${c.agentId}: ${clip(c.text, 400)}`)
    .join('\n');
}

export function clashMessages(question: string, claims: readonly Claim[], pairs: readonly Pair[]): ChatMessage[] {
  const agents = new Set(pairs.flat());
  return [
    {
      role: 'system',
      content:
        'You compare the claims of panelists and classify every real disagreement between them. You do not decide who is right. You never soften or merge a disagreement, and you never invent one out of a difference in wording.',
    },
    {
      role: 'user',
      content: [
        `Question under debate: ${question}`,
        '',
        'Claims, by panelist, with their ids:',
        claimLines(claims, agents),
        '',
        `Compare these pairs of panelists, and only these: ${pairs.map(([a, b]) => `${a} with ${b}`).join('; ')}.`,
        'For each pair, find the claims of one that conflict with claims of the other. Decide the type of each conflict first, then score it inside that type\'s range:',
        `- "factual": the two claims cannot both be true (severity ${band('factual')}).`,
        `- "interpretive": they accept the same facts but read them differently or draw different conclusions (severity ${band('interpretive')}).`,
        `- "emphasis": they hold the same view but weigh or rank it differently (severity ${band('emphasis')}).`,
        'For each conflict give: "claimA" and "claimB" (claim ids, one from each panelist of the pair), "type", "severity" (a whole number in the type\'s range), "loadBearing" (true if settling it would change a panelist\'s conclusion), "resolvable" (true if more information or evidence could settle it; false if it comes down to values or judgement), "recommendation" (one sentence: how the person deciding should weigh it).',
        'A pair with no real conflict gets no entry. A difference of wording alone is not a conflict.',
        'Reply with a JSON object: "clashes" (a list, empty if there are none).',
      ].join('\n'),
    },
  ];
}

/**
 * How a targeted exchange frames a clash, by its type (seed 000): a factual clash is settled by
 * evidence, an interpretive one by showing which reading the shared facts support better, an
 * emphasis one by saying what the weighting depends on. Only a factual clash is put as two
 * claims that cannot both be true, so a judgement call is never argued as if it were a fact.
 */
const CLASH_FRAMES: Record<Tension['type'], { conflict: (opponent: string) => string; engage: string; outcomes: string }> = {
  factual: {
    conflict: (o) => `cannot be true at the same time as one of ${o}'s, and the conclusion turns on which of them holds.`,
    engage: 'say what in it is right or wrong and why, with the evidence or reasoning that decides the point',
    outcomes: 'If their claim holds, concede it; if part of it holds, narrow your claim to what survives; keep yours only if you can show where theirs fails.',
  },
  interpretive: {
    conflict: (o) => `reads the same facts differently from one of ${o}'s: you draw different conclusions from them, and the conclusion turns on which reading is sounder.`,
    engage: 'say which facts you both accept, where your readings part, and why yours fits those facts better or worse than theirs',
    outcomes: 'If their reading is sounder, concede; if each holds under different conditions, narrow your claim to the conditions where yours holds; keep yours only if you can show why their reading fits the facts worse. A difference of judgement that no evidence settles is worth saying so.',
  },
  emphasis: {
    conflict: (o) => `weighs the same concern differently from one of ${o}'s: you agree on what matters but not on how much.`,
    engage: 'say what your weighting depends on (the situation, the risk, the cost) and when theirs would be the right one',
    outcomes: 'If their weighting fits this question better, concede; if it depends on the situation, narrow your claim to when yours applies; keep yours only if you can show why this question calls for it. This is a matter of judgement: do not present it as settled fact.',
  },
};

/** The targeted question to one of the two agents of a clash: engage the other's exact claim, framed by the clash's type. */
export function targetedMessages(
  question: string,
  persona: string | null | undefined,
  t: Tension,
  agentId: string,
  userConstraints: readonly string[] = [],
): { messages: ChatMessage[]; ownClaim: string; opposingClaim: string; opponentId: string } {
  const mine = agentId === t.agentA;
  const ownClaim = mine ? t.claimA : t.claimB;
  const opposingClaim = mine ? t.claimB : t.claimA;
  const opponentId = mine ? t.agentB : t.agentA;
  const frame = CLASH_FRAMES[t.type];
  const prompt = [
    `Question under debate: ${question}`,
    ...(userConstraints.length ? ['', 'The user set these constraints; they outrank any panelist\'s view:', ...userConstraints.map((c) => `- ${c}`)] : []),
    '',
    `Reviewing the panel showed that one of your claims ${frame.conflict(opponentId)}`,
    '',
    `Your claim: "${ownClaim}"`,
    `${opponentId}'s claim: "${opposingClaim}"`,
    '',
    `Engage ${opponentId}'s claim head on: ${frame.engage}. Do not simply repeat your position. ${frame.outcomes}`,
    'Reply with a JSON object: "response" (your engagement with their claim), "stance" ("maintain", "narrow" or "concede"), "revisedClaim" (your claim as you hold it now), "confidence" (a whole number from 0 to 100).',
  ].join('\n');
  return {
    messages: [
      { role: 'system', content: systemPrompt(persona) },
      { role: 'user', content: prompt },
    ],
    ownClaim,
    opposingClaim,
    opponentId,
  };
}

function tensionLine(t: Tension): string {
  const tags = [t.type, `severity ${t.severity}`, t.loadBearing ? 'load-bearing' : 'not load-bearing', t.resolvable ? 'resolvable with more information' : 'a matter of judgement'];
  const state = t.resolution === 'open' ? '' : ` [${resolutionText(t)}]`;
  return `${t.id} (${tags.join(', ')}): ${t.agentA} [${t.claimAId}] "${clip(t.claimA, 300)}" against ${t.agentB} [${t.claimBId}] "${clip(t.claimB, 300)}"${state}`;
}

/**
 * The part of a critique prompt that puts to an agent the open clashes it is a party to
 * (found on the round-0 answers), asking for its stance on each in `clashUpdates`.
 */
export function critiqueClashSection(agentId: string, clashes: readonly Tension[]): string {
  if (clashes.length === 0) return '';
  const lines = ['Open clashes you are a party to (found by comparing the opening answers), most severe first:'];
  for (const t of clashes) {
    const mine = t.agentA === agentId;
    lines.push(
      `- ${t.id} (${t.type}, severity ${t.severity}): you hold "${clip(mine ? t.claimA : t.claimB, 300)}"; ${mine ? t.agentB : t.agentA} holds "${clip(mine ? t.claimB : t.claimA, 300)}"`,
    );
  }
  lines.push(
    'Engage these in your critique. For each, say in "clashUpdates" whether you "maintain" your claim, "narrow" it, or "concede" that the other side is right. Concede only if you are persuaded.',
  );
  return lines.join('\n');
}

function exchangeLines(x: TargetedExchange): string[] {
  const lines = [`Targeted exchange on ${x.tensionId}: ${x.agents.join(' and ')} were each shown the other's claim.`];
  for (const turn of x.turns) {
    if (turn.reply) lines.push(`- ${turn.agentId} (${turn.reply.stance}): ${clip(turn.reply.response, 500)} Now holds: "${clip(turn.reply.revisedClaim, 300)}"`);
    else lines.push(`- ${turn.agentId}: no usable answer (${turn.error ?? 'failed'})`);
  }
  lines.push(`Outcome: ${x.outcome === 'resolved' ? 'resolved' : x.outcome === 'narrowed' ? 'narrowed but not resolved' : 'not resolved'}.`);
  return lines;
}

export function mapMessages(
  question: string,
  agents: readonly string[],
  claims: readonly Claim[],
  tensions: readonly Tension[],
  exchange: TargetedExchange | null,
): ChatMessage[] {
  return [
    {
      role: 'system',
      content:
        'You draw the map of a panel debate: where the panelists agree and what is still open. Accuracy comes before tidiness: a map that looks settled when the panel is not is a wrong map. The conflicts listed to you were found separately and stay on the map whatever you write; do not explain them away.',
    },
    {
      role: 'user',
      content: [
        `Question: ${question}`,
        `Panelists: ${agents.join(', ')}`,
        '',
        'Claims by panelist:',
        claimLines(claims),
        '',
        tensions.length ? 'Conflicts found between panelists, most severe first:' : 'No conflicts were found between the panelists\' claims.',
        ...bySeverity(tensions).slice(0, MAX_TENSIONS_FOR_MAP).map(tensionLine),
        ...(tensions.length > MAX_TENSIONS_FOR_MAP ? [`(${tensions.length - MAX_TENSIONS_FOR_MAP} less severe conflicts not shown; they stay on the map.)`] : []),
        ...(exchange ? ['', ...exchangeLines(exchange)] : []),
        '',
        'Write:',
        '- "headline": one sentence on the state of play. Say it plainly; do not open with "it depends" or "both sides".',
        '- "consensus": claims that two or more panelists share, each {"claim", "supportingAgents" (panelist ids), "confidence" (a whole number from 0 to 100: how solid the agreement is), "loadBearing" (does it affect the conclusion)}.',
        '- "majorFindings": 3 to 5 substantive conclusions a decision-maker needs.',
        '- "openQuestions": what is still unsettled, including every open conflict and every conflict the targeted exchange did not resolve.',
        '- "confidence": one entry per panelist, {"agent", "confidence" (a whole number from 0 to 100: how well-founded that panelist\'s contribution is)}. Never one overall score.',
        'Reply with a JSON object with exactly those five fields.',
      ].join('\n'),
    },
  ];
}

/** The section the synthesizer reads, so its final answer keeps the conflicts. */
export function tensionSynthesisSection(map: TensionMap, exchange: TargetedExchange | null = null): string {
  const lines = ['Tension map (drawn from the panelists\' load-bearing claims, compared pair by pair):'];
  lines.push(`Headline: ${map.synthesis.headline}`);
  if (map.tensions.length === 0) lines.push('No tensions were found.');
  // A big panel can produce dozens of clashes; the synthesizer's context gets the ones that matter.
  const shown = bySeverity(map.tensions).slice(0, MAX_TENSIONS_FOR_SYNTHESIS);
  for (const t of shown) {
    lines.push(`- ${tensionLine(t)} Weigh it: ${clip(t.recommendation, 300)}`);
  }
  const left = map.tensions.length - shown.length;
  if (left > 0) lines.push(`(${left} less severe tension${left === 1 ? '' : 's'} left out here; they are on the stored map.)`);
  if (exchange) lines.push(...exchangeLines(exchange));
  for (const z of map.consensus) lines.push(`- Agreed by ${z.supportingAgents.join(', ')}: ${z.claim}`);
  if (map.synthesis.openQuestions.length) lines.push(`Open questions: ${map.synthesis.openQuestions.join(' | ')}`);
  if (map.review.flagged) lines.push(`This map is flagged for human review: ${map.review.reasons.map((r) => r.detail).join('; ')}.`);
  lines.push(
    'Keep these conflicts in your answer: do not describe the panel as agreeing on a point listed as a conflict, and put every unresolved factual or interpretive conflict in minorityPositions or triggersToRevisit.',
  );
  return lines.join('\n');
}
