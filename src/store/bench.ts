import type { HostEntry } from '../config/preset-schema.js';
import { hostname } from 'node:os';
import { and, asc, desc, eq, inArray, sql } from 'drizzle-orm';
import type { SuiteItem } from '../bench/suite.js';
import type { CallRecord } from '../engine/events.js';
import { StoreError } from '../errors.js';
import {
  type BenchPresetSnapshot,
  benchAnswers,
  benchAnswerSources,
  benchAnswerStatuses,
  benchCalls,
  benchItems,
  benchResults,
  benchRunStatuses,
  benchRuns,
  benchTrials,
} from './schema-bench.js';
import { calls } from './schema.js';
import { modelCallValues, type Store } from './store.js';

export type { BenchPresetSnapshot } from './schema-bench.js';
export type BenchRunStatus = (typeof benchRunStatuses)[number];
export type BenchAnswerSource = (typeof benchAnswerSources)[number];
export type BenchAnswerStatus = (typeof benchAnswerStatuses)[number];

export interface NewBenchRun {
  id: string;
  suite: string;
  suiteHash: string;
  items: SuiteItem[];
  presets: BenchPresetSnapshot[];
  seed: number;
  itemLimit: number | null;
  host: string;
  /** A pool, or an OpenAI-compatible host: recorded so a resume runs on the same servers. */
  hosts?: HostEntry[];
  concurrency: number;
  numParallel: number;
  engineVersion: string;
  createdAt: number;
}

export interface BenchRunRecord {
  id: string;
  suite: string;
  suiteHash: string;
  itemCount: number;
  presets: BenchPresetSnapshot[];
  seed: number;
  itemLimit: number | null;
  host: string;
  hosts: HostEntry[] | null;
  concurrency: number;
  numParallel: number;
  status: BenchRunStatus;
  error: string | null;
  engineVersion: string;
  pid: number;
  hostname: string;
  createdAt: number;
  finishedAt: number | null;
}

export interface BenchRunSummary extends BenchRunRecord {
  /** Trials (item × preset) finished. */
  trialsDone: number;
}

export interface BenchResultRow {
  condition: string;
  variant: string;
  available: boolean;
  answer: string | null;
  correct: boolean;
  calls: number;
  promptTokens: number;
  completionTokens: number;
  callIds: number[];
  note: string | null;
}

export interface BenchAnswerRow {
  source: BenchAnswerSource;
  round: number;
  slot: string;
  agentId: string;
  model: string;
  status: BenchAnswerStatus;
  answer: string | null;
  method: string | null;
  correct: boolean;
}

export interface TrialFinish {
  debateId: string | null;
  debateStatus: string | null;
  exitReason: string | null;
  roundsRun: number | null;
  agentTurns: number | null;
  error: string | null;
  finishedAt: number;
}

export interface StoredTrial extends TrialFinish {
  id: number;
  itemId: string;
  preset: string;
  maxRounds: number;
  startedAt: number;
  results: BenchResultRow[];
  answers: BenchAnswerRow[];
}

/** One model call of a run (debates and baselines alike), reduced to what speed and cost figures need. */
export interface BenchCallStat {
  model: string;
  source: 'debate' | 'baseline';
  status: string;
  latencyMs: number;
  promptTokens: number | null;
  completionTokens: number | null;
  evalDurationNs: number | null;
}

export interface BenchData {
  run: BenchRunRecord;
  items: SuiteItem[];
  /** Finished trials only, in item order then preset order. */
  trials: StoredTrial[];
  calls: BenchCallStat[];
}

const runHint = 'Run `conclave bench list` to see the bench runs in this database.';

export function createBenchRun(store: Store, run: NewBenchRun): void {
  store.use(`create bench run \`${run.id}\``, (db) =>
    db.transaction(
      (tx) => {
        tx.insert(benchRuns)
          .values({
            id: run.id,
            suite: run.suite,
            suiteHash: run.suiteHash,
            itemCount: run.items.length,
            presetsJson: run.presets,
            seed: run.seed,
            itemLimit: run.itemLimit,
            host: run.host,
            hostsJson: run.hosts ?? null,
            concurrency: run.concurrency,
            numParallel: run.numParallel,
            status: 'running',
            engineVersion: run.engineVersion,
            pid: process.pid,
            hostname: hostname(),
            createdAt: run.createdAt,
          })
          .run();
        // Chunked: SQLite caps the variables of one statement.
        for (let start = 0; start < run.items.length; start += 100) {
          tx.insert(benchItems)
            .values(
              run.items.slice(start, start + 100).map((item, i) => ({
                runId: run.id,
                itemId: item.id,
                ordinal: start + i,
                question: item.question,
                answer: item.answer,
                kind: item.kind,
                choicesJson: item.choices ?? null,
              })),
            )
            .run();
        }
      },
      { behavior: 'immediate' },
    ),
  );
}

