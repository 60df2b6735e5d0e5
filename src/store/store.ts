import { hostname } from 'node:os';
import type BetterSqlite3 from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import type { Preset } from '../config/preset-schema.js';
import type { AgentInfo, CallRecord, DebateStatus, ExitReason, RoundJudgement, SynthesisRecord, TurnRecord } from '../engine/events.js';
import { StoreError } from '../errors.js';
import {
  callHash,
  canonicalJson,
  readDebateRows,
  readSealInput,
  LINKED_CALL_IDS,
  CALL_LINKS,
  type CallNumbers,
  debateDigest,
  SEALED_TABLES,
  type Row,
  rowDigest,
  rowDigests,
  tableDigests,
  rowKey,
  sealFrom,
  sha256,
} from './chain.js';
import { CheckpointDigests, type Touched } from './checkpoint.js';
import { sealGate } from './gate.js';
import { RecordReader } from './reader.js';
import type { ReusedTurn } from './schema.js';
import type { SealSigner } from './signing.js';

export {
  RecordReader,
  sqliteCodeOf,
  storeErrorFrom,
  type DebateRecord,
  type DebateSummary,
  type ListOptions,
  type Resumption,
  type StoredCall,
  type StoredDebate,
  type SynthesisAttemptSummary,
} from './reader.js';

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
  /** Why it stopped, in words; null when no exit was reported. */
  exitDetail?: string | null;
  error: string | null;
  roundsCompleted: number;
  finalConvergence: number | null;
  finishedAt: number;
}

/**
 * The record of debates in one SQLite file. Every write is its own small
 * transaction, committed before the method returns.
 */
export class Store extends RecordReader {
  readonly #db: BetterSQLite3Database;
  /** The length and head of the chain of each debate this store has written to. */
  readonly #chains = new Map<string, { count: number; head: string | null }>();
  /** The row digests of each debate's last checkpoint: a write hashes again only the rows it changed. */
  readonly #digests = new Map<string, CheckpointDigests>();
  /** Row id → number in its debate of each call this store recorded, for the rows that link to calls. */
  readonly #callNumbers = new Map<string, Map<unknown, number>>();
  /** The sealed rows the current write changed (`all` when unknown): only their digests are computed again. */
  #touched: Touched | 'all' = 'all';
  /** One transaction function for every write, made once (better-sqlite3 builds four wrappers per `transaction()`). */
  readonly #immediate: <T>(body: () => T) => T;
  #signer: SealSigner | null = null;
  /**
   * Debates this store has passed through the seal gate (or created), each with the seal it last
   * read or wrote: only their seals may be written. Another process that writes to the debate
   * meanwhile changes its seal, and what this store kept of it is then read and verified again.
   */
  readonly #gated = new Map<string, string | null>();
  /** Debate → `table.column` → the next number of that sequence, for the debates this store wrote to. */
  readonly #sequences = new Map<string, Map<string, number>>();
  /** The lock wait last set (every debate's recorder sets it; a pragma compiles each time). */
  #busyTimeoutMs: number | null = null;

  /** Use `openStore()`: it sets pragmas and applies migrations first. */
  constructor(sqlite: BetterSqlite3.Database, path: string) {
    super(sqlite, path);
    this.#db = drizzle(sqlite);
    this.#immediate = sqlite.transaction((body: () => unknown) => body()).immediate as <T>(body: () => T) => T;
  }

  /** Signs every seal and checkpoint written from now on with this key (docs/record.md, "Signed seals"). */
  signWith(signer: SealSigner | null): void {
    this.#signer = signer;
    // Another key changes what the gate allows: every debate passes it again.
    this.#gated.clear();
  }

  /** The key seals are signed with (`signWith`), for the features that seal rows of their own (bench runs). */
  get signer(): SealSigner | null {
    return this.#signer;
  }

