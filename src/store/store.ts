import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type BetterSqlite3 from 'better-sqlite3';
import { and, asc, desc, eq, sql } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import type { Preset } from '../config/preset-schema.js';
import type {
  AgentInfo,
  CallRecord,
  DebateStatus,
  ExitReason,
  RoundJudgement,
  SynthesisRecord,
  TurnRecord,
} from '../engine/events.js';
import { StoreError } from '../errors.js';
import type { Critique, JudgeScore, Opening, Synthesis } from '../protocol/schemas.js';
import { agents, calls, debates, rounds, syntheses, turns } from './schema.js';
import { synthesisAttempts } from './schema-synthesis.js';
import { describeHolders, fileHolders } from './holders.js';
import { readTensionMap, type StoredTensionMap } from './tensions.js';
import { readVoting, type StoredVoting } from './voting.js';

/** One line of `npx conclave list`. */
export interface DebateSummary {
  id: string;
  question: string;
  presetName: string;
  status: DebateStatus;
  exitReason: ExitReason | null;
  roundsCompleted: number;
  finalConvergence: number | null;
  /** Debaters only; the judge and synthesizer are not counted. */
  agentCount: number;
  callCount: number;
  createdAt: number;
  finishedAt: number | null;
}

/** The `debates` row, with the preset and plan decoded. */
export interface DebateRecord {
  id: string;
  question: string;
  presetName: string;
  preset: Preset;
  presetHash: string;
  engineVersion: string;
  host: string;
  status: DebateStatus;
  exitReason: ExitReason | null;
  error: string | null;
  roundsCompleted: number;
  finalConvergence: number | null;
  plan: unknown;
  pid: number;
  hostname: string;
  createdAt: number;
  finishedAt: number | null;
}

export interface SynthesisAttemptSummary {
  attempt: number;
  model: string;
  status: 'ok' | 'failed';
  error: string | null;
  at: number;
}

/** A recorded call, with the row id that orders calls within a debate. */
export interface StoredCall extends CallRecord {
  id: number;
}

/** A whole debate as recorded: everything `show`, `replay` and `export` need. */
export interface StoredDebate extends DebateRecord {
  /** Debaters in preset order, then judge and synthesizer. */
  agents: AgentInfo[];
  calls: StoredCall[];
  turns: TurnRecord[];
  rounds: RoundJudgement[];
  synthesis: SynthesisRecord | null;
  /** Every synthesis attempt, oldest first (the debate's own, then each `conclave synthesize`). */
  synthesisAttempts?: SynthesisAttemptSummary[];
  /** The cluster vote (docs/voting.md); null when the debate held none. */
  voting?: StoredVoting | null;
  /** The tension map (docs/tensions.md); null when the debate drew none. */
  tensions?: StoredTensionMap | null;
}

export interface NewDebate {
  id: string;
  question: string;
  preset: Preset;
  engineVersion: string;
  host: string;
  agents: AgentInfo[];
  createdAt: number;
}

export interface DebateFinish {
  status: DebateStatus;
  exitReason: ExitReason | null;
  error: string | null;
  roundsCompleted: number;
  finalConvergence: number | null;
  finishedAt: number;
}

export interface ListOptions {
  limit?: number;
  offset?: number;
  status?: DebateStatus;
}

/**
 * The record of debates in one SQLite file. Every write is its own small
 * transaction, committed before the method returns.
 */
export class Store {
  readonly path: string;
  readonly #sqlite: BetterSqlite3.Database;
  readonly #db: BetterSQLite3Database;

  /** Use `openStore()`: it sets pragmas and applies migrations first. */
  constructor(sqlite: BetterSqlite3.Database, path: string) {
    this.#sqlite = sqlite;
    this.path = path;
    this.#db = drizzle(sqlite);
  }