/** Marks the run as taken over by this process (a resume) and running. */
export function claimBenchRun(store: Store, runId: string): void {
  store.use(`resume bench run \`${runId}\``, (db) =>
    db.transaction((tx) => {
      tx.update(benchRuns).set({ status: 'running', error: null, finishedAt: null, pid: process.pid, hostname: hostname() }).where(eq(benchRuns.id, runId)).run();
      // Trials a dead run left half-done stay on record, marked, and run again.
      tx.update(benchTrials).set({ status: 'interrupted' }).where(and(eq(benchTrials.runId, runId), eq(benchTrials.status, 'running'))).run();
    }),
  );
}

export function finishBenchRun(store: Store, runId: string, status: BenchRunStatus, error: string | null, finishedAt: number): void {
  store.use(`record the end of bench run \`${runId}\``, (db) =>
    db.transaction((tx) => {
      tx.update(benchRuns).set({ status, error, finishedAt }).where(eq(benchRuns.id, runId)).run();
      if (status !== 'running') {
        tx.update(benchTrials).set({ status: 'interrupted' }).where(and(eq(benchTrials.runId, runId), eq(benchTrials.status, 'running'))).run();
      }
    }),
  );
}

export function startTrial(store: Store, t: { runId: string; itemId: string; preset: string; maxRounds: number; startedAt: number }): number {
  return store.use(`start item \`${t.itemId}\` of bench run \`${t.runId}\``, (db) => {
    const result = db.insert(benchTrials).values({ ...t, status: 'running' }).run();
    return Number(result.lastInsertRowid);
  });
}

/** Links a trial to its debate as soon as the debate exists, so an interrupted trial still points at it. */
export function setTrialDebate(store: Store, trialId: number, debateId: string): void {
  store.use(`link bench trial ${trialId} to debate \`${debateId}\``, (db) => db.update(benchTrials).set({ debateId }).where(eq(benchTrials.id, trialId)).run());
}

export function recordBenchCall(store: Store, trialId: number, condition: string, sample: number, call: CallRecord): number {
  return store.use(`record a ${condition} call of \`${call.agentId}\``, (db) => {
    const result = db
      .insert(benchCalls)
      .values({
        trialId,
        condition,
        sample,
        ...modelCallValues(call),
      })
      .run();
    return Number(result.lastInsertRowid);
  });
}

/** Writes a trial's results and answers and marks it done, all in one transaction. */
export function finishTrial(store: Store, trialId: number, finish: TrialFinish, results: BenchResultRow[], answers: BenchAnswerRow[]): void {
  store.use(`record the results of bench trial ${trialId}`, (db) =>
    db.transaction(
      (tx) => {
        if (results.length > 0) {
          tx.insert(benchResults)
            .values(
              results.map((r) => ({
                trialId,
                condition: r.condition,
                variant: r.variant,
                available: r.available,
                answer: r.answer,
                correct: r.correct,
                calls: r.calls,
                promptTokens: r.promptTokens,
                completionTokens: r.completionTokens,
                callIdsJson: r.callIds,
                note: r.note,
              })),
            )
            .run();
        }
        for (let start = 0; start < answers.length; start += 50) {
          tx.insert(benchAnswers)
            .values(answers.slice(start, start + 50).map((a) => ({ trialId, ...a })))
            .run();
        }
        tx.update(benchTrials)
          .set({ ...finish, status: 'done' })
          .where(eq(benchTrials.id, trialId))
          .run();
      },
      { behavior: 'immediate' },
    ),
  );
}

/** `itemId \0 preset` of every finished trial of the run. */
export function doneTrialKeys(store: Store, runId: string): Set<string> {
  const rows = store.use(`read the progress of bench run \`${runId}\``, (db) =>
    db.select({ itemId: benchTrials.itemId, preset: benchTrials.preset }).from(benchTrials).where(and(eq(benchTrials.runId, runId), eq(benchTrials.status, 'done'))).all(),
  );
  return new Set(rows.map((r) => trialKey(r.itemId, r.preset)));
}

