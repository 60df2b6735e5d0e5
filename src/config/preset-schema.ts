import { z } from 'zod';

/**
 * The preset format: a contract that scripts and other tools write.
 * Kept free of transforms so the shipped JSON Schema is generated exactly.
 */

const idPattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * Ollama's model options (the ollama client's `Options`), each typed: a key Ollama does not know,
 * such as a misspelt `temprature`, is an error naming its path rather than an option silently ignored.
 */
export const modelOptionsSchema = z
  .strictObject({
    temperature: z.number().min(0).max(2).optional(),
    seed: z.number().int().optional(),
    num_ctx: z.number().int().min(256).optional(),
    num_predict: z.number().int().min(1).optional(),
    top_p: z.number().min(0).max(1).optional(),
    top_k: z.number().int().min(0).optional(),
    min_p: z.number().min(0).max(1).optional(),
    typical_p: z.number().min(0).max(1).optional(),
    tfs_z: z.number().min(0).optional(),
    repeat_penalty: z.number().min(0).optional(),
    repeat_last_n: z.number().int().min(-1).optional(),
    presence_penalty: z.number().optional(),
    frequency_penalty: z.number().optional(),
    mirostat: z.number().int().min(0).max(2).optional(),
    mirostat_tau: z.number().min(0).optional(),
    mirostat_eta: z.number().min(0).optional(),
    penalize_newline: z.boolean().optional(),
    stop: z.array(z.string()).optional(),
    num_keep: z.number().int().optional(),
    num_batch: z.number().int().min(1).optional(),
    num_gpu: z.number().int().min(-1).optional(),
    main_gpu: z.number().int().min(0).optional(),
    num_thread: z.number().int().min(0).optional(),
    numa: z.boolean().optional(),
    low_vram: z.boolean().optional(),
    f16_kv: z.boolean().optional(),
    logits_all: z.boolean().optional(),
    vocab_only: z.boolean().optional(),
    use_mmap: z.boolean().optional(),
    use_mlock: z.boolean().optional(),
    embedding_only: z.boolean().optional(),
  })
  .describe('Ollama model options, passed through to /api/chat `options`.');

export const thinkSchema = z
  .union([z.boolean(), z.enum(['low', 'medium', 'high'])])
  .describe('Thinking for a model with the `thinking` capability: true, false, or low | medium | high. Absent: the model\'s own default (on for thinking models). Never sent to a model without the capability.');

export const hostEntrySchema = z
  .strictObject({
    url: z.string().min(1).describe('Ollama base URL, e.g. http://127.0.0.1:11434; for `api: openai`, the API base ending in /v1, e.g. http://gpu-2:8000/v1; for `api: embedded`, filled in from `models`'),
    api: z
      .enum(['ollama', 'openai', 'embedded'])
      .optional()
      .describe('The API the server speaks: `ollama` (default), `openai` (llama-server, vLLM, LM Studio, any OpenAI-compatible /v1), or `embedded` (GGUF models run in this process, from `models`).'),
    models: z.string().min(1).optional().describe('For `api: embedded`: a folder of .gguf files or an Ollama models folder (~/.ollama/models), relative to the hosts file.'),
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'the name of an environment variable, e.g. VLLM_API_KEY')
      .optional()
      .describe('For `api: openai`: the environment variable holding the bearer key. The key itself is never written anywhere.'),
    vramGiB: z.number().positive().optional().describe('GPU memory of this host in GiB (Ollama only: an OpenAI-compatible server manages its own).'),
    numParallel: z.number().int().positive().optional().describe("Concurrent requests per model: OLLAMA_NUM_PARALLEL, llama-server's --parallel, vLLM's max_num_seqs."),
    maxLoadedModels: z.number().int().positive().optional().describe('OLLAMA_MAX_LOADED_MODELS of this server (Ollama: 3 per GPU).'),
    family: z.string().min(1).optional().describe('The model family of what this server serves (e.g. llama, qwen), used where the server does not report one (docs/confidence.md).'),
  })
  .refine((h) => h.apiKeyEnv === undefined || h.api === 'openai', { message: 'apiKeyEnv is for `api: openai` servers (Ollama takes no key)', path: ['apiKeyEnv'] })
  .refine((h) => (h.models !== undefined) === (h.api === 'embedded'), { message: '`api: embedded` takes `models: DIR` (a folder of .gguf files or an Ollama models folder), and only it does', path: ['models'] })
  .describe('One model server: Ollama, or an OpenAI-compatible one.');

export const agentSchema = z.strictObject({
  id: z.string().regex(idPattern, 'use letters, digits, `_`, `.` or `-` (at most 64)'),
  model: z.string().min(1),
  persona: z.string().min(1).optional(),
  cluster: z.string().min(1).optional(),
  priority: z
    .enum(['high', 'normal', 'low'])
    .optional()
    .describe('Who is skipped first when the token budget runs out: low, then normal; high always runs. Default normal.'),
  role: z
    .enum(['lead', 'analyst', 'reviewer', 'filter'])
    .optional()
    .describe('pipeline only: lead writes the plan, analysts add observations, reviewers review against the plan, the filter writes the final report; default reviewer.'),
  side: z
    .enum(['for', 'against'])
    .optional()
    .describe('oxford only: the side of the motion this agent speaks for; agents without one are alternated in panel order (docs/protocol-oxford.md).'),
  think: thinkSchema.optional(),
  options: modelOptionsSchema.optional(),
  family: z.string().min(1).optional().describe("The model's family (e.g. llama, qwen), used where its server does not report one (docs/confidence.md)."),
});

