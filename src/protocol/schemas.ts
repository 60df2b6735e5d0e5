import { z } from 'zod';
import { constraintKinds } from './constraints.js';
import { boundedText, idEnum, memoSchema, percent } from './grammar.js';

/**
 * What each model is asked to return. These zod schemas are the single source
 * of truth: the JSON Schema sent as Ollama's `format` is generated from them,
 * and every reply is validated with them.
 *
 * Two rules come from the grammar the server builds from that JSON Schema: a score is an integer
 * with bounds (`percent()`, read as 0 to 1), since bounds on a `number` are not enforced; and no
 * optional property comes before a required one, since the grammar writes every required property
 * first, so the declared order is the order the model writes in.
 */

/** What an answer requires, prohibits or prefers, about one subject (src/protocol/constraints.ts merges them). */
const constraintShape = z.strictObject({
  kind: z.enum(constraintKinds),
  subject: z.string().min(1).describe('What the constraint is about, as a short noun phrase, e.g. "the primary database".'),
  detail: z.string().describe('The constraint in a sentence.'),
});

/** The typed constraints and trade-offs every agent answer may carry. */
const stated = {
  constraints: z.array(constraintShape).max(6).optional().describe('What your answer requires, prohibits or prefers, each about one subject.'),
  tradeOffs: z.array(z.string().min(1)).max(4).optional().describe('The trade-offs your answer accepts, one line each.'),
};

export const openingSchema = z.strictObject({
  position: z.string().min(1).describe('Your answer to the question, stated plainly.'),
  reasoning: z.string().describe('The main reasons and evidence behind the answer.'),
  confidence: percent().describe('How sure you are, from 0 to 100.'),
  ...stated,
});

/** The stances an agent may take on a clash it is a party to (critique rounds and the targeted exchange). */
export const clashStances = ['maintain', 'narrow', 'concede'] as const;

function clashUpdateShape(tensionId: z.ZodType<string>) {
  return z.strictObject({
    tension: tensionId.describe('Id of an open clash listed in the prompt, e.g. T1.'),
    stance: z.enum(clashStances).describe('maintain: you still hold your claim; narrow: you hold less of it; concede: the other side is right.'),
  });
}

/**
 * Where an agent agrees or disagrees with a peer, `with` naming the peer. A critique's clash
 * updates, when asked for, come before the optional constraints and trade-offs.
 */
function critiqueFields(peer: z.ZodType<string>) {
  return {
    agreements: z
      .array(z.strictObject({ with: peer, on: z.string().min(1) }))
      .describe('Where you agree with a peer: the peer id and the point.'),
    disagreements: z
      .array(z.strictObject({ with: peer, on: z.string().min(1), reason: z.string().min(1) }))
      .describe('Where you disagree with a peer: the peer id, the point, and why.'),
    updatedPosition: z.string().min(1).describe('Your position after reading the peers.'),
    confidence: percent().describe('How sure you are now, from 0 to 100.'),
  };
}

/** The shape of any critique (stored turns, documents); calls use `critiqueSchemaFor`. */
export const critiqueSchema = z.strictObject({
  ...critiqueFields(z.string().min(1)),
  /** The agent's stance on each open clash it was shown; absent when it was shown none. */
  clashUpdates: z.array(clashUpdateShape(z.string().min(1))).optional(),
  ...stated,
});

/**
 * The critique one agent is asked for: `with` is one of the peers it was shown.
 * `others` (the rest of the panel) stands in when no peer answer was usable.
 * `clashIds`, the open clashes the agent is a party to, adds a required `clashUpdates`
 * list (at most one entry per clash) whose ids are limited to them.
 */
export const critiqueSchemaFor = memoSchema((peerIds: readonly string[], others: readonly string[] = [], clashIds: readonly string[] = []) =>
  clashIds.length === 0
    ? z.strictObject({ ...critiqueFields(idEnum(peerIds, others)), ...stated })
    : z.strictObject({
        ...critiqueFields(idEnum(peerIds, others)),
        clashUpdates: z
          .array(clashUpdateShape(idEnum(clashIds)))
          .max(clashIds.length)
          .describe('Your stance on each open clash listed in the prompt.'),
        ...stated,
      }),
);

/** The judge gives its reasons, then scores each axis as an integer from 0 to 100 (read as 0 to 1). */
export const judgeSchema = z.strictObject({
  rationale: boundedText(600).describe('One or two sentences on where they agree and differ.'),
  recommendation: percent().describe('Agreement on the central recommendation, 0 to 100.'),
  facts: percent().describe('Agreement on the key supporting facts, 0 to 100.'),
  caveats: percent().describe('Agreement on the critical caveats, 0 to 100.'),
});