export function trialKey(itemId: string, preset: string): string {
  return `${itemId}\u0000${preset}`;
}

/** The full id of the bench run whose id is `idOrPrefix` or starts with it. */
export function resolveBenchRunId(store: Store, idOrPrefix: string): string {
  const wanted = idOrPrefix.trim();
  const matches = store.use(`look up bench run \`${wanted}\``, (db) => {
    if (wanted === '') return [];
    const exact = db.select({ id: benchRuns.id }).from(benchRuns).where(eq(benchRuns.id, wanted)).get();
    if (exact) return [exact.id];
    return db
      .select({ id: benchRuns.id })
      .from(benchRuns)
      .where(sql`substr(${benchRuns.id}, 1, ${wanted.length}) = ${wanted}`)
      .orderBy(asc(benchRuns.id))
      .limit(6)
      .all()
      .map((r) => r.id);
  });
  const [first, ...rest] = matches;
  if (first === undefined) {
    throw new StoreError('BENCH_RUN_NOT_FOUND', `There is no bench run \`${wanted}\` in ${store.path}.`, { hint: runHint });
  }
  if (rest.length > 0) {
    throw new StoreError('BENCH_RUN_AMBIGUOUS', `Bench run id \`${wanted}\` matches several runs: ${matches.slice(0, 5).map((m) => `\`${m}\``).join(', ')}.`, {
      hint: 'Type more characters of the id.',
    });
  }
  return first;
}

export function getBenchRun(store: Store, runId: string): BenchRunRecord {
  const row = store.use(`read bench run \`${runId}\``, (db) => db.select().from(benchRuns).where(eq(benchRuns.id, runId)).get());
  if (!row) throw new StoreError('BENCH_RUN_NOT_FOUND', `There is no bench run \`${runId}\` in ${store.path}.`, { hint: runHint });
  return toRunRecord(row);
}

export function getBenchItems(store: Store, runId: string): SuiteItem[] {
  return store.use(`read the items of bench run \`${runId}\``, (db) =>
    db
      .select()
      .from(benchItems)
      .where(eq(benchItems.runId, runId))
      .orderBy(asc(benchItems.ordinal))
      .all()
      .map((r) => ({ id: r.itemId, question: r.question, answer: r.answer, kind: r.kind, ...(r.choicesJson ? { choices: r.choicesJson } : {}) })),
  );
}

/** Bench runs, newest first, with how many trials each finished. */
export function listBenchRuns(store: Store): BenchRunSummary[] {
  const done = sql<number>`(select count(*) from bench_trials t where t.run_id = bench_runs.id and t.status = 'done')`;
  return store.use('list bench runs', (db) =>
    db
      .select({ run: benchRuns, trialsDone: done })
      .from(benchRuns)
      .orderBy(desc(benchRuns.createdAt), desc(benchRuns.id))
      .all()
      .map((r) => ({ ...toRunRecord(r.run), trialsDone: Number(r.trialsDone) })),
  );
}