export const modelRoleSchema = z.strictObject({
  model: z.string().min(1),
  think: thinkSchema.optional(),
  options: modelOptionsSchema.optional(),
});

/** The shapes a run can take; see docs/protocols.md. */
export const protocolKinds = ['debate', 'parallel', 'tournament', 'decompose', 'pipeline', 'oxford', 'delphi'] as const;

export const protocolSchema = z.strictObject({
  kind: z
    .enum([...protocolKinds, 'auto'])
    .default('debate')
    .describe('debate: critique rounds until convergence; parallel: answers then synthesis; tournament: pairwise matches; decompose: split, answer parts, reassemble; pipeline: plan, review, filter by roles; oxford: two sides argue a motion in openings, rebuttals and closings, the judge gives a verdict; delphi: anonymous rounds until the spread stops narrowing, the median or the modal stance as the result (docs/protocol-delphi.md); auto: the advisor model classifies the question first and fixed rules choose debate, parallel, tournament, decompose or pipeline from that (docs/orchestration.md).'),
  advisor: z.string().min(1).optional().describe('auto: the model that classifies the question; fixed rules choose the protocol from its classification (default: the judge model).'),
  brief: z
    .string()
    .min(1)
    .max(2000)
    .optional()
    .describe('What every agent and the synthesizer read about the question before answering it; `kind: auto` writes it from its advisor\'s classification (domains, parts, depth, pattern).'),
  maxRounds: z.number().int().min(0).max(20).default(4).describe('Critique rounds after round 0.'),
  convergenceThreshold: z
    .number()
    .min(0)
    .max(1)
    .default(0.85)
    .describe('Stop early once the judge scores convergence at or above this.'),
  callTimeoutSeconds: z.number().positive().default(600).describe('Per model call time limit.'),
  stallSeconds: z
    .number()
    .positive()
    .optional()
    .describe('A reply that has begun and then sends nothing for this long is cut and sent again (a host that lost power or its network). Default 60; the wait for the first token is bounded by callTimeoutSeconds alone.'),
  maxAnswerTokens: z.number().int().min(64).default(900).describe('num_predict for agent answers.'),
  thinkingTokens: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('Room for thinking, added to num_predict and num_ctx of every call to a model that thinks (half for think: low, double for high). Default 3072; see docs/thinking.md.'),
  decomposer: z.string().regex(idPattern, 'use an agent id').optional().describe('decompose: the agent that splits the question and reassembles the answers; default the first agent.'),
  maxSubQuestions: z.number().int().min(1).max(12).optional().describe('decompose: sub-questions the decomposer may list at most (default 6).'),
  tokenBudget: z
    .number()
    .int()
    .min(1000)
    .optional()
    .describe('Prompt plus reply tokens for the whole run. From 80% material is cut, at 100% lower-priority agents are skipped; see docs/attachments-and-budgets.md.'),
  advocate: z
    .boolean()
    .optional()
    .describe("debate: in each critique round one agent, a different one each round, argues against the round's majority; its turn is left out of the judge's convergence score (docs/protocol-advocate.md)."),
  critique: z
    .enum(['standard', 'anti-conformity'])
    .optional()
    .describe("debate: standard critique rounds (the default), or anti-conformity: every agent defends its own position and names the weakest point of each peer's; agreeing with the majority is no goal (docs/protocol-anti-conformity.md)."),
  decision: z
    .enum(['final', 'trajectory'])
    .optional()
    .describe("debate: final: the synthesizer decides from the final round (the default); trajectory: the position with the best Free-MAD score over all rounds, counted on the judge's stances, is the decision the synthesizer writes up (docs/protocol-anti-conformity.md)."),
  earlyExit: z
    .boolean()
    .optional()
    .describe('debate: set false to run every critique round up to maxRounds even when the judge scores convergence at the threshold (default true; docs/protocol-anti-conformity.md).'),
  filterMode: z
    .enum(['list', 'artifact'])
    .optional()
    .describe('pipeline: the filter reduces the findings to a deduplicated list (list, the default) or writes one document (artifact).'),
});

/**
 * The synthesizer: one model, or `rotate: true` to take turns across debates among
 * `models` (default: the panel's models), so no one model always writes the answer.
 */
export const synthesizerSchema = z.strictObject({
  model: z.string().min(1).optional().describe('The synthesizer model; required unless rotate is true.'),
  think: thinkSchema.optional(),
  options: modelOptionsSchema.optional(),
  rotate: z.boolean().optional().describe('Take the synthesizer from `models` (or the panel) in turn across debates with this preset.'),
  models: z.array(z.string().min(1)).min(1).optional().describe('Models to rotate through; default the panel\'s models.'),
});

