import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import type { HostEntry, Preset } from '../config/preset-schema.js';
import { debates, modelCallColumns, modelCallMetricColumns } from './schema.js';

// Type-only imports besides schema.ts: drizzle-kit loads the schema files on their own.

export const benchRunStatuses = ['running', 'completed', 'interrupted'] as const;
export const benchTrialStatuses = ['running', 'done', 'interrupted'] as const;
export const benchItemKinds = ['number', 'choice', 'text'] as const;
/**
 * Where an extracted answer came from: a debate turn, the synthesis, a stand-alone
 * answer call, a minority position the synthesis kept (a copy of that turn's answer), or a
 * revision of the self-correction control.
 */
export const benchAnswerSources = ['debate', 'synthesis', 'single', 'sc', 'minority', 'self-correction'] as const;
/** `ok`: an answer was read; `unparsed`: the reply held none; `error`: the call itself failed. */
export const benchAnswerStatuses = ['ok', 'unparsed', 'error'] as const;

/** A preset as a bench run used it, frozen so a resumed run debates with the same panel. */
export interface BenchPresetSnapshot {
  name: string;
  source: string;
  preset: Preset;
}

/** One `conclave bench` invocation: which suite, which presets, how it was run. */
export const benchRuns = sqliteTable(
  'bench_runs',
  {
    id: text('id').primaryKey(),
    suite: text('suite').notNull(),
    suiteHash: text('suite_hash').notNull(),
    itemCount: integer('item_count').notNull(),
    presetsJson: text('presets_json', { mode: 'json' }).$type<BenchPresetSnapshot[]>().notNull(),
    seed: integer('seed').notNull(),
    itemLimit: integer('item_limit'),
    host: text('host').notNull(),
    /** The host list the run was started with (--hosts, or one OpenAI-compatible --host): each entry's url, api, apiKeyEnv (a name, never a key) and slots. NULL: the single Ollama `host`. */
    hostsJson: text('hosts_json', { mode: 'json' }).$type<HostEntry[]>(),
    concurrency: integer('concurrency').notNull(),
    numParallel: integer('num_parallel').notNull(),
    status: text('status', { enum: benchRunStatuses }).notNull(),
    error: text('error'),
    engineVersion: text('engine_version').notNull(),
    pid: integer('pid').notNull(),
    hostname: text('hostname').notNull(),
    createdAt: integer('created_at').notNull(),
    finishedAt: integer('finished_at'),
  },
  (t) => [index('bench_runs_created_at_idx').on(t.createdAt, t.id)],
);

/**
 * A run's seal: sha256 over the digest of every row of the run (src/store/bench-seal.ts), rewritten
 * by every write to the run. A table of its own, so a reader of a record from before it reads that
 * record as it is (its runs unsealed), without upgrading a copy.
 */
export const benchSeals = sqliteTable('bench_seals', {
  runId: text('run_id')
    .primaryKey()
    .references(() => benchRuns.id, { onDelete: 'cascade' }),
  seal: text('seal').notNull(),
  /** Ed25519 signature of `seal` (base64), when the run was recorded with a signing key. */
  sealSignature: text('seal_signature'),
  /** sha256 of the signing public key (SPKI DER), hex. */
  sealKey: text('seal_key'),
  /** Set on a run recorded before runs were sealed: when the upgrade sealed it as it stood. Hashed with the run's row. */
  adoptedAt: integer('adopted_at'),
});

/**
 * The row digests of a run's latest seal, one row per part: `run` (the run's row and its items)
 * and `trial N` (a trial's row, results, answers and calls), so a write rewrites only its part.
 * `verify` and the readers compare them with the rows to name the row that changed.
 */
export const benchSealRows = sqliteTable(
  'bench_seal_rows',
  {
    runId: text('run_id')
      .notNull()
      .references(() => benchRuns.id, { onDelete: 'cascade' }),
    part: text('part').notNull(),
    digestsJson: text('digests_json').notNull(),
  },
  (t) => [primaryKey({ columns: [t.runId, t.part] })],
);