/** Everything a report needs about a run, read in one transaction. */
export function loadBenchData(store: Store, runId: string): BenchData {
  return store.use(`read bench run \`${runId}\``, (db) =>
    db.transaction((tx) => {
      const row = tx.select().from(benchRuns).where(eq(benchRuns.id, runId)).get();
      if (!row) throw new StoreError('BENCH_RUN_NOT_FOUND', `There is no bench run \`${runId}\` in ${store.path}.`, { hint: runHint });
      const run = toRunRecord(row);
      const items = tx
        .select()
        .from(benchItems)
        .where(eq(benchItems.runId, runId))
        .orderBy(asc(benchItems.ordinal))
        .all();
      const order = new Map(items.map((r) => [r.itemId, r.ordinal]));
      const presetOrder = new Map(run.presets.map((p, i) => [p.name, i]));
      const trialRows = tx
        .select()
        .from(benchTrials)
        .where(and(eq(benchTrials.runId, runId), eq(benchTrials.status, 'done')))
        .all()
        .sort((a, b) => (order.get(a.itemId) ?? 0) - (order.get(b.itemId) ?? 0) || (presetOrder.get(a.preset) ?? 0) - (presetOrder.get(b.preset) ?? 0));
      const ids = trialRows.map((t) => t.id);
      const resultRows = ids.length ? tx.select().from(benchResults).where(inArray(benchResults.trialId, ids)).all() : [];
      const answerRows = ids.length ? tx.select().from(benchAnswers).where(inArray(benchAnswers.trialId, ids)).all() : [];
      const trials: StoredTrial[] = trialRows.map((t) => ({
        id: t.id,
        itemId: t.itemId,
        preset: t.preset,
        maxRounds: t.maxRounds,
        startedAt: t.startedAt,
        debateId: t.debateId,
        debateStatus: t.debateStatus,
        exitReason: t.exitReason,
        roundsRun: t.roundsRun,
        agentTurns: t.agentTurns,
        error: t.error,
        finishedAt: t.finishedAt ?? t.startedAt,
        results: resultRows
          .filter((r) => r.trialId === t.id)
          .map((r) => ({
            condition: r.condition,
            variant: r.variant,
            available: r.available,
            answer: r.answer,
            correct: r.correct,
            calls: r.calls,
            promptTokens: r.promptTokens,
            completionTokens: r.completionTokens,
            callIds: r.callIdsJson,
            note: r.note,
          })),
        answers: answerRows
          .filter((a) => a.trialId === t.id)
          .sort((a, b) => a.round - b.round || a.source.localeCompare(b.source) || a.slot.localeCompare(b.slot, 'en', { numeric: true }))
          .map((a) => ({
            source: a.source,
            round: a.round,
            slot: a.slot,
            agentId: a.agentId,
            model: a.model,
            status: a.status,
            answer: a.answer,
            method: a.method,
            correct: a.correct,
          })),
      }));
      const debateIds = trialRows.map((t) => t.debateId).filter((d): d is string => d !== null);
      const stat = (r: {
        model: string;
        status: string;
        startedAt: number;
        finishedAt: number;
        promptTokens: number | null;
        completionTokens: number | null;
        evalDurationNs: number | null;
      }, source: BenchCallStat['source']): BenchCallStat => ({
        model: r.model,
        source,
        status: r.status,
        latencyMs: r.finishedAt - r.startedAt,
        promptTokens: r.promptTokens,
        completionTokens: r.completionTokens,
        evalDurationNs: r.evalDurationNs,
      });
      const columns = {
        model: calls.model,
        status: calls.status,
        startedAt: calls.startedAt,
        finishedAt: calls.finishedAt,
        promptTokens: calls.promptTokens,
        completionTokens: calls.completionTokens,
        evalDurationNs: calls.evalDurationNs,
      };
      const debateCalls: BenchCallStat[] = [];
      for (let start = 0; start < debateIds.length; start += 200) {
        const chunk = debateIds.slice(start, start + 200);
        debateCalls.push(...tx.select(columns).from(calls).where(inArray(calls.debateId, chunk)).all().map((r) => stat(r, 'debate')));
      }
      const baselineCalls = ids.length
        ? tx
            .select({
              model: benchCalls.model,
              status: benchCalls.status,
              startedAt: benchCalls.startedAt,
              finishedAt: benchCalls.finishedAt,
              promptTokens: benchCalls.promptTokens,
              completionTokens: benchCalls.completionTokens,
              evalDurationNs: benchCalls.evalDurationNs,
            })
            .from(benchCalls)
            .where(inArray(benchCalls.trialId, ids))
            .all()
            .map((r) => stat(r, 'baseline'))
        : [];
      return {
        run,
        items: items.map((r) => ({ id: r.itemId, question: r.question, answer: r.answer, kind: r.kind, ...(r.choicesJson ? { choices: r.choicesJson } : {}) })),
        trials,
        calls: [...debateCalls, ...baselineCalls],
      };
    }),
  );
}

function toRunRecord(row: typeof benchRuns.$inferSelect): BenchRunRecord {
  return {
    id: row.id,
    suite: row.suite,
    suiteHash: row.suiteHash,
    itemCount: row.itemCount,
    presets: row.presetsJson,
    seed: row.seed,
    itemLimit: row.itemLimit,
    host: row.host,
    hosts: row.hostsJson ?? null,
    concurrency: row.concurrency,
    numParallel: row.numParallel,
    status: row.status,
    error: row.error,
    engineVersion: row.engineVersion,
    pid: row.pid,
    hostname: row.hostname,
    createdAt: row.createdAt,
    finishedAt: row.finishedAt,
  };
}
