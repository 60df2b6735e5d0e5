import { z } from 'zod';

/**
 * What each model is asked to return. These zod schemas are the single source
 * of truth: the JSON Schema sent as Ollama's `format` is generated from them,
 * and every reply is validated with them.
 */

const unit = z.number().min(0).max(1);

export const openingSchema = z.strictObject({
  position: z.string().min(1).describe('Your answer to the question, stated plainly.'),
  reasoning: z.string().describe('The main reasons and evidence behind the answer.'),
  confidence: unit.describe('How sure you are, from 0 to 1.'),
});

export const critiqueSchema = z.strictObject({
  agreements: z
    .array(z.strictObject({ with: z.string().min(1), on: z.string().min(1) }))
    .describe('Where you agree with a peer: the peer id and the point.'),
  disagreements: z
    .array(z.strictObject({ with: z.string().min(1), on: z.string().min(1), reason: z.string().min(1) }))
    .describe('Where you disagree with a peer: the peer id, the point, and why.'),
  updatedPosition: z.string().min(1).describe('Your position after reading the peers.'),
  confidence: unit.describe('How sure you are now, from 0 to 1.'),
});

export const judgeSchema = z.strictObject({
  recommendation: unit.describe('Agreement on the central recommendation, 0 to 1.'),
  facts: unit.describe('Agreement on the key supporting facts, 0 to 1.'),
  caveats: unit.describe('Agreement on the critical caveats, 0 to 1.'),
  rationale: z.string().describe('One or two sentences on where they agree and differ.'),
});

export const synthesisSchema = z.strictObject({
  recommendation: z.string().min(1),
  triggersToRevisit: z.array(z.string().min(1)),
  confidence: z.strictObject({
    level: z.enum(['high', 'medium', 'low']),
    converged: z.number().int().min(0).describe('How many agents ended on the recommendation.'),
  }),
  minorityPositions: z.array(
    z.strictObject({
      agent: z.string().min(1),
      round: z.number().int().min(0),
      argument: z.string().min(1),
      whyItMatters: z.string().min(1),
    }),
  ),
  failedAgents: z.array(z.strictObject({ agent: z.string().min(1), reason: z.string() })),
});

export type Opening = z.infer<typeof openingSchema>;
export type Critique = z.infer<typeof critiqueSchema>;
export type JudgeScore = z.infer<typeof judgeSchema>;
export type Synthesis = z.infer<typeof synthesisSchema>;

/** JSON Schema for Ollama's `format`, without keywords Ollama refuses (e.g. `pattern`). */
const formatCache = new WeakMap<z.ZodType, Record<string, unknown>>();

export function formatSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const cached = formatCache.get(schema);
  if (cached) return cached;
  const json = z.toJSONSchema(schema, { target: 'draft-7', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  const clean = stripKeys(json, new Set(['pattern', 'format'])) as Record<string, unknown>;
  formatCache.set(schema, clean);
  return clean;
}

function stripKeys(value: unknown, keys: Set<string>): unknown {
  if (Array.isArray(value)) return value.map((v) => stripKeys(v, keys));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      // `properties` maps names to schemas: a property may legitimately be called `format`.
      if (keys.has(k) && typeof v !== 'object') continue;
      out[k] = stripKeys(v, keys);
    }
    return out;
  }
  return value;
}