/** The suite items of a run, stored whole so reports and resumes never reread the suite file. */
export const benchItems = sqliteTable(
  'bench_items',
  {
    runId: text('run_id')
      .notNull()
      .references(() => benchRuns.id, { onDelete: 'cascade' }),
    itemId: text('item_id').notNull(),
    ordinal: integer('ordinal').notNull(),
    question: text('question').notNull(),
    answer: text('answer').notNull(),
    kind: text('kind', { enum: benchItemKinds }).notNull(),
    choicesJson: text('choices_json', { mode: 'json' }).$type<string[]>(),
  },
  (t) => [primaryKey({ columns: [t.runId, t.itemId] })],
);

/**
 * One item under one preset: its debate and its baselines. A trial is `done`
 * only once all its results are written, in the same transaction.
 */
export const benchTrials = sqliteTable(
  'bench_trials',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    runId: text('run_id')
      .notNull()
      .references(() => benchRuns.id, { onDelete: 'cascade' }),
    itemId: text('item_id').notNull(),
    preset: text('preset').notNull(),
    status: text('status', { enum: benchTrialStatuses }).notNull(),
    debateId: text('debate_id').references(() => debates.id, { onDelete: 'set null' }),
    debateStatus: text('debate_status'),
    exitReason: text('exit_reason'),
    /** Critique rounds the debate ran after round 0. */
    roundsRun: integer('rounds_run'),
    maxRounds: integer('max_rounds').notNull(),
    /** Debater turns the debate made: the k of self-consistency@k. */
    agentTurns: integer('agent_turns'),
    error: text('error'),
    startedAt: integer('started_at').notNull(),
    finishedAt: integer('finished_at'),
  },
  (t) => [index('bench_trials_run_item_idx').on(t.runId, t.itemId, t.preset), index('bench_trials_debate_idx').on(t.debateId)],
);

/** What one condition answered on one trial, and what it spent. */
export const benchResults = sqliteTable(
  'bench_results',
  {
    trialId: integer('trial_id')
      .notNull()
      .references(() => benchTrials.id, { onDelete: 'cascade' }),
    condition: text('condition').notNull(),
    /** The agent for `single`; empty otherwise. */
    variant: text('variant').notNull().default(''),
    available: integer('available', { mode: 'boolean' }).notNull(),
    answer: text('answer'),
    correct: integer('correct', { mode: 'boolean' }).notNull(),
    calls: integer('calls').notNull(),
    promptTokens: integer('prompt_tokens').notNull(),
    completionTokens: integer('completion_tokens').notNull(),
    /** Row ids in `bench_calls` for baseline conditions; debate conditions link through the trial's debate. */
    callIdsJson: text('call_ids_json', { mode: 'json' }).$type<number[]>().notNull(),
    note: text('note'),
  },
  (t) => [primaryKey({ columns: [t.trialId, t.condition, t.variant] })],
);

/** Every answer read out of a reply, with how the reading went: the base of parse-failure rates. */
export const benchAnswers = sqliteTable(
  'bench_answers',
  {
    trialId: integer('trial_id')
      .notNull()
      .references(() => benchTrials.id, { onDelete: 'cascade' }),
    source: text('source', { enum: benchAnswerSources }).notNull(),
    round: integer('round').notNull(),
    /** Agent id for debate turns and single answers, sample number for self-consistency, `synthesizer`. */
    slot: text('slot').notNull(),
    agentId: text('agent_id').notNull(),
    model: text('model').notNull(),
    status: text('status', { enum: benchAnswerStatuses }).notNull(),
    answer: text('answer'),
    method: text('method'),
    correct: integer('correct', { mode: 'boolean' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.trialId, t.source, t.round, t.slot] })],
);

/** Calls the baselines made (single agent, self-consistency), complete like `calls` is for debates. */
export const benchCalls = sqliteTable(
  'bench_calls',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    trialId: integer('trial_id')
      .notNull()
      .references(() => benchTrials.id, { onDelete: 'cascade' }),
    condition: text('condition').notNull(),
    sample: integer('sample').notNull(),
    ...modelCallColumns(),
    ...modelCallMetricColumns(),
  },
  (t) => [index('bench_calls_trial_idx').on(t.trialId)],
);