  /**
   * The seal gate for a debate this store is about to write to (src/store/gate.ts): throws when its
   * record does not verify, or when this store's key may not continue it. Commands call it early,
   * before any model call; every write calls it again, in its own transaction.
   */
  checkGate(debateId: string): void {
    this.guard(`verify debate \`${debateId}\``, () =>
      this.sqlite.transaction(() => sealGate(readDebateRows(this.sqlite, debateId, (s) => this.statement(s)), { signer: this.#signer }, `Debate \`${debateId}\``)).deferred(),
    );
  }

  /**
   * Runs the gate inside the write transaction: in full on this store's first write to a debate, and
   * again whenever another writer (a second process) changed the debate since this store's last write
   * to it, which its seal shows; otherwise only that seal is read.
   */
  #gate(debateId: string, creates = false): void {
    const known = this.#gated.get(debateId);
    if (known !== undefined) {
      const now = this.statement('select seal from debates where id = ?').get(debateId) as { seal: string | null } | undefined;
      if (now !== undefined && now.seal === known) return;
      // Another writer went on with the debate (a second process): its chain, numbers and digests are no longer this store's to count on.
      this.#forget(debateId);
    }
    // A debate about to be created has no rows to read unless its id is taken.
    const taken = !creates || this.statement('select 1 from debates where id = ?').get(debateId) !== undefined;
    const rows = taken ? readDebateRows(this.sqlite, debateId, (s) => this.statement(s)) : null;
    if (creates && rows !== null) {
      throw new StoreError('DEBATE_ID_TAKEN', `A debate \`${debateId}\` is already in ${this.path}.`, {
        hint: 'Run it again: a new id is drawn each time.',
      });
    }
    sealGate(rows, { signer: this.#signer }, `Debate \`${debateId}\``);
    this.#gated.set(debateId, (rows?.debate.seal as string | null | undefined) ?? null);
  }

  /**
   * Runs the writes in `fn` and rewrites the debate's checkpoint seal over everything now
   * recorded about it, in one transaction: at every moment the seal covers every row, so a
   * debate still running verifies as strictly as a finished one (docs/record.md).
   */
  recorded<T>(debateId: string, fn: () => T): T {
    // Rows written by a feature's module (store.use) mark themselves; a lone call does not.
    return this.#write(debateId, `record debate \`${debateId}\``, fn, []);
  }

  /** Nesting depth of `#write`: only the outermost write rewrites the checkpoint. */
  #depth = 0;

  #touch(tables: readonly string[] | 'all'): void {
    if (tables === 'all') this.#touched = 'all';
    else if (this.#touched !== 'all') for (const t of tables) this.#touched.set(t, 'all');
  }

  /** Marks one row of a sealed table as changed by the current write: `row` as the write returned it. */
  #touchRow(table: string, row: Row): void {
    if (this.#touched === 'all') return;
    const known = this.#touched.get(table);
    if (known === 'all') return;
    if (known) known.push(row);
    else this.#touched.set(table, [row]);
  }

  /** Runs `fn` as one write to the debate's record, its checkpoint seal rewritten in the same transaction. `touches`: the sealed tables it writes. */
  #write<T>(debateId: string, what: string, fn: () => T, touches: readonly string[] | 'all' = 'all', creates = false): T {
    if (this.#depth > 0) {
      this.#touch(touches);
      return this.guard(what, fn);
    }
    try {
      return this.guard(what, () =>
        this.#immediate(() => {
          this.#depth++;
          this.#touched = new Map();
          this.#touch(touches);
          try {
            this.#gate(debateId, creates);
            const out = fn();
            this.#seal(debateId, this.#touched);
            return out;
          } finally {
            this.#depth--;
          }
        }),
      );
    } catch (err) {
      // Rolled back: the chain and the digests are read again from the file next time.
      this.#forget(debateId);
      throw err;
    }
  }

  #forget(debateId: string): void {
    this.#chains.delete(debateId);
    this.#digests.delete(debateId);
    this.#callNumbers.delete(debateId);
    this.#sequences.delete(debateId);
  }

  /**
   * The next number of the debate's sequence in `table`.`column` (`first` when it has none yet):
   * read from the file once per debate, then counted here, as the chain is. Not `max()` in the
   * insert itself: SQLite re-prepares a statement that takes the `max()` (or orders by a column)
   * of rows found by a bound parameter at every run, which doubled the cost of the insert.
   */
  nextNumber(debateId: string, table: string, column: string, first: number): number {
    let known = this.#sequences.get(debateId);
    if (known === undefined) this.#sequences.set(debateId, (known = new Map()));
    const key = `${table}.${column}`;
    let next = known.get(key);
    if (next === undefined) {
      next = first;
      for (const { n } of this.statement(`select ${column} as n from ${table} where debate_id = ?`).all(debateId) as { n: unknown }[]) {
        if (typeof n === 'number' && n >= next) next = n + 1;
      }
    }
    known.set(key, next + 1);
    return next;
  }

