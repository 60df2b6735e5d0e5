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
import { type BenchTouch, benchRunTampered, forgetBenchSeal, gateBenchRun, resealBenchRun, verifyBenchRun } from './bench-seal.js';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import type BetterSqlite3 from 'better-sqlite3';

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

/** What the run's seal says of its rows: checked before any figure is read (src/store/bench-seal.ts). */
export interface BenchIntegrity {
  /** Null for a run recorded before bench runs were sealed, in a record not upgraded since. */
  seal: string | null;
  /** The key the seal names; proved only by `conclave verify RUN --public-key PUB`. */
  signedBy?: string;
  /** The run was recorded before bench runs were sealed, and sealed as it stood when its file was upgraded, then. */
  adoptedAt?: number;
  /** What the figures' reader should be told about the seal, in a sentence; null for a run sealed from its start. */
  notice: string | null;
}

export interface BenchData {
  run: BenchRunRecord;
  integrity: BenchIntegrity;
  items: SuiteItem[];
  /** Finished trials only, in item order then preset order. */
  trials: StoredTrial[];
  calls: BenchCallStat[];
}

const runHint = 'Run `conclave bench list` to see the bench runs in this database.';

/**
 * Runs one write to bench run `runId` in an immediate transaction that first verifies the run (in
 * full when another writer sealed it last) and then rewrites its seal over the parts `touch` names,
 * so the seal covers every row of the run at every moment (src/store/bench-seal.ts).
 */
function benchWrite<T>(
  store: Store,
  what: string,
  runId: string | ((sqlite: BetterSqlite3.Database) => string | null),
  touch: BenchTouch | ((out: T) => BenchTouch),
  fn: (db: BetterSQLite3Database) => T,
): T {
  return store.use(what, (db, sqlite) => {
    let id: string | null = null;
    try {
      return sqlite
        .transaction(() => {
          id = typeof runId === 'string' ? runId : runId(sqlite);
          if (id === null) return fn(db);
          gateBenchRun(sqlite, id, store.signer, typeof touch === 'function' ? {} : touch);
          const out = fn(db);
          resealBenchRun(sqlite, id, typeof touch === 'function' ? touch(out) : touch, store.signer);
          return out;
        })
        .immediate();
    } catch (err) {
      if (id !== null) forgetBenchSeal(sqlite, id);
      throw err;
    }
  });
}

function runOfTrial(trialId: number): (sqlite: BetterSqlite3.Database) => string | null {
  return (sqlite) => (sqlite.prepare('select run_id from bench_trials where id = ?').get(trialId) as { run_id: string } | undefined)?.run_id ?? null;
}

export function createBenchRun(store: Store, run: NewBenchRun): void {
  benchWrite(store, `create bench run \`${run.id}\``, run.id, { run: true }, (tx) => {
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
  });
}

/** Marks the run as taken over by this process (a resume) and running. */
export function claimBenchRun(store: Store, runId: string): void {
  benchWrite(store, `resume bench run \`${runId}\``, runId, { run: true, trials: 'all' }, (tx) => {
    tx.update(benchRuns).set({ status: 'running', error: null, finishedAt: null, pid: process.pid, hostname: hostname() }).where(eq(benchRuns.id, runId)).run();
    // Trials a dead run left half-done stay on record, marked, and run again.
    tx.update(benchTrials).set({ status: 'interrupted' }).where(and(eq(benchTrials.runId, runId), eq(benchTrials.status, 'running'))).run();
  });
}

export function finishBenchRun(store: Store, runId: string, status: BenchRunStatus, error: string | null, finishedAt: number): void {
  benchWrite(store, `record the end of bench run \`${runId}\``, runId, { run: true, trials: 'all' }, (tx) => {
    tx.update(benchRuns).set({ status, error, finishedAt }).where(eq(benchRuns.id, runId)).run();
    if (status !== 'running') {
      tx.update(benchTrials).set({ status: 'interrupted' }).where(and(eq(benchTrials.runId, runId), eq(benchTrials.status, 'running'))).run();
    }
  });
}

export function startTrial(store: Store, t: { runId: string; itemId: string; preset: string; maxRounds: number; startedAt: number }): number {
  return benchWrite(store, `start item \`${t.itemId}\` of bench run \`${t.runId}\``, t.runId, (id) => ({ trials: [id] }), (db) => {
    const result = db.insert(benchTrials).values({ ...t, status: 'running' }).run();
    return Number(result.lastInsertRowid);
  });
}

/** Links a trial to its debate as soon as the debate exists, so an interrupted trial still points at it. */
export function setTrialDebate(store: Store, trialId: number, debateId: string): void {
  benchWrite(store, `link bench trial ${trialId} to debate \`${debateId}\``, runOfTrial(trialId), { trials: [trialId] }, (db) => db.update(benchTrials).set({ debateId }).where(eq(benchTrials.id, trialId)).run());
}

export function recordBenchCall(store: Store, trialId: number, condition: string, sample: number, call: CallRecord): number {
  return benchWrite(store, `record a ${condition} call of \`${call.agentId}\``, runOfTrial(trialId), { trials: [trialId] }, (db) => {
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
  benchWrite(store, `record the results of bench trial ${trialId}`, runOfTrial(trialId), { trials: [trialId] }, (tx) => {
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
  });
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

/**
 * Everything a report needs about a run, read in one transaction, after its rows are checked
 * against the run's seal: a run that does not match is refused (IntegrityError) with the row that
 * changed, `done` saying what was not done.
 */
export function loadBenchData(store: Store, runId: string, done = 'No figures were read from it'): BenchData {
  return store.use(`read bench run \`${runId}\``, (db, sqlite) =>
    db.transaction((tx) => {
      const verdict = verifyBenchRun(sqlite, runId);
      if (verdict?.state === 'broken') throw benchRunTampered(verdict, store.path, done);
      const row = tx.select().from(benchRuns).where(eq(benchRuns.id, runId)).get();
      if (!row || !verdict) throw new StoreError('BENCH_RUN_NOT_FOUND', `There is no bench run \`${runId}\` in ${store.path}.`, { hint: runHint });
      const integrity: BenchIntegrity =
        verdict.state === 'unsealed'
          ? { seal: null, notice: `Bench run ${runId} was ${verdict.reason}.` }
          : {
              seal: verdict.seal,
              ...(verdict.signedBy === undefined ? {} : { signedBy: verdict.signedBy }),
              ...(verdict.adoptedAt === undefined ? {} : { adoptedAt: verdict.adoptedAt }),
              notice: verdict.adoptedAt === undefined ? null : adoptedNotice(runId, verdict.adoptedAt),
            };
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
        integrity,
        items: items.map((r) => ({ id: r.itemId, question: r.question, answer: r.answer, kind: r.kind, ...(r.choicesJson ? { choices: r.choicesJson } : {}) })),
        trials,
        calls: [...debateCalls, ...baselineCalls],
      };
    }),
  );
}

/** The notice of a run sealed by the upgrade that brought bench seals. */
export function adoptedNotice(runId: string, adoptedAt: number): string {
  return `Bench run ${runId} was recorded before bench runs were sealed: it was sealed as it stood when this file was upgraded, ${new Date(adoptedAt).toISOString().slice(0, 10)}, and its figures cannot be checked against what was recorded before then.`;
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