/**
 * The judge's per-round call: its score, and the panel grouped by stance (src/protocol/stances.ts),
 * the agents' ids limited to those whose positions it reads. `stances` is declared after the
 * score's required fields, so the grammar writes it last.
 */
/**
 * The `stances` property of the judge's reply: agents' items are an enum of the ids whose
 * positions the judge reads, and there are at most as many stances as agents.
 */
export function stancesProperty(agentIds: readonly string[]) {
  return z
    .array(
      z.strictObject({
        id: boundedText(16).min(1).describe('A short id for the stance, e.g. S1; reuse the previous round\'s id for the same position.'),
        summary: boundedText(200).min(1).describe('The position in one line.'),
        agents: z.array(idEnum(agentIds)).min(1).max(Math.max(1, agentIds.length)).describe('Ids of the panelists holding it.'),
      }),
    )
    .min(1)
    .max(Math.max(1, agentIds.length))
    .describe('The panelists grouped by the position they hold: every panelist in exactly one stance.');
}

export const judgeSchemaFor = memoSchema((agentIds: readonly string[]) => judgeSchema.extend({ stances: stancesProperty(agentIds) }));

function collisionResolutionShape(collision: z.ZodType<string>) {
  return z.strictObject({
    collision: collision.describe('Id of a collision listed in the prompt, e.g. C1.'),
    resolution: z.string().min(1).describe('How the recommendation resolves it: the side it follows, or how it satisfies both.'),
  });
}

function synthesisShape<R extends z.ZodType<string[] | undefined>>(agent: z.ZodType<string>, round: z.ZodType<number>, converged: z.ZodType<number>, restsOn: R) {
  return z.strictObject({
    recommendation: z.string().min(1),
    triggersToRevisit: z.array(z.string().min(1)),
    /** The model's own statement; the card's confidence is computed by the engine (src/protocol/confidence.ts). */
    confidence: z.strictObject({
      level: z.enum(['high', 'medium', 'low']),
      converged: converged.describe('How many agents ended on the recommendation.'),
    }),
    restsOn,
    minorityPositions: z.array(
      z.strictObject({
        agent,
        round,
        argument: z.string().min(1),
        whyItMatters: z.string().min(1),
      }),
    ),
    failedAgents: z.array(z.strictObject({ agent, reason: z.string() })),
  });
}

/** The shape of any synthesis (stored, documents); calls use `synthesisSchemaFor`. */
export const synthesisSchema = synthesisShape(z.string().min(1), z.number().int().min(0), z.number().int().min(0), z.array(z.string().min(1)).optional()).extend({
  /** How the synthesis resolved each collision of the panel's constraints; absent when there was none. */
  collisionResolutions: z.array(collisionResolutionShape(z.string().min(1))).optional(),
});

/**
 * The synthesis of one debate: panelist ids, rounds held (0..lastRound) and the panel size bound it.
 * `collisionIds`, the collisions of the merged constraints, adds a required `collisionResolutions`
 * list whose ids are limited to them.
 */
export const synthesisSchemaFor = memoSchema((agentIds: readonly string[], lastRound: number, collisionIds: readonly string[] = []) => {
  const shape = synthesisShape(
    idEnum(agentIds),
    z.number().int().min(0).max(Math.max(0, lastRound)),
    z.number().int().min(0).max(agentIds.length),
    z.array(idEnum(agentIds)).describe('Ids of the agents whose final positions the recommendation rests on.'),
  );
  // Typed as any synthesis: the resolutions are there exactly when collisions were listed.
  return (collisionIds.length === 0
    ? shape
    : shape.extend({
        collisionResolutions: z
          .array(collisionResolutionShape(idEnum(collisionIds)))
          .min(1)
          .max(collisionIds.length)
          .describe('For each collision listed in the prompt, how the recommendation resolves it.'),
      })) as unknown as z.ZodType<Synthesis>;
});

export type Opening = z.infer<typeof openingSchema>;
export type Critique = z.infer<typeof critiqueSchema>;
export type JudgeScore = z.infer<typeof judgeSchema>;
/** A judge score with the stances the judge grouped the panel into. */
export type JudgedStances = z.infer<ReturnType<typeof judgeSchemaFor>>;
export type Synthesis = z.infer<typeof synthesisSchema>;

export { formatSchemaOf } from './grammar.js';