  /** How long a write waits for another process's lock before it fails with STORE_LOCKED. */
  setBusyTimeout(ms: number): void {
    const value = Math.max(0, Math.floor(ms));
    if (value === this.#busyTimeoutMs) return;
    this.sqlite.pragma(`busy_timeout = ${value}`);
    this.#busyTimeoutMs = value;
  }

  createDebate(d: NewDebate): void {
    this.#write(d.id, `create debate \`${d.id}\``, () =>
      this.sqlite
        .transaction(() => {
          this.statement(INSERT_DEBATE).run({
            id: d.id,
            question: d.question,
            preset_name: d.preset.name,
            preset_json: JSON.stringify(d.preset),
            preset_hash: presetHash(d.preset),
            engine_version: d.engineVersion,
            host: d.host,
            status: 'running',
            rounds_completed: 0,
            pid: process.pid,
            hostname: hostname(),
            created_at: d.createdAt,
          });
          const insertAgent = this.statement(INSERT_AGENT);
          d.agents.forEach((a, ordinal) =>
            insertAgent.run({
              debate_id: d.id,
              agent_id: a.id,
              role: a.role,
              ordinal,
              model: a.model,
              digest: a.digest,
              persona: a.persona,
              cluster: a.cluster,
            }),
          );
          // The id was free (the insert above would have failed): the new debate has rows in no
          // sealed table but those just written, so its checkpoint hashes only theirs, and no calls.
          this.#digests.set(d.id, new CheckpointDigests({}));
          this.#chains.set(d.id, { count: 0, head: null });
        })
        .immediate(),
      ['debates', 'agents'],
      true,
    );
  }