  createDebate(d: NewDebate): void {
    this.#guard(`create debate \`${d.id}\``, () =>
      this.#db.transaction((tx) => {
        tx.insert(debates)
          .values({
            id: d.id,
            question: d.question,
            presetName: d.preset.name,
            presetJson: d.preset,
            presetHash: presetHash(d.preset),
            engineVersion: d.engineVersion,
            host: d.host,
            status: 'running',
            roundsCompleted: 0,
            pid: process.pid,
            hostname: hostname(),
            createdAt: d.createdAt,
          })
          .run();
        if (d.agents.length > 0) {
          tx.insert(agents)
            .values(
              d.agents.map((a, ordinal) => ({
                debateId: d.id,
                agentId: a.id,
                role: a.role,
                ordinal,
                model: a.model,
                digest: a.digest,
                persona: a.persona,
                cluster: a.cluster,
              })),
            )
            .run();
        }
      }, { behavior: 'immediate' }),
    );
  }

  /** Stores one model call and returns its row id. */
  recordCall(call: CallRecord): number {
    return this.#guard(`record a ${call.stage} call of \`${call.agentId}\` for debate \`${call.debateId}\``, () => {
      const result = this.#db
        .insert(calls)
        .values({ debateId: call.debateId, stage: call.stage, round: call.round, truncation: call.truncation, ...modelCallValues(call) })
        .run();
      return Number(result.lastInsertRowid);
    });
  }

  /** Stores an agent's outcome for a round, replacing an earlier one for the same round. */
  recordTurn(debateId: string, turn: TurnRecord): void {
    const bodyKind = turn.opening ? ('opening' as const) : turn.critique ? ('critique' as const) : null;
    const values = {
      model: turn.model,
      status: turn.status,
      position: turn.position,
      confidence: turn.confidence,
      bodyKind,
      bodyJson: turn.opening ?? turn.critique ?? null,
      error: turn.error,
    };
    this.#guard(`record the round ${turn.round} turn of \`${turn.agentId}\` for debate \`${debateId}\``, () =>
      this.#db
        .insert(turns)
        .values({ debateId, round: turn.round, agentId: turn.agentId, ...values })
        .onConflictDoUpdate({ target: [turns.debateId, turns.round, turns.agentId], set: values })
        .run(),
    );
  }

  recordJudgement(debateId: string, j: RoundJudgement): void {
    const values = {
      status: j.status,
      recommendation: j.score?.recommendation ?? null,
      facts: j.score?.facts ?? null,
      caveats: j.score?.caveats ?? null,
      rationale: j.score?.rationale ?? null,
      convergence: j.convergence,
      error: j.error,
    };
    this.#guard(`record the round ${j.round} judgement for debate \`${debateId}\``, () =>
      this.#db
        .insert(rounds)
        .values({ debateId, round: j.round, ...values })
        .onConflictDoUpdate({ target: [rounds.debateId, rounds.round], set: values })
        .run(),
    );
  }

  /**
   * Records a synthesis attempt. It becomes the debate's synthesis unless it failed
   * and an earlier attempt succeeded: the latest successful one counts.
   */
  recordSynthesis(debateId: string, s: SynthesisRecord, at: number = Date.now()): void {
    const values = { status: s.status, bodyJson: s.synthesis, error: s.error };
    this.#guard(`record the synthesis for debate \`${debateId}\``, () =>
      this.#db.transaction((tx) => {
        const last = tx
          .select({ n: sql<number>`coalesce(max(${synthesisAttempts.attempt}), 0)` })
          .from(synthesisAttempts)
          .where(eq(synthesisAttempts.debateId, debateId))
          .get();
        tx.insert(synthesisAttempts)
          .values({ debateId, attempt: (last?.n ?? 0) + 1, model: s.model ?? '', ...values, createdAt: at })
          .run();
        const current = tx.select({ status: syntheses.status }).from(syntheses).where(eq(syntheses.debateId, debateId)).get();
        if (current?.status === 'ok' && s.status !== 'ok') return;
        tx.insert(syntheses)
          .values({ debateId, ...values })
          .onConflictDoUpdate({ target: syntheses.debateId, set: values })
          .run();
      }),
    );
  }

  /** Sets the digest on every agent of the debate that runs `model` (any role). */
  setAgentDigest(debateId: string, model: string, digest: string): void {
    this.#guard(`record the digest of \`${model}\` for debate \`${debateId}\``, () =>
      this.#db
        .update(agents)
        .set({ digest })
        .where(and(eq(agents.debateId, debateId), eq(agents.model, model)))
        .run(),
    );
  }

  setPlan(debateId: string, plan: unknown): void {
    this.#updateDebate(debateId, `record the schedule plan of debate \`${debateId}\``, { planJson: plan ?? null });
  }

  finishDebate(debateId: string, f: DebateFinish): void {
    this.#updateDebate(debateId, `record the end of debate \`${debateId}\``, {
      status: f.status,
      exitReason: f.exitReason,
      error: f.error,
      roundsCompleted: f.roundsCompleted,
      finalConvergence: f.finalConvergence,
      finishedAt: f.finishedAt,
    });
  }

  /** Debates, newest first. */
  listDebates(opts: ListOptions = {}): DebateSummary[] {
    // Correlated subqueries run only for the rows on the page, and the order comes
    // straight from the (created_at, id) indexes: no table-wide sort or GROUP BY.
    // Written out in full because drizzle leaves columns unqualified in a one-table select.
    const agentCount = sql<number>`(select count(*) from agents a where a.debate_id = debates.id and a.role = 'debater')`;
    const callCount = sql<number>`(select count(*) from calls c where c.debate_id = debates.id)`;
    return this.#guard('list debates', () => {
      const query = this.#db
        .select({
          id: debates.id,
          question: debates.question,
          presetName: debates.presetName,
          status: debates.status,
          exitReason: debates.exitReason,
          roundsCompleted: debates.roundsCompleted,
          finalConvergence: debates.finalConvergence,
          agentCount,
          callCount,
          createdAt: debates.createdAt,
          finishedAt: debates.finishedAt,
        })
        .from(debates)
        .where(opts.status === undefined ? undefined : eq(debates.status, opts.status))
        .orderBy(desc(debates.createdAt), desc(debates.id))
        .$dynamic();
      // SQLite takes OFFSET only after a LIMIT.
      if (opts.limit !== undefined || opts.offset !== undefined) query.limit(opts.limit ?? Number.MAX_SAFE_INTEGER);
      if (opts.offset !== undefined) query.offset(opts.offset);
      return query.all();
    });
  }

  /** The full id of the debate whose id is `idOrPrefix` or starts with it. */
  resolveId(idOrPrefix: string): string {
    const wanted = idOrPrefix.trim();
    const matches = this.#guard(`look up debate \`${wanted}\``, () => {
      if (wanted === '') return [];
      const exact = this.#db.select({ id: debates.id }).from(debates).where(eq(debates.id, wanted)).get();
      if (exact) return [exact.id];
      return this.#db
        .select({ id: debates.id })
        .from(debates)
        .where(sql`substr(${debates.id}, 1, ${wanted.length}) = ${wanted}`)
        .orderBy(asc(debates.id))
        .limit(6)
        .all()
        .map((r) => r.id);
    });
    const [first, ...rest] = matches;
    if (first === undefined) throw this.#notFound(wanted);
    if (rest.length > 0) {
      const shown = matches.slice(0, 5).map((id) => `\`${id}\``).join(', ');
      throw new StoreError(
        'DEBATE_ID_AMBIGUOUS',
        `Debate id \`${wanted}\` in ${this.path} matches several debates: ${shown}${matches.length > 5 ? ', …' : ''}.`,
        { hint: 'Type more characters of the id. Run `npx conclave list` to see full ids.' },
      );
    }
    return first;
  }

  /** Everything recorded about one debate (exact id; see `resolveId` for prefixes). */
  getDebate(id: string): StoredDebate {
    return this.#guard(`read debate \`${id}\``, () =>
      this.#db.transaction(
        (tx) => {
          const row = tx.select().from(debates).where(eq(debates.id, id)).get();
          if (!row) throw this.#notFound(id);
          const agentRows = tx
            .select()
            .from(agents)
            .where(eq(agents.debateId, id))
            .orderBy(asc(agents.ordinal), asc(agents.role), asc(agents.agentId))
            .all();
          const callRows = tx.select().from(calls).where(eq(calls.debateId, id)).orderBy(asc(calls.id)).all();
          const turnRows = tx
            .select({ turn: turns, ordinal: agents.ordinal })
            .from(turns)
            .leftJoin(
              agents,
              and(eq(agents.debateId, turns.debateId), eq(agents.role, 'debater'), eq(agents.agentId, turns.agentId)),
            )
            .where(eq(turns.debateId, id))
            .orderBy(asc(turns.round), asc(agents.ordinal), asc(turns.agentId))
            .all();
          const roundRows = tx.select().from(rounds).where(eq(rounds.debateId, id)).orderBy(asc(rounds.round)).all();
          const synthesisRow = tx.select().from(syntheses).where(eq(syntheses.debateId, id)).get();
          const attemptRows = tx
            .select()
            .from(synthesisAttempts)
            .where(eq(synthesisAttempts.debateId, id))
            .orderBy(asc(synthesisAttempts.attempt))
            .all();
          return {
            id: row.id,
            question: row.question,
            presetName: row.presetName,
            preset: row.presetJson,
            presetHash: row.presetHash,
            engineVersion: row.engineVersion,
            host: row.host,
            status: row.status,
            exitReason: row.exitReason,
            error: row.error,
            roundsCompleted: row.roundsCompleted,
            finalConvergence: row.finalConvergence,
            plan: row.planJson,
            pid: row.pid,
            hostname: row.hostname,
            createdAt: row.createdAt,
            finishedAt: row.finishedAt,
            agents: agentRows.map(toAgentInfo),
            calls: callRows.map(toStoredCall),
            turns: turnRows.map((r) => toTurnRecord(r.turn)),
            rounds: roundRows.map(toRoundJudgement),
            synthesis: synthesisRow ? toSynthesisRecord(synthesisRow) : null,
            synthesisAttempts: attemptRows.map((r) => ({
              attempt: r.attempt,
              model: r.model,
              status: r.status,
              error: r.error,
              at: r.createdAt,
            })),
            voting: readVoting(tx, id),
            tensions: readTensionMap(tx, id),
          };
        },
        // A deferred read transaction: one consistent snapshot while the runner keeps writing.
        { behavior: 'deferred' },
      ),
    );
  }

  /** Folds the write-ahead log back into the file and closes it. Safe to call twice. */
  close(): void {
    if (!this.#sqlite.open) return;
    try {
      this.#sqlite.pragma('wal_checkpoint(TRUNCATE)');
    } catch {
      // Another connection may still be reading; the next one to close checkpoints instead.
    }
    this.#sqlite.close();
  }

  #updateDebate(debateId: string, what: string, set: Partial<typeof debates.$inferInsert>): void {
    const result = this.#guard(what, () => this.#db.update(debates).set(set).where(eq(debates.id, debateId)).run());
    if (result.changes === 0) throw this.#notFound(debateId);
  }

  #notFound(id: string): StoreError {
    return new StoreError('DEBATE_NOT_FOUND', `No debate \`${id}\` in ${this.path}.`, {
      hint: 'Run `npx conclave list` to see stored debates.',
    });
  }

  /** Runs one statement or transaction, turning SQLite failures into StoreErrors. */
  /**
   * Runs `fn` against the database for the record modules of optional features
   * (votes, clash maps, bench runs). Failures become a StoreError saying what was being done.
   * Wrap writes in `db.transaction` so each lands whole.
   */
  use<T>(what: string, fn: (db: BetterSQLite3Database, sqlite: BetterSqlite3.Database) => T): T {
    return this.#guard(what, () => fn(this.#db, this.#sqlite));
  }

  #guard<T>(what: string, fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw storeErrorFrom(err, `Could not ${what} in ${this.path}`, this.path);
    }
  }

}

