import { index, integer, primaryKey, real, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import type { Preset } from '../config/preset-schema.js';
import type { CallBudget, ChatMessage } from '../engine/events.js';
import type { MaterialUse } from '../protocol/material.js';

// Only type imports from the rest of the code base: drizzle-kit loads this file on its own.
// Enums are TypeScript-only (no CHECK constraints): SQLite cannot alter a CHECK, so adding a
// value later would need a table rebuild, the riskiest kind of migration.

export const debateStatuses = ['running', 'completed', 'unsynthesized', 'failed', 'interrupted'] as const;
export const exitReasons = ['converged', 'max_rounds', 'too_few_answers', 'interrupted', 'error', 'answered', 'champion', 'reassembled', 'budget', 'filtered', 'verdict', 'stable'] as const;
export const agentRoles = ['debater', 'judge', 'synthesizer'] as const;
export const stages = ['opening', 'critique', 'judge', 'synthesis', 'claims', 'clash', 'targeted', 'vote', 'refine', 'verdict', 'split', 'subanswer', 'reassembly', 'plan', 'observe', 'review', 'filter', 'advice', 'fallback'] as const;
export const callStatuses = ['ok', 'invalid', 'error', 'aborted'] as const;
export const turnStatuses = ['ok', 'invalid', 'failed'] as const;
export const turnBodyKinds = ['opening', 'critique'] as const;
export const outcomeStatuses = ['ok', 'failed'] as const;

/** One row per debate: what was asked, with which preset, and how it ended. */
export const debates = sqliteTable(
  'debates',
  {
    id: text('id').primaryKey(),
    question: text('question').notNull(),
    presetName: text('preset_name').notNull(),
    presetJson: text('preset_json', { mode: 'json' }).$type<Preset>().notNull(),
    presetHash: text('preset_hash').notNull(),
    engineVersion: text('engine_version').notNull(),
    host: text('host').notNull(),
    status: text('status', { enum: debateStatuses }).notNull(),
    exitReason: text('exit_reason', { enum: exitReasons }),
    /** Why it stopped, in words, as the live view said it (`3 of 3 sub-questions answered`); null before it ends. */
    exitDetail: text('exit_detail'),
    error: text('error'),
    roundsCompleted: integer('rounds_completed').notNull().default(0),
    finalConvergence: real('final_convergence'),
    planJson: text('plan_json', { mode: 'json' }).$type<unknown>(),
    pid: integer('pid').notNull(),
    hostname: text('hostname').notNull(),
    createdAt: integer('created_at').notNull(),
    finishedAt: integer('finished_at'),
    /** sha256 over the whole record of the debate, written with its final row (docs/record.md). */
    seal: text('seal'),
    /** The digest of every row the seal covers, so `verify` can name the row that changed: in records written before `seal_rows`, which holds them since. */
    sealRowsJson: text('seal_rows_json', { mode: 'json' }).$type<Record<string, Record<string, string>>>(),
    /** Ed25519 signature of `seal` by the key that wrote it (base64), when a signing key was configured. */
    sealSignature: text('seal_signature'),
    /** The signing key's id: sha256 of its public key (SPKI DER), hex. */
    sealKey: text('seal_key'),
    /**
     * For a debate that was in the file, without a seal, when the file was upgraded to adopted seals:
     * when it was sealed as it then stood. Hashed with the row, so it cannot be set or removed by hand.
     */
    adoptedAt: integer('adopted_at'),
  },
  (t) => [
    index('debates_created_at_idx').on(t.createdAt, t.id),
    index('debates_status_created_at_idx').on(t.status, t.createdAt, t.id),
  ],
);

/** The panel of a debate, including judge and synthesizer, in preset order. */
export const agents = sqliteTable(
  'agents',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    agentId: text('agent_id').notNull(),
    role: text('role', { enum: agentRoles }).notNull(),
    ordinal: integer('ordinal').notNull(),
    model: text('model').notNull(),
    digest: text('digest'),
    persona: text('persona'),
    cluster: text('cluster'),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.role, t.agentId] })],
);