  /**
   * Stores one model call, chained to the previous call of its debate (docs/record.md),
   * and returns its row id.
   */
  recordCall(call: CallRecord): number {
    return this.#write(
      call.debateId,
      `record ${/^[aeiou]/.test(call.stage) ? 'an' : 'a'} ${call.stage} call of \`${call.agentId}\` for debate \`${call.debateId}\``,
      () => {
        const chain = this.#chainOf(call.debateId);
        const row = callRow(call);
        row.prev_hash = chain.head;
        row.hash = callHash(row, CALL_KEYS_SORTED);
        // Bound by position: naming 35 parameters costs more than the insert's own work.
        const result = this.statement(INSERT_CALL).run(CALL_COLUMNS.map((c) => row[c]));
        this.#chains.set(call.debateId, { count: chain.count + 1, head: row.hash });
        const id = Number(result.lastInsertRowid);
        let numbers = this.#callNumbers.get(call.debateId);
        if (numbers === undefined) this.#callNumbers.set(call.debateId, (numbers = new Map()));
        numbers.set(id, chain.count + 1);
        return id;
      },
      [],
    );
  }

  /** The number of the debate's recorded calls and the hash of its last (null before its first). */
  #chainOf(debateId: string): { count: number; head: string | null } {
    const known = this.#chains.get(debateId);
    if (known !== undefined) return known;
    const read = this.statement(
      'select count(*) as count, (select hash from calls where debate_id = @id order by id desc limit 1) as head from calls where debate_id = @id',
    ).get({ id: debateId }) as { count: number; head: string | null };
    const chain = { count: read.count, head: read.head ?? null };
    this.#chains.set(debateId, chain);
    return chain;
  }

  /** Stores an agent's outcome for a round, replacing an earlier one for the same round. */
  recordTurn(debateId: string, turn: TurnRecord): void {
    const body = turn.opening ?? turn.critique ?? null;
    this.#write(debateId, `record the round ${turn.round} turn of \`${turn.agentId}\` for debate \`${debateId}\``, () => {
      const row = this.statement(UPSERT_TURN).get({
        debate_id: debateId,
        round: turn.round,
        agent_id: turn.agentId,
        model: turn.model,
        status: turn.status,
        position: turn.position,
        confidence: turn.confidence,
        body_kind: turn.opening ? 'opening' : turn.critique ? 'critique' : null,
        body_json: body === null ? null : JSON.stringify(body),
        error: turn.error,
      }) as Row;
      this.#touchRow('turns', row);
    }, []);
  }

  recordJudgement(debateId: string, j: RoundJudgement): void {
    this.#write(debateId, `record the round ${j.round} judgement for debate \`${debateId}\``, () => {
      const row = this.statement(UPSERT_ROUND).get({
        debate_id: debateId,
        round: j.round,
        status: j.status,
        recommendation: j.score?.recommendation ?? null,
        facts: j.score?.facts ?? null,
        caveats: j.score?.caveats ?? null,
        rationale: j.score?.rationale ?? null,
        convergence: j.convergence,
        error: j.error,
      }) as Row;
      this.#touchRow('rounds', row);
    }, []);
  }

  /**
   * Records a synthesis attempt. It becomes the debate's synthesis unless it failed
   * and an earlier attempt succeeded: the latest successful one counts.
   */
  recordSynthesis(debateId: string, s: SynthesisRecord, at: number = Date.now()): void {
    const values = { debate_id: debateId, status: s.status, body_json: s.synthesis === null || s.synthesis === undefined ? null : JSON.stringify(s.synthesis), error: s.error };
    this.#write(debateId, `record the synthesis for debate \`${debateId}\``, () =>
      this.sqlite.transaction(() => {
        this.statement(INSERT_SYNTHESIS_ATTEMPT).run({ ...values, attempt: this.nextNumber(debateId, 'synthesis_attempts', 'attempt', 1), model: s.model ?? '', created_at: at });
        const current = this.statement('select status from syntheses where debate_id = ?').get(debateId) as { status: string } | undefined;
        if (current?.status === 'ok' && s.status !== 'ok') return;
        this.statement(UPSERT_SYNTHESIS).run(values);
      })(),
      ['syntheses', 'synthesis_attempts'],
    );
  }

  /** Sets the digest on every agent of the debate that runs `model` (any role). */
  setAgentDigest(debateId: string, model: string, digest: string): void {
    this.#write(debateId, `record the digest of \`${model}\` for debate \`${debateId}\``, () =>
      this.statement('update agents set digest = ? where debate_id = ? and model = ?').run(digest, debateId, model),
      ['agents'],
    );
  }

  setPlan(debateId: string, plan: unknown): void {
    const result = this.#write(debateId, `record the schedule plan of debate \`${debateId}\``, () =>
      this.statement('update debates set plan_json = ? where id = ?').run(plan === undefined || plan === null ? null : JSON.stringify(plan), debateId),
      ['debates'],
    );
    if (result.changes === 0) throw this.notFound(debateId);
  }

  /** Writes the debate's final row and seals the record with it, in one transaction. */
  finishDebate(debateId: string, f: DebateFinish): void {
    this.#write(debateId, `record the end of debate \`${debateId}\``, () => {
          const result = this.statement(FINISH_DEBATE).run({
            id: debateId,
            status: f.status,
            exit_reason: f.exitReason,
            exit_detail: f.exitDetail ?? null,
            error: f.error,
            rounds_completed: f.roundsCompleted,
            final_convergence: f.finalConvergence,
            finished_at: f.finishedAt,
          });
          if (result.changes === 0) throw this.notFound(debateId);
    }, ['debates']);
  }

  /**
   * Computes and stores the seal over everything recorded about the debate. Call inside a write
   * transaction. `touched`: the rows written since the last seal this store wrote; the other rows'
   * digests are reused, so recording a call costs the same at the 10,000th as at the first.
   */
  #seal(debateId: string, touched: Touched | 'all' = 'all'): void {
    // Every write reaches here through the gate; a path that did not is a bug, never a seal.
    if (!this.#gated.has(debateId)) throw new Error(`Internal error: a seal of debate ${debateId} was about to be written without passing the seal gate.`);
    const prepare = (source: string): BetterSqlite3.Statement => this.statement(source);
    const chain = this.#chainOf(debateId);
    // Links to calls are hashed as the call's number in the debate: look up only the linked ones.
    const linked = (): CallNumbers => {
      const rows = prepare(`select id, (select count(*) from calls c2 where c2.debate_id = @id and c2.id <= c.id) as n from calls c where c.debate_id = @id and c.id in (${LINKED_CALL_IDS})`).all({ id: debateId }) as { id: number; n: number }[];
      return new Map(rows.map((l) => [l.id, l.n]));
    };
    let digests = touched === 'all' ? undefined : this.#digests.get(debateId);
    if (!digests) {
      const rows = readSealInput(this.sqlite, debateId, prepare, false);
      if (!rows) throw this.notFound(debateId);
      digests = new CheckpointDigests(rowDigests(rows, linked()));
      this.#digests.set(debateId, digests);
    } else if (touched !== 'all') {
      for (const [table, refs] of touched) {
        if (table === 'debates') {
          const debate = prepare('select * from debates where id = ?').get(debateId) as Row | undefined;
          if (!debate) throw this.notFound(debateId);
          digests.setRow('debates', debateId, debateDigest(debate));
          continue;
        }
        const keyColumns = SEALED_TABLES[table];
        if (keyColumns === undefined) continue;
        const numbers: CallNumbers = table in CALL_LINKS ? this.#linkedCall(debateId) : NO_CALLS;
        if (refs === 'all') {
          // Every sealed table is keyed by its primary key, NOT NULL (a test holds them to it): each key
          // names one row, so the rows need no `order by rowid`, which would cost SQLite a sorter.
          digests.setTable(table, tableDigests(table, prepare(`select * from ${table} where debate_id = ?`).all(debateId) as Row[], numbers));
          continue;
        }
        // Each row as its write returned it (`returning *`, the values as stored), in the order written.
        for (const row of refs) if (row.debate_id === debateId) digests.setRow(table, rowKey(row, keyColumns), rowDigest(table, row, numbers));
      }
    }
    const seal = sealFrom(chain, digests.rowsJson());
    const signer = this.#signer;
    const signature = signer ? signer.sign(seal) : null;
    const keyId = signer ? signer.keyId : null;
    // The row digests go to `seal_rows`, a row per table, and only those of the tables this write
    // changed: a call changes none. The debate's own row then changes only in its seal, in place.
    const { all, tables } = digests.unwritten();
    if (all) prepare('delete from seal_rows where debate_id = ?').run(debateId);
    for (const [table, json] of tables) {
      if (json === null) prepare('delete from seal_rows where debate_id = ? and table_name = ?').run(debateId, table);
      else prepare(UPSERT_SEAL_ROWS).run(debateId, table, json);
    }
    // The digests a record written before `seal_rows` kept in the debate's row would win over them: gone with the first checkpoint.
    if (all) prepare('update debates set seal = ?, seal_rows_json = null, seal_signature = ?, seal_key = ? where id = ?').run(seal, signature, keyId, debateId);
    else prepare('update debates set seal = ?, seal_signature = ?, seal_key = ? where id = ?').run(seal, signature, keyId, debateId);
    this.#gated.set(debateId, seal);
  }

  /**
   * The number in the debate of a call a row links to: from memory for the calls this store
   * recorded, else counted in the file; undefined for a call outside the debate.
   */
  #linkedCall(debateId: string): CallNumbers {
    const known = this.#callNumbers.get(debateId);
    return {
      get: (id: unknown): number | undefined => {
        const number = known?.get(id);
        if (number !== undefined) return number;
        const row = this.statement('select (select count(*) from calls c2 where c2.debate_id = @debate and c2.id <= c.id) as n from calls c where c.id = @id and c.debate_id = @debate').get({ id, debate: debateId }) as { n: number } | undefined;
        return row?.n;
      },
    };
  }

  /**
   * Reopens an interrupted debate to go on from round `fromRound`: it is `running` again under
   * this process, unsealed until it ends, and a `resumptions` row says where it went on. Rows the
   * run writes again are cleared: rounds after `fromRound`, the optional stages and the synthesis.
   * Every recorded call stays, in the chain.
   */
  resumeDebate(debateId: string, r: { fromRound: number; host: string; plan: unknown; at: number }): void {
    this.#write(debateId, `resume debate \`${debateId}\``, () =>
      this.sqlite
        .transaction(() => {
          const row = this.statement('select status from debates where id = ?').get(debateId) as { status: string } | undefined;
          if (!row) throw this.notFound(debateId);
          if (row.status !== 'interrupted') {
            throw new StoreError('DEBATE_NOT_RESUMABLE', `Debate \`${debateId}\` is ${row.status}, not interrupted: there is nothing to resume.`, {
              hint: 'Only an interrupted debate (killed, stopped with Ctrl-C, or cut off from its host) can be resumed.',
            });
          }
          const id = { id: debateId };
          const run = (sql: string): void => void this.statement(sql).run(id);
          for (const table of RESUME_CLEARS) run(`delete from ${table} where debate_id = @id`);
          this.statement('delete from turns where debate_id = @id and round > @round').run({ ...id, round: r.fromRound });
          this.statement('delete from rounds where debate_id = @id and round > @round').run({ ...id, round: r.fromRound });
          this.statement('delete from result_quality where debate_id = @id and round > @round').run({ ...id, round: r.fromRound });
          this.statement(
            "update debates set status = 'running', exit_reason = null, error = null, finished_at = null, seal = null, seal_rows_json = null, seal_signature = null, seal_key = null, pid = @pid, hostname = @hostname where id = @id",
          ).run({ ...id, pid: process.pid, hostname: hostname() });
          this.statement(
            'insert into resumptions (debate_id, ordinal, from_round, calls_before, host, plan_json, pid, hostname, at) values (@id, (select count(*) from resumptions where debate_id = @id), @from, (select count(*) from calls where debate_id = @id), @host, @plan, @pid, @hostname, @at)',
          ).run({ ...id, from: r.fromRound, host: r.host, plan: r.plan === undefined || r.plan === null ? null : JSON.stringify(r.plan), pid: process.pid, hostname: hostname(), at: r.at });
          this.#forget(debateId);
        })
        .immediate(),
    );
  }

  /** Notes on the debate's latest resumption that a turn was read from a call recorded before it, not asked again. */
  recordReusedTurn(debateId: string, turn: ReusedTurn): void {
    this.#write(debateId, `record the reused round ${turn.round} turn of \`${turn.agentId}\` for debate \`${debateId}\``, () => {
      const latest = this.statement('select ordinal, reused_json from resumptions where debate_id = ? order by ordinal desc limit 1').get(debateId) as
        | { ordinal: number; reused_json: string | null }
        | undefined;
      if (!latest) throw new StoreError('NOT_RESUMED', `Debate \`${debateId}\` was not resumed: no turn of it can be reused.`);
      const reused = [...((latest.reused_json ? JSON.parse(latest.reused_json) : []) as ReusedTurn[]), turn];
      this.statement('update resumptions set reused_json = ? where debate_id = ? and ordinal = ?').run(JSON.stringify(reused), debateId, latest.ordinal);
    }, ['resumptions']);
  }

  /** Runs one write through a statement compiled once per store: for rows written once per call or rating. */
  runPrepared(what: string, source: string, params: Record<string, unknown>): void {
    const shape = statementShape(source);
    const returning = shape?.returning;
    if (shape === null || !returning) {
      this.guard(what, () => this.statement(source).run(params));
      this.#touch(shape === null ? 'all' : [shape.table]);
      return;
    }
    // The row as written comes back with the write: the checkpoint hashes it without reading it again.
    const rows = this.guard(what, () => this.statement(returning).all(params)) as Row[];
    if (rows.length === 1) this.#touchRow(shape.table, rows[0]!);
    else this.#touch([shape.table]);
  }

  /**
   * Runs `fn` against the database for the record modules of optional features
   * (votes, clash maps, bench runs). Failures become a StoreError saying what was being done.
   * Wrap writes in `db.transaction` so each lands whole.
   */
  use<T>(what: string, fn: (db: BetterSQLite3Database, sqlite: BetterSqlite3.Database) => T): T {
    this.#touch('all');
    return this.guard(what, () => fn(this.#db, this.sqlite));
  }
}

/** Column values of a recorded model call, for `calls` and the bench's `bench_calls` alike. */
export function modelCallValues(call: CallRecord) {
  const m = call.metrics;
  return {
    agentId: call.agentId,
    attempt: call.attempt,
    host: call.host,
    api: call.api ?? null,
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
  return sha256(canonicalJson(preset));
}

export { canonicalJson };

const NO_CALLS: CallNumbers = new Map();

/** What `runPrepared` reads from a statement's text, read once per statement. */
interface StatementShape {
  /** The table it writes. */
  table: string;
  /**
   * The statement with `returning *`, when the row it returns is the one row of a sealed table that
   * it wrote: an insert with no conflict clause, or one whose conflict target is the table's primary
   * key (`debate_id` and its key columns) and whose update sets none of them. Null for any other
   * write, which names its whole table.
   */
  returning: string | null;
}

const shapes = new Map<string, StatementShape | null>();

function statementShape(source: string): StatementShape | null {
  let shape = shapes.get(source);
  if (shape !== undefined) return shape;
  const table = /^\s*(?:insert\s+into|update|delete\s+from)\s+(\w+)/i.exec(source)?.[1];
  shape = table === undefined ? null : { table, returning: returnsItsRow(source, SEALED_TABLES[table]) ? `${source} returning *` : null };
  shapes.set(source, shape);
  return shape;
}

function returnsItsRow(source: string, keyColumns: readonly string[] | undefined): boolean {
  if (keyColumns === undefined || !/^\s*insert\s+into\b/i.test(source) || /\breturning\b/i.test(source)) return false;
  if (!/\bon\s+conflict\b/i.test(source)) return true;
  const target = /\bon\s+conflict\s*\(([^)]*)\)\s*do\s+(nothing|update\s+set\b([\s\S]*))$/i.exec(source.trim());
  if (target === null) return false;
  const key = new Set(['debate_id', ...keyColumns]);
  const columns = target[1]!.split(',').map((c) => c.trim());
  const setsKey = [...key].some((c) => new RegExp(`(?:^|[\\s,])${c}\\s*=`).test(target[3] ?? ''));
  return columns.length === key.size && columns.every((c) => key.has(c)) && !setsKey;
}

/** Every column of `calls` but `id`, in the order of INSERT_CALL (a test checks none is missing). */
export const CALL_COLUMNS = [
  'debate_id', 'stage', 'round', 'agent_id', 'attempt', 'host', 'api', 'model', 'messages_json', 'options_json', 'format_json',
  'raw', 'parsed_json', 'status', 'validation_error', 'normalized_json', 'error', 'truncation', 'material_json', 'budget_json', 'prompt_tokens', 'completion_tokens',
  'total_duration_ns', 'load_duration_ns', 'prompt_eval_duration_ns', 'eval_duration_ns', 'done_reason', 'started_at',
  'finished_at', 'partial', 'think', 'thinking', 'thinking_tokens', 'prev_hash', 'hash',
] as const;
/** The keys of a `calls` row as `callRow` builds it, sorted once for its canonical JSON. */
const CALL_KEYS_SORTED = [...CALL_COLUMNS].sort();

const INSERT_CALL = `insert into calls (${CALL_COLUMNS.join(', ')}) values (${CALL_COLUMNS.map(() => '?').join(', ')})`;

/** `insert … on conflict (keys) do update` for every other column: a later write for the same row replaces it. */
function upsert(table: string, keys: string[], columns: string[]): string {
  const all = [...keys, ...columns];
  return `insert into ${table} (${all.join(', ')}) values (${all.map((c) => `@${c}`).join(', ')}) on conflict (${keys.join(', ')}) do update set ${columns.map((c) => `${c} = excluded.${c}`).join(', ')}`;
}

const insertInto = (table: string, columns: string[]): string =>
  `insert into ${table} (${columns.join(', ')}) values (${columns.map((c) => `@${c}`).join(', ')})`;
const INSERT_DEBATE = insertInto('debates', [
  'id', 'question', 'preset_name', 'preset_json', 'preset_hash', 'engine_version', 'host', 'status', 'rounds_completed', 'pid', 'hostname', 'created_at',
]);
const INSERT_AGENT = insertInto('agents', ['debate_id', 'agent_id', 'role', 'ordinal', 'model', 'digest', 'persona', 'cluster']);

/** What a resumed run writes again from its rounds: the optional stages' rows and the synthesis. */
const RESUME_CLEARS = [
  'tension_maps', 'tension_claims', 'tensions', 'tension_consensus', 'tension_exchanges', 'vote_artifacts', 'votes', 'vote_tiers', 'syntheses',
];

const UPSERT_TURN = `${upsert('turns', ['debate_id', 'round', 'agent_id'], ['model', 'status', 'position', 'confidence', 'body_kind', 'body_json', 'error'])} returning *`;
const UPSERT_ROUND = `${upsert('rounds', ['debate_id', 'round'], ['status', 'recommendation', 'facts', 'caveats', 'convergence', 'rationale', 'error'])} returning *`;
const INSERT_SYNTHESIS_ATTEMPT = insertInto('synthesis_attempts', ['debate_id', 'attempt', 'model', 'status', 'body_json', 'error', 'created_at']);
const FINISH_DEBATE =
  'update debates set status = @status, exit_reason = @exit_reason, exit_detail = @exit_detail, error = @error, rounds_completed = @rounds_completed, final_convergence = @final_convergence, finished_at = @finished_at where id = @id';
const UPSERT_SYNTHESIS = upsert('syntheses', ['debate_id'], ['status', 'body_json', 'error']);
const UPSERT_SEAL_ROWS = 'insert into seal_rows (debate_id, table_name, digests_json) values (?, ?, ?) on conflict (debate_id, table_name) do update set digests_json = excluded.digests_json';

/**
 * The `calls` row of a call, with every value exactly as SQLite will hand it back,
 * so the hash computed here is the one `verify` recomputes from the stored row.
 */
function callRow(call: CallRecord): Row & { prev_hash: string | null; hash: string | null } {
  const m = call.metrics;
  return {
    debate_id: call.debateId,
    stage: call.stage,
    round: call.round,
    agent_id: text(call.agentId),
    attempt: call.attempt,
    host: text(call.host),
    api: call.api ?? null,
    model: text(call.model),
    messages_json: JSON.stringify(call.messages),
    options_json: JSON.stringify(call.options),
    format_json: call.format === null || call.format === undefined ? null : JSON.stringify(call.format),
    raw: text(call.raw),
    partial: call.partial ? 1 : null,
    think: call.think === undefined ? null : String(call.think),
    thinking: call.thinking === undefined ? null : text(call.thinking),
    thinking_tokens: call.thinkingTokens === undefined ? null : count(call.thinkingTokens),
    parsed_json: call.parsed === null || call.parsed === undefined ? null : JSON.stringify(call.parsed),
    status: call.status,
    validation_error: nullableText(call.validationError),
    normalized_json: call.normalized?.length ? JSON.stringify(call.normalized) : null,
    error: nullableText(call.error),
    truncation: nullableText(call.truncation),
    material_json: call.material?.length ? JSON.stringify(call.material) : null,
    budget_json: call.budget ? JSON.stringify(call.budget) : null,
    prompt_tokens: count(m.promptTokens),
    completion_tokens: count(m.completionTokens),
    total_duration_ns: count(m.totalDurationNs),
    load_duration_ns: count(m.loadDurationNs),
    prompt_eval_duration_ns: count(m.promptEvalDurationNs),
    eval_duration_ns: count(m.evalDurationNs),
    done_reason: nullableText(m.doneReason),
    started_at: call.startedAt,
    finished_at: call.finishedAt,
    prev_hash: null,
    hash: null,
  };
}

/** ES2024's well-formed string methods (Node 20 and later), which the ES2023 library does not declare. */
type WellFormed = string & { isWellFormed(): boolean; toWellFormed(): string };

/** SQLite stores UTF-8, where a lone surrogate becomes U+FFFD: do that first, so the hash sees what is stored. */
function text(value: string): string {
  return (value as WellFormed).isWellFormed() ? value : (value as WellFormed).toWellFormed();
}

function nullableText(value: string | null | undefined): string | null {
  return value === null || value === undefined ? null : text(value);
}

function count(value: number | null | undefined): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