/** Column values of a recorded model call, for `calls` and the bench's `bench_calls` alike. */
export function modelCallValues(call: CallRecord) {
  const m = call.metrics;
  return {
    agentId: call.agentId,
    attempt: call.attempt,
    host: call.host,
    model: call.model,
    messagesJson: call.messages,
    optionsJson: call.options,
    formatJson: call.format,
    raw: call.raw,
    parsedJson: call.parsed ?? null,
    status: call.status,
    validationError: call.validationError,
    normalizedJson: call.normalized?.length ? call.normalized : null,
    error: call.error,
    promptTokens: m.promptTokens,
    completionTokens: m.completionTokens,
    totalDurationNs: m.totalDurationNs,
    loadDurationNs: m.loadDurationNs,
    promptEvalDurationNs: m.promptEvalDurationNs,
    evalDurationNs: m.evalDurationNs,
    doneReason: m.doneReason,
    startedAt: call.startedAt,
    finishedAt: call.finishedAt,
  };
}

/** sha256 of the preset's canonical JSON (keys sorted), so equal presets hash equal. */
export function presetHash(preset: Preset): string {
  return createHash('sha256').update(canonicalJson(preset)).digest('hex');
}

export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

/** The SQLite result code (`SQLITE_FULL`, ...) anywhere in an error's cause chain. */
export function sqliteCodeOf(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; current && typeof current === 'object' && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('SQLITE_')) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Turns a failure from SQLite into a StoreError that says what to do. `doing`
 * starts the message and names the file, e.g. "Could not record a call in /x/conclave.db".
 */