const unitThreshold = z.number().gt(0, 'must be greater than 0').max(1, 'must be at most 1');

/** Cluster approval voting on the final positions (seed 001); see docs/voting.md. */
export const votingSchema = z
  .strictObject({
    enabled: z.boolean().default(true).describe('Set false to keep the block but skip the vote.'),
    theta: unitThreshold.default(0.5).describe('θ: share of a cluster\'s YES/NO votes needed for the cluster to approve, in (0, 1].'),
    tau: z
      .number()
      .gt(0.5, 'must be greater than 0.5')
      .max(1, 'must be at most 1')
      .default(0.6)
      .describe('τ: agreement ratio across clusters needed for Consensus, in (0.5, 1].'),
    clusterThresholds: z.record(z.string(), unitThreshold).optional().describe('θ_i per cluster name, overriding theta.'),
    weights: z.record(z.string(), z.number().gt(0, 'must be greater than 0')).optional().describe('w_i per cluster name; unlisted clusters weigh 1.'),
    balanceBonus: z.boolean().default(false).describe('Rank Consensus positions by score × (1 − σ of the cluster rates).'),
    advocateCluster: z.string().min(1).optional().describe('With two clusters, the one whose persuasive positions are accelerators; default the first.'),
    iterate: z.boolean().default(false).describe('Share Consensus positions, let agents refine, and vote again.'),
    maxIterations: z.number().int().min(1).max(5).default(1).describe('Refine-and-revote rounds at most when iterate is on.'),
    force: z.boolean().default(false).describe('Allow clusters with a single agent.'),
  })
  .describe('Cluster approval voting on the final positions.');

/** Tension map and the targeted exchange (seed 000); see docs/tensions.md. */
export const tensionsSchema = z
  .strictObject({
    enabled: z.boolean().default(true).describe('Set false to keep the block but skip the tension map.'),
    model: z.string().min(1).optional().describe('Model for claims, clashes and the map; default: the judge model.'),
    think: thinkSchema.optional(),
    options: modelOptionsSchema.optional(),
    maxClaimsPerAgent: z.number().int().min(1).max(10).default(5).describe('Load-bearing claims taken from each answer at most.'),
    pairsPerCall: z.number().int().min(1).max(45).default(5).describe('Agent pairs compared per clash call.'),
    round2: z
      .strictObject({
        enabled: z.boolean().default(true).describe('Set false to map tensions without re-querying anyone.'),
        minClashes: z.number().int().min(1).default(2).describe('Qualifying clashes needed to fire the targeted round.'),
        minSeverity: z.number().int().min(1).max(10).default(6).describe('Severity a load-bearing, non-emphasis clash needs to qualify.'),
      })
      .prefault({}),
    guard: z
      .strictObject({
        longAnswerTokens: z.number().int().min(0).default(800).describe('Answers longer than this together, with zero tensions, flag the map.'),
        maxConfidence: z.number().min(0).max(1).default(0.85).describe('Every per-agent confidence above this, on a contested question, flags the map.'),
        minTensions: z.number().int().min(1).default(3).describe('Fewer tensions than this, on long answers the panel disagreed on at round 0, flag the map.'),
      })
      .prefault({}),
  })
  .describe('Tension map: where agents clash, how badly, and a targeted round for the worst clash.');

export const presetSchema = z.strictObject({
  $schema: z.string().optional(),
  name: z.string().min(1),
  description: z.string().optional(),
  agents: z.array(agentSchema).min(2, 'a debate needs at least two agents'),
  judge: modelRoleSchema,
  synthesizer: synthesizerSchema,
  protocol: protocolSchema.prefault({}),
  hosts: z.array(hostEntrySchema).min(1).optional(),
  voting: votingSchema.optional(),
  tensions: tensionsSchema.optional(),
  attach: z
    .array(z.string().min(1))
    .optional()
    .describe('Text files attached to every run of this preset, relative to the preset file (UTF-8, 1 MiB each at most).'),
  constraints: z
    .array(z.string().min(1))
    .optional()
    .describe('Constraints stated in every agent prompt, never shortened.'),
});

export type ModelOptions = z.infer<typeof modelOptionsSchema>;
export type ThinkSetting = z.infer<typeof thinkSchema>;
export type AgentSpec = z.infer<typeof agentSchema>;
export type AgentRole = NonNullable<AgentSpec['role']>;
export type ModelRole = z.infer<typeof modelRoleSchema>;
export type ProtocolSpec = z.infer<typeof protocolSchema>;
export type ProtocolKind = (typeof protocolKinds)[number];
export type SynthesizerSpec = z.infer<typeof synthesizerSchema>;
export type HostEntry = z.infer<typeof hostEntrySchema>;
export type VotingSpec = z.infer<typeof votingSchema>;
export type TensionsSpec = z.infer<typeof tensionsSchema>;
/** A preset after validation, with protocol defaults filled in. */
export type Preset = z.infer<typeof presetSchema>;
/** A preset as a user writes it. */
export type PresetInput = z.input<typeof presetSchema>;