/** Every model call, complete: what was sent, what came back, how it parsed. */
/** The columns every recorded model call has, shared by `calls` and the bench's `bench_calls`. */
export function modelCallColumns() {
  return {
    agentId: text('agent_id').notNull(),
    attempt: integer('attempt').notNull(),
    host: text('host').notNull(),
    /** `openai` when an OpenAI-compatible server answered, `embedded` when llama.cpp in this process did; NULL for Ollama (and every call recorded before there was a choice). */
    api: text('api', { enum: ['openai', 'embedded'] }),
    model: text('model').notNull(),
    messagesJson: text('messages_json', { mode: 'json' }).$type<ChatMessage[]>().notNull(),
    optionsJson: text('options_json', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    formatJson: text('format_json', { mode: 'json' }).$type<Record<string, unknown>>(),
    raw: text('raw').notNull(),
    parsedJson: text('parsed_json', { mode: 'json' }).$type<unknown>(),
    status: text('status', { enum: callStatuses }).notNull(),
    validationError: text('validation_error'),
    /** What the engine changed in a reply the schema allowed (JSON list of notes); null when nothing. */
    normalizedJson: text('normalized_json', { mode: 'json' }).$type<string[]>(),
    error: text('error'),
  };
}

/** Ollama's counters and the call's times. */
export function modelCallMetricColumns() {
  return {
    promptTokens: integer('prompt_tokens'),
    completionTokens: integer('completion_tokens'),
    totalDurationNs: integer('total_duration_ns'),
    loadDurationNs: integer('load_duration_ns'),
    promptEvalDurationNs: integer('prompt_eval_duration_ns'),
    evalDurationNs: integer('eval_duration_ns'),
    doneReason: text('done_reason'),
    startedAt: integer('started_at').notNull(),
    finishedAt: integer('finished_at').notNull(),
  };
}

export const calls = sqliteTable(
  'calls',
  {
    id: integer('id').primaryKey(),
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    stage: text('stage', { enum: stages }).notNull(),
    round: integer('round').notNull(),
    ...modelCallColumns(),
    truncation: text('truncation'),
    /** What the call was given of the attached material (JSON list, one entry per attachment); null when none. */
    materialJson: text('material_json', { mode: 'json' }).$type<MaterialUse[]>(),
    /** The token budget at this call (JSON); null when the run had no budget. */
    budgetJson: text('budget_json', { mode: 'json' }).$type<CallBudget>(),
    ...modelCallMetricColumns(),
    /** 1 when `raw` is what arrived of a reply before its stream broke or ended without `done`; null otherwise. */
    partial: integer('partial'),
    /** `think` as sent (`true`, `false`, `low`, `medium`, `high`); null when none was sent (the model's default). */
    think: text('think'),
    /** The model's thinking (`message.thinking`), streamed before the reply; null when it did not think. */
    thinking: text('thinking'),
    /** Tokens of that thinking, one per streamed chunk; eval_count counts them with the reply's. */
    thinkingTokens: integer('thinking_tokens'),
    /** The hash of the previous call of the same debate; null for its first call. */
    prevHash: text('prev_hash'),
    /** sha256 over this row, `prev_hash` included (docs/record.md). */
    hash: text('hash'),
  },
  (t) => [index('calls_debate_round_idx').on(t.debateId, t.round)],
);

/** An agent's outcome for one round, after any repair. */
export const turns = sqliteTable(
  'turns',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    round: integer('round').notNull(),
    agentId: text('agent_id').notNull(),
    model: text('model').notNull(),
    status: text('status', { enum: turnStatuses }).notNull(),
    position: text('position'),
    confidence: real('confidence'),
    /** Which object `body_json` holds, so a reader never guesses from the round number. */
    bodyKind: text('body_kind', { enum: turnBodyKinds }),
    bodyJson: text('body_json', { mode: 'json' }).$type<unknown>(),
    error: text('error'),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.round, t.agentId] })],
);

/** The judge's scores for one round. */
export const rounds = sqliteTable(
  'rounds',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    round: integer('round').notNull(),
    status: text('status', { enum: outcomeStatuses }).notNull(),
    recommendation: real('recommendation'),
    facts: real('facts'),
    caveats: real('caveats'),
    convergence: real('convergence'),
    rationale: text('rationale'),
    error: text('error'),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.round] })],
);

/** The synthesis that counts for a debate: the latest successful attempt, else the latest (see synthesis_attempts). */
export const syntheses = sqliteTable('syntheses', {
  debateId: text('debate_id')
    .primaryKey()
    .references(() => debates.id, { onDelete: 'cascade' }),
  status: text('status', { enum: outcomeStatuses }).notNull(),
  bodyJson: text('body_json', { mode: 'json' }).$type<unknown>(),
  error: text('error'),
});

/**
 * The row digests of a debate's latest checkpoint, one row per sealed table (`debates` included),
 * each the canonical JSON of that table's digests by row key: what `verify` compares with to name
 * the row that changed. Written with the seal, and only the tables a write changed; not itself
 * sealed (a digest is checked against the rows, not trusted). Records written before it keep the
 * same digests whole in `debates.seal_rows_json`, which wins while it is set.
 */
export const sealRows = sqliteTable(
  'seal_rows',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    tableName: text('table_name').notNull(),
    digestsJson: text('digests_json').notNull(),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.tableName] })],
);

/** A turn a resumed run read from a call recorded before the interruption; `call` is its number within the debate. */
export interface ReusedTurn {
  round: number;
  agentId: string;
  call: number;
}

/** Each time an interrupted debate was resumed: from which round, on which host and by which process. */
export const resumptions = sqliteTable(
  'resumptions',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    ordinal: integer('ordinal').notNull(),
    /** The last complete round reused from the record; -1 when none was. */
    fromRound: integer('from_round').notNull(),
    /** How many calls were recorded before it went on: the calls after these are the resumed run's. */
    callsBefore: integer('calls_before').notNull(),
    /**
     * Turns of the round left incomplete that were read from calls finished before the
     * interruption, instead of asked again: `[{round, agentId, call}]`, `call` numbered within the debate.
     */
    reusedJson: text('reused_json', { mode: 'json' }).$type<ReusedTurn[]>(),
    host: text('host').notNull(),
    planJson: text('plan_json', { mode: 'json' }).$type<unknown>(),
    pid: integer('pid').notNull(),
    hostname: text('hostname').notNull(),
    at: integer('at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.ordinal] })],
);