export function storeErrorFrom(err: unknown, doing: string, file?: string): StoreError {
  if (err instanceof StoreError) return err;
  const code = sqliteCodeOf(err) ?? '';
  const detail = rootMessage(err);
  const make = (errCode: string, why: string, hint: string) =>
    new StoreError(errCode, `${doing}: ${why}`, { hint, cause: err });

  if (code.startsWith('SQLITE_FULL')) {
    return make(
      'STORE_DISK_FULL',
      'the disk is full.',
      'Free disk space on that volume, or set CONCLAVE_DB to a database on another disk.',
    );
  }
  if (code.startsWith('SQLITE_READONLY')) {
    return make(
      'STORE_READONLY',
      'the database is read-only.',
      'Check the permissions of the file and its folder (the -wal and -shm files beside it must be writable too), or set CONCLAVE_DB to a writable path.',
    );
  }
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    const holder = file === undefined || file === ':memory:' ? 'another process' : describeHolders(fileHolders(file));
    return make(
      'STORE_LOCKED',
      `the database is locked by ${holder}.`,
      `${holder === 'another process' ? 'Another process holds the lock: let it' : `Let ${holder}`} finish, or stop it, then retry.`,
    );
  }
  if (code.startsWith('SQLITE_NOTADB') || code.startsWith('SQLITE_CORRUPT')) {
    return make(
      'STORE_CORRUPT',
      code.startsWith('SQLITE_NOTADB')
        ? 'it is not a Conclave database (the file is not a SQLite database).'
        : 'the database is damaged.',
      'Pass --db (or set CONCLAVE_DB) with the path of a Conclave database. To start afresh, move this file aside (or name a new path) and run a debate: Conclave creates a new database.',
    );
  }
  if (code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_CANTOPEN')) {
    return make(
      'STORE_IO',
      `the file cannot be read or written (${detail}).`,
      'Check that the disk is mounted and has free space, and that you may write to the file and its folder.',
    );
  }
  if (code.startsWith('SQLITE_CONSTRAINT')) {
    return make(
      'STORE_CONSTRAINT',
      `SQLite refused the row (${detail}).`,
      'This is a bug in Conclave; please report it with the command you ran.',
    );
  }
  return make(
    'STORE_FAILED',
    `${detail}${code ? ` (${code})` : ''}.`,
    'Check the disk and the file, then retry; run with --debug for details.',
  );
}

