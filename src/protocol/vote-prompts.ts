import { z } from 'zod';
import { boundedText, percent as percentScore } from './grammar.js';
import type { ChatMessage } from './records.js';
import { clip } from './clip.js';
import { systemPrompt } from './prompts.js';
import type { ContextualSuperposition, SuperpositionEntry } from './voting.js';

/**
 * Prompts and reply schemas of the cluster vote: pure functions, wording our own.
 * The voter never learns who wrote the position it judges, so it votes on the text.
 */

/** Positions are clipped to this many characters in vote and refinement prompts, and for the synthesizer. */
export const MAX_ARTIFACT_CHARS = 2400;

// Not strict: a small model that adds a field still cast a readable vote. `reason` is required, so
// the grammar has the model write it before the vote (it writes required fields first); it may be empty.
export const voteSchema = z.object({
  reason: boundedText(400).describe('One sentence on why, from your perspective.'),
  vote: z.enum(['YES', 'NO']).describe('YES to endorse the position, NO otherwise.'),
});

export const refineSchema = z.strictObject({
  refinedPosition: z.string().min(1).describe('Your refined position, complete on its own.'),
  confidence: percentScore().describe('How sure you are now, from 0 to 100.'),
});

export type VoteReply = z.infer<typeof voteSchema>;
export type RefineReply = z.infer<typeof refineSchema>;

/** Marks the text under review so that it cannot be mistaken for instructions. */
export const REVIEW_OPEN = '<<<POSITION';
export const REVIEW_CLOSE = 'POSITION>>>';

export function voteMessages(question: string, persona: string | null | undefined, ownPosition: string | null, artifact: string): ChatMessage[] {
  return [
    { role: 'system', content: systemPrompt(persona) },
    {
      role: 'user',
      content: [
        `Question: ${question}`,
        '',
        'The debate is over. Each panelist\'s final position now goes to a vote, and you are one of the voters.',
        '',
        ownPosition ? `Your own final position, for reference:\n${clip(ownPosition, MAX_ARTIFACT_CHARS)}` : 'You ended the debate without a usable position of your own.',
        '',
        'The position to vote on, written by another panelist:',
        REVIEW_OPEN,
        clip(artifact, MAX_ARTIFACT_CHARS),
        REVIEW_CLOSE,
        '',
        'Judge it from your own perspective and expertise: would you back this position, argument and all, as part of the panel\'s answer? A position can differ from yours and still deserve a YES if its reasoning holds; a popular position deserves a NO if you think it is wrong or unsafe.',
        'Reply with a JSON object: first "reason" (one sentence), then "vote" ("YES" to endorse it, "NO" otherwise).',
      ].join('\n'),
    },
  ];
}

export function refineMessages(
  question: string,
  persona: string | null | undefined,
  ownPosition: string,
  commonGround: readonly string[],
): ChatMessage[] {
  return [
    { role: 'system', content: systemPrompt(persona) },
    {
      role: 'user',
      content: [
        `Question: ${question}`,
        '',
        `Your position at this point:\n${clip(ownPosition, MAX_ARTIFACT_CHARS)}`,
        '',
        'The panel voted on every position, cluster by cluster. These positions were endorsed by clusters with opposing perspectives, so they are common ground that survived scrutiny from more than one side:',
        '',
        ...commonGround.map((text, i) => `(${i + 1}) ${clip(text, MAX_ARTIFACT_CHARS)}`),
        '',
        'Refine your position. Build on the common ground where you accept it, keep the points you still hold and say why, and drop what did not stand up. The result must make sense to someone who has not read the debate.',
        'Reply with a JSON object: "refinedPosition" (your refined position) and "confidence" (a whole number from 0 to 100).',
      ].join('\n'),
    },
  ];
}

export interface SectionArtifact {
  id: string;
  authorId: string;
  text: string;
}

/**
 * The vote as the synthesizer reads it: Consensus grounds the answer (persuasive
 * positions emphasised), Polar positions come with the clusters that back them,
 * Reject positions are named only so that the synthesizer leaves them out.
 */
export function superpositionSection<A extends SectionArtifact>(
  superposition: ContextualSuperposition<A>,
  clusters: readonly { id: string; members: readonly string[]; threshold: number }[],
): string {
  const lines: string[] = [];
  const panel = clusters.map((c) => `${c.id} (${c.members.join(', ')})`).join('; ');
  const thresholds = new Set(clusters.map((c) => c.threshold));
  const rule =
    thresholds.size === 1
      ? `at least ${percent(clusters[0]?.threshold ?? 0.5)} of its votes are YES`
      : `enough of its votes are YES (${clusters.map((c) => `${c.id} ${percent(c.threshold)}`).join(', ')})`;
  lines.push(
    'Cluster vote on the final positions.',
    `The panelists sit in clusters with different perspectives: ${panel}. Each panelist voted YES or NO on every other panelist's final position; a cluster approves a position when ${rule}.`,
    '',
  );
  if (superposition.ground.length > 0) {
    lines.push('GROUND the recommendation on these positions, which won approval across clusters (Consensus). Lead with the ones marked EMPHASISE: they convinced a cluster other than their author\'s.');
    for (const entry of superposition.ground) lines.push(entryLine(entry));
  } else {
    lines.push('No position won approval across clusters. Say so in the recommendation, and lower the confidence accordingly.');
  }
  lines.push('');
  if (superposition.contextualize.length > 0) {
    lines.push('POLAR positions, backed by some clusters and not others. Use them only with attribution, e.g. "from the <cluster> side, ...", never as the panel\'s view:');
    for (const entry of superposition.contextualize) lines.push(entryLine(entry));
    lines.push('');
  }
  if (superposition.excluded.length > 0) {
    const n = superposition.excluded.length;
    lines.push(`EXCLUDED: the final position${n === 1 ? '' : 's'} of ${superposition.excluded.join(', ')} ${n === 1 ? 'was' : 'were'} rejected across clusters (Reject tier). Do not build the answer on ${n === 1 ? 'it' : 'them'}.`);
  }
  return lines.join('\n').trimEnd();
}

function entryLine(entry: SuperpositionEntry<SectionArtifact>): string {
  const approvedBy = entry.approvalSet.length > 0 ? entry.approvalSet.join(' and ') : 'no cluster';
  const tags = [`by ${entry.artifact.authorId}`, `approved by ${approvedBy}`];
  if (entry.action === 'emphasize') tags.push('EMPHASISE');
  if (entry.tier === 'consensus' && !entry.fullConsensus && entry.dissentingClusters.length > 0) {
    tags.push(`not approved by ${entry.dissentingClusters.join(' and ')}`);
  }
  return `- [${tags.join('; ')}] ${clip(entry.artifact.text.replace(/\s+/g, ' ').trim(), MAX_ARTIFACT_CHARS)}`;
}

function percent(value: number): string {
  return `${Math.round(value * 100)}%`;
}
