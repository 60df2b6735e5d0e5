import { z } from 'zod';

/**
 * The preset format: a contract that scripts and other tools write.
 * Kept free of transforms so the shipped JSON Schema is generated exactly.
 */

const idPattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Ollama runner options. Known keys are typed; others pass through to Ollama. */
export const modelOptionsSchema = z
  .object({
    temperature: z.number().min(0).max(2).optional(),
    seed: z.number().int().optional(),
    num_ctx: z.number().int().min(256).optional(),
    num_predict: z.number().int().min(1).optional(),
    top_p: z.number().min(0).max(1).optional(),
    top_k: z.number().int().min(0).optional(),
    repeat_penalty: z.number().min(0).optional(),
    stop: z.array(z.string()).optional(),
  })
  .catchall(z.union([z.number(), z.string(), z.boolean(), z.array(z.string())]))
  .describe('Ollama model options, passed through to /api/chat `options`.');

export const hostEntrySchema = z
  .strictObject({
    url: z.string().min(1).describe('Ollama base URL, e.g. http://127.0.0.1:11434'),
    vramGiB: z.number().positive().optional().describe('GPU memory of this host in GiB.'),
    numParallel: z.number().int().positive().optional().describe('OLLAMA_NUM_PARALLEL of this server.'),
  })
  .describe('One Ollama server.');

export const agentSchema = z.strictObject({
  id: z.string().regex(idPattern, 'use letters, digits, `_`, `.` or `-` (at most 64)'),
  model: z.string().min(1),
  persona: z.string().min(1).optional(),
  cluster: z.string().min(1).optional(),
  options: modelOptionsSchema.optional(),
});

export const modelRoleSchema = z.strictObject({
  model: z.string().min(1),
  options: modelOptionsSchema.optional(),
});

export const protocolSchema = z.strictObject({
  maxRounds: z.number().int().min(0).max(20).default(4).describe('Critique rounds after round 0.'),
  convergenceThreshold: z
    .number()
    .min(0)
    .max(1)
    .default(0.85)
    .describe('Stop early once the judge scores convergence at or above this.'),
  callTimeoutSeconds: z.number().positive().default(600).describe('Per model call time limit.'),
  maxAnswerTokens: z.number().int().min(64).default(900).describe('num_predict for agent answers.'),
});

export const presetSchema = z.strictObject({
  $schema: z.string().optional(),
  name: z.string().min(1),
  description: z.string().optional(),
  agents: z.array(agentSchema).min(2, 'a debate needs at least two agents'),
  judge: modelRoleSchema,
  synthesizer: modelRoleSchema,
  protocol: protocolSchema.prefault({}),
  hosts: z.array(hostEntrySchema).min(1).optional(),
});

export type ModelOptions = z.infer<typeof modelOptionsSchema>;
export type AgentSpec = z.infer<typeof agentSchema>;
export type ModelRole = z.infer<typeof modelRoleSchema>;
export type ProtocolSpec = z.infer<typeof protocolSchema>;
export type HostEntry = z.infer<typeof hostEntrySchema>;
/** A preset after validation, with protocol defaults filled in. */
export type Preset = z.infer<typeof presetSchema>;
/** A preset as a user writes it. */
export type PresetInput = z.input<typeof presetSchema>;