function rootMessage(err: unknown): string {
  let current: unknown = err;
  let message = String(err);
  for (let depth = 0; current && typeof current === 'object' && depth < 5; depth++) {
    if (current instanceof Error) message = current.message;
    current = (current as { cause?: unknown }).cause;
  }
  return message;
}

type AgentRow = typeof agents.$inferSelect;
type CallRow = typeof calls.$inferSelect;
type TurnRow = typeof turns.$inferSelect;
type RoundRow = typeof rounds.$inferSelect;
type SynthesisRow = typeof syntheses.$inferSelect;

function toAgentInfo(r: AgentRow): AgentInfo {
  return { id: r.agentId, model: r.model, persona: r.persona, cluster: r.cluster, role: r.role, digest: r.digest };
}

function toStoredCall(r: CallRow): StoredCall {
  return {
    id: r.id,
    debateId: r.debateId,
    stage: r.stage,
    round: r.round,
    agentId: r.agentId,
    attempt: r.attempt,
    host: r.host,
    model: r.model,
    messages: r.messagesJson,
    options: r.optionsJson,
    format: r.formatJson,
    raw: r.raw,
    parsed: r.parsedJson,
    status: r.status,
    validationError: r.validationError,
    ...(r.normalizedJson?.length ? { normalized: r.normalizedJson } : {}),
    error: r.error,
    truncation: r.truncation,
    metrics: {
      promptTokens: r.promptTokens,
      completionTokens: r.completionTokens,
      totalDurationNs: r.totalDurationNs,
      loadDurationNs: r.loadDurationNs,
      promptEvalDurationNs: r.promptEvalDurationNs,
      evalDurationNs: r.evalDurationNs,
      doneReason: r.doneReason,
    },
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
  };
}

function toTurnRecord(r: TurnRow): TurnRecord {
  return {
    round: r.round,
    agentId: r.agentId,
    model: r.model,
    status: r.status,
    position: r.position,
    confidence: r.confidence,
    opening: r.bodyKind === 'opening' ? (r.bodyJson as Opening) : null,
    critique: r.bodyKind === 'critique' ? (r.bodyJson as Critique) : null,
    error: r.error,
  };
}

function toRoundJudgement(r: RoundRow): RoundJudgement {
  const score: JudgeScore | null =
    r.recommendation !== null && r.facts !== null && r.caveats !== null && r.rationale !== null
      ? { recommendation: r.recommendation, facts: r.facts, caveats: r.caveats, rationale: r.rationale }
      : null;
  return { round: r.round, status: r.status, score, convergence: r.convergence, error: r.error };
}

function toSynthesisRecord(r: SynthesisRow): SynthesisRecord {
  return { status: r.status, synthesis: (r.bodyJson as Synthesis | null) ?? null, error: r.error };
}
