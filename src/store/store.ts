import { hostname } from 'node:os';
import type BetterSqlite3 from 'better-sqlite3';
import { and, asc, desc, eq, sql } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import type { Preset } from '../config/preset-schema.js';
import type {
  AgentInfo,
  BudgetDecision,
  CallRecord,
  DebateStatus,
  ExitReason,
  QualityRecord,
  RoundJudgement,
  SynthesisRecord,
  TurnRecord,
} from '../engine/events.js';
import { StoreError } from '../errors.js';
import type { Critique, JudgeScore, Opening, Synthesis } from '../protocol/schemas.js';
import {
  callHash,
  canonicalJson,
  type DebateRows,
  readDebateRows,
  readSealInput,
  LINKED_CALL_IDS,
  CALL_LINKS,
  type CallNumbers,
  SEALED_TABLES,
  type Row,
  rowDigests,
  sealOf,
  sha256,
  type RecordRules,
  type Verdict,
  verifyRows,
} from './chain.js';
import type { SealSigner } from './signing.js';
import { type ReusedTurn, agents, calls, debates, resumptions, rounds, syntheses, turns } from './schema.js';
import { readProtocolSteps, type StoredStep } from './protocols.js';
import { readAttachments, readBudgetDecisions } from './material.js';
import type { Attachment } from '../protocol/material.js';
import { readQuality } from './quality.js';
import { synthesisAttempts } from './schema-synthesis.js';
import { describeHolders, fileHolders } from './holders.js';
import { readTensionMap, type StoredTensionMap } from './tensions.js';
import { readVoting, type StoredVoting } from './voting.js';

/** One line of `conclave list`. */
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
  /** Run as an item of a bench run (`conclave bench`), not asked by a person. */
  bench: boolean;
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
  /** Why it stopped, in words, as the live view said it; absent in records written before it was kept. */
  exitDetail?: string;
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

/** One resumption of an interrupted debate (`conclave resume`). */
export interface Resumption {
  /** The last complete round reused from the record; -1 when none was. */
  fromRound: number;
  /** Calls recorded before it went on; the calls after these are the resumed run's. */
  callsBefore: number;
  /** Turns of the round left incomplete read from calls finished before the interruption, not asked again. */
  reused: ReusedTurn[];
  host: string;
  at: number;
}

/** A whole debate as recorded: everything `show`, `replay` and `export` need. */
export interface StoredDebate extends DebateRecord {
  /** Where the debate was resumed after an interruption, oldest first; empty when it never was. */
  resumptions?: Resumption[];
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
  /** Protocol steps (bracket, verdicts, decomposition, synthesizer turn), in order; empty for a plain debate. */
  steps?: StoredStep[];
  /** Files attached to the question, whole, in the order given; empty when none were. */
  attachments?: Attachment[];
  /** What the token budget decided (material cut, calls skipped, an early stop), in order. */
  budgetDecisions?: BudgetDecision[];
  /** Quality ratings of the agents' results (docs/quality.md), in order; empty for debates recorded before them. */
  quality?: QualityRecord[];
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
  /** Why it stopped, in words; null when no exit was reported. */
  exitDetail?: string | null;
  error: string | null;
  roundsCompleted: number;
  finalConvergence: number | null;
  finishedAt: number;
}

export interface ListOptions {
  limit?: number;
  offset?: number;
  status?: DebateStatus;
  /** Debates run by `conclave bench`: listed with the rest (default), left out, or alone. */
  bench?: 'include' | 'hide' | 'only';
}

/**
 * The record of debates in one SQLite file. Every write is its own small
 * transaction, committed before the method returns.
 */
export class Store {
  readonly path: string;
  readonly #sqlite: BetterSqlite3.Database;
  readonly #db: BetterSQLite3Database;
  readonly #statements = new Map<string, BetterSqlite3.Statement>();
  /** The length and head of the chain of each debate this store has written to. */
  readonly #chains = new Map<string, { count: number; head: string | null }>();
  /** The row digests of each debate's last checkpoint, reused while only calls are added. */
  readonly #digests = new Map<string, { digests: Record<string, Record<string, string>>; json: string }>();
  /** The sealed tables the current write touched (`all` when unknown): only their digests are computed again. */
  #touched: Set<string> | 'all' = 'all';
  #signer: SealSigner | null = null;

  /** Use `openStore()`: it sets pragmas and applies migrations first. */
  constructor(sqlite: BetterSqlite3.Database, path: string) {
    this.#sqlite = sqlite;
    this.path = path;
    this.#db = drizzle(sqlite);
  }

  /** Signs every seal and checkpoint written from now on with this key (docs/record.md, "Signed seals"). */
  signWith(signer: SealSigner | null): void {
    this.#signer = signer;
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
    else if (this.#touched !== 'all') for (const t of tables) this.#touched.add(t);
  }

  /** Runs `fn` as one write to the debate's record, its checkpoint seal rewritten in the same transaction. `touches`: the sealed tables it writes. */
  #write<T>(debateId: string, what: string, fn: () => T, touches: readonly string[] | 'all' = 'all'): T {
    if (this.#depth > 0) {
      this.#touch(touches);
      return this.#guard(what, fn);
    }
    try {
      return this.#guard(what, () =>
        this.#sqlite
          .transaction(() => {
            this.#depth++;
            this.#touched = new Set();
            this.#touch(touches);
            try {
              const out = fn();
              this.#seal(debateId, this.#touched);
              return out;
            } finally {
              this.#depth--;
            }
          })
          .immediate(),
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
  }

  /** How long a write waits for another process's lock before it fails with STORE_LOCKED. */
  setBusyTimeout(ms: number): void {
    this.#sqlite.pragma(`busy_timeout = ${Math.max(0, Math.floor(ms))}`);
  }

  createDebate(d: NewDebate): void {
    this.#write(d.id, `create debate \`${d.id}\``, () =>
      this.#sqlite
        .transaction(() => {
          this.#statement(INSERT_DEBATE).run({
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
          const insertAgent = this.#statement(INSERT_AGENT);
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
        })
        .immediate(),
    );
  }

  /**
   * Stores one model call, chained to the previous call of its debate (docs/record.md),
   * and returns its row id.
   */
  recordCall(call: CallRecord): number {
    return this.#write(
      call.debateId,
      `record a ${call.stage} call of \`${call.agentId}\` for debate \`${call.debateId}\``,
      () => {
        const chain = this.#chainOf(call.debateId);
        const row = callRow(call);
        row.prev_hash = chain.head;
        row.hash = callHash(row);
        const result = this.#statement(INSERT_CALL).run(row);
        this.#chains.set(call.debateId, { count: chain.count + 1, head: row.hash });
        return Number(result.lastInsertRowid);
      },
      [],
    );
  }

  /** The number of the debate's recorded calls and the hash of its last (null before its first). */
  #chainOf(debateId: string): { count: number; head: string | null } {
    const known = this.#chains.get(debateId);
    if (known !== undefined) return known;
    const read = this.#statement(
      'select count(*) as count, (select hash from calls where debate_id = @id order by id desc limit 1) as head from calls where debate_id = @id',
    ).get({ id: debateId }) as { count: number; head: string | null };
    const chain = { count: read.count, head: read.head ?? null };
    this.#chains.set(debateId, chain);
    return chain;
  }

  /** A prepared statement, compiled once per store. */
  #statement(source: string): BetterSqlite3.Statement {
    let statement = this.#statements.get(source);
    if (!statement) {
      statement = this.#sqlite.prepare(source);
      this.#statements.set(source, statement);
    }
    return statement;
  }

  /** Stores an agent's outcome for a round, replacing an earlier one for the same round. */
  recordTurn(debateId: string, turn: TurnRecord): void {
    const body = turn.opening ?? turn.critique ?? null;
    this.#write(debateId, `record the round ${turn.round} turn of \`${turn.agentId}\` for debate \`${debateId}\``, () =>
      this.#statement(UPSERT_TURN).run({
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
      }),
      ['turns'],
    );
  }

  recordJudgement(debateId: string, j: RoundJudgement): void {
    this.#write(debateId, `record the round ${j.round} judgement for debate \`${debateId}\``, () =>
      this.#statement(UPSERT_ROUND).run({
        debate_id: debateId,
        round: j.round,
        status: j.status,
        recommendation: j.score?.recommendation ?? null,
        facts: j.score?.facts ?? null,
        caveats: j.score?.caveats ?? null,
        rationale: j.score?.rationale ?? null,
        convergence: j.convergence,
        error: j.error,
      }),
      ['rounds'],
    );
  }

  /**
   * Records a synthesis attempt. It becomes the debate's synthesis unless it failed
   * and an earlier attempt succeeded: the latest successful one counts.
   */
  recordSynthesis(debateId: string, s: SynthesisRecord, at: number = Date.now()): void {
    const values = { debate_id: debateId, status: s.status, body_json: s.synthesis === null || s.synthesis === undefined ? null : JSON.stringify(s.synthesis), error: s.error };
    this.#write(debateId, `record the synthesis for debate \`${debateId}\``, () =>
      this.#sqlite.transaction(() => {
        this.#statement(INSERT_SYNTHESIS_ATTEMPT).run({ ...values, model: s.model ?? '', created_at: at });
        const current = this.#statement('select status from syntheses where debate_id = ?').get(debateId) as { status: string } | undefined;
        if (current?.status === 'ok' && s.status !== 'ok') return;
        this.#statement(UPSERT_SYNTHESIS).run(values);
      })(),
      ['syntheses', 'synthesis_attempts'],
    );
  }

  /** Sets the digest on every agent of the debate that runs `model` (any role). */
  setAgentDigest(debateId: string, model: string, digest: string): void {
    this.#write(debateId, `record the digest of \`${model}\` for debate \`${debateId}\``, () =>
      this.#db
        .update(agents)
        .set({ digest })
        .where(and(eq(agents.debateId, debateId), eq(agents.model, model)))
        .run(),
      ['agents'],
    );
  }

  setPlan(debateId: string, plan: unknown): void {
    const result = this.#write(debateId, `record the schedule plan of debate \`${debateId}\``, () =>
      this.#statement('update debates set plan_json = ? where id = ?').run(plan === undefined || plan === null ? null : JSON.stringify(plan), debateId),
      ['debates'],
    );
    if (result.changes === 0) throw this.#notFound(debateId);
  }

  /** Writes the debate's final row and seals the record with it, in one transaction. */
  finishDebate(debateId: string, f: DebateFinish): void {
    this.#guard(`record the end of debate \`${debateId}\``, () =>
      this.#sqlite
        .transaction(() => {
          const result = this.#statement(FINISH_DEBATE).run({
            id: debateId,
            status: f.status,
            exit_reason: f.exitReason,
            exit_detail: f.exitDetail ?? null,
            error: f.error,
            rounds_completed: f.roundsCompleted,
            final_convergence: f.finalConvergence,
            finished_at: f.finishedAt,
          });
          if (result.changes === 0) throw this.#notFound(debateId);
          this.#seal(debateId);
        })
        .immediate(),
    );
  }

  /**
   * Computes and stores the seal over everything recorded about the debate. Call inside a write
   * transaction. With `callsOnly`, only calls were added since the last seal this store wrote:
   * the other rows' digests are reused, so recording a call costs the same at the 10,000th as at the first.
   */
  #seal(debateId: string, touched: Set<string> | 'all' = 'all'): void {
    const prepare = (source: string): BetterSqlite3.Statement => this.#statement(source);
    const chain = this.#chainOf(debateId);
    const cached = touched === 'all' ? undefined : this.#digests.get(debateId);
    // Links to calls are hashed as the call's number in the debate: look up only the linked ones.
    const linked = (): CallNumbers => {
      const rows = prepare(`select id, (select count(*) from calls c2 where c2.debate_id = @id and c2.id <= c.id) as n from calls c where c.debate_id = @id and c.id in (${LINKED_CALL_IDS})`).all({ id: debateId }) as { id: number; n: number }[];
      return new Map(rows.map((l) => [l.id, l.n]));
    };
    let known: { digests: Record<string, Record<string, string>>; json: string };
    if (!cached) {
      const rows = readSealInput(this.#sqlite, debateId, prepare, false);
      if (!rows) throw this.#notFound(debateId);
      const digests = rowDigests(rows, linked());
      known = { digests, json: JSON.stringify(digests) };
    } else if (touched !== 'all' && touched.size > 0) {
      // Only the tables this write touched, and the debate's own row, are read and hashed again.
      const debate = prepare('select * from debates where id = ?').get(debateId) as Row | undefined;
      if (!debate) throw this.#notFound(debateId);
      const tables: Record<string, Row[]> = {};
      for (const t of touched) if (t in SEALED_TABLES) tables[t] = prepare(`select * from ${t} where debate_id = ? order by rowid`).all(debateId) as Row[];
      const fresh = rowDigests({ debate, chain, tables }, Object.keys(tables).some((t) => t in CALL_LINKS) ? linked() : new Map());
      const digests: Record<string, Record<string, string>> = { ...cached.digests, debates: fresh.debates! };
      for (const t of Object.keys(tables)) {
        if (fresh[t]) digests[t] = fresh[t];
        else delete digests[t];
      }
      known = { digests, json: JSON.stringify(digests) };
    } else {
      known = cached;
    }
    this.#digests.set(debateId, known);
    const seal = sealOf({ debate: {}, chain, tables: {} }, known.digests);
    const signer = this.#signer;
    const signature = signer ? signer.sign(seal) : null;
    const keyId = signer ? signer.keyId : null;
    // A write that added only calls leaves the row digests as they were: only the seal changes.
    if (known === cached) prepare('update debates set seal = ?, seal_signature = ?, seal_key = ? where id = ?').run(seal, signature, keyId, debateId);
    else prepare('update debates set seal = ?, seal_rows_json = ?, seal_signature = ?, seal_key = ? where id = ?').run(seal, known.json, signature, keyId, debateId);
  }

  /** Debates, newest first. */
  listDebates(opts: ListOptions = {}): DebateSummary[] {
    // Correlated subqueries run only for the rows on the page, and the order comes
    // straight from the (created_at, id) indexes: no table-wide sort or GROUP BY.
    // Written out in full because drizzle leaves columns unqualified in a one-table select.
    const agentCount = sql<number>`(select count(*) from agents a where a.debate_id = debates.id and a.role = 'debater')`;
    const callCount = sql<number>`(select count(*) from calls c where c.debate_id = debates.id)`;
    // A debate that never finished (killed, or still running) shows the rounds its judge scored, not 0.
    const roundsCompleted = sql<number>`case when debates.finished_at is null then coalesce((select max(r.round) from rounds r where r.debate_id = debates.id and r.convergence is not null), debates.rounds_completed) else debates.rounds_completed end`;
    const finalConvergence = sql<number | null>`coalesce(debates.final_convergence, (select r.convergence from rounds r where r.debate_id = debates.id and r.convergence is not null order by r.round desc limit 1))`;
    const isBench = sql<number>`exists (select 1 from bench_trials t where t.debate_id = debates.id)`;
    const bench = opts.bench ?? 'include';
    return this.#guard('list debates', () => {
      const query = this.#db
        .select({
          id: debates.id,
          question: debates.question,
          presetName: debates.presetName,
          status: debates.status,
          exitReason: debates.exitReason,
          roundsCompleted,
          finalConvergence,
          agentCount,
          callCount,
          createdAt: debates.createdAt,
          finishedAt: debates.finishedAt,
          bench: isBench,
        })
        .from(debates)
        .where(
          and(
            opts.status === undefined ? undefined : eq(debates.status, opts.status),
            bench === 'hide' ? sql`not ${isBench}` : bench === 'only' ? isBench : undefined,
          ),
        )
        .orderBy(desc(debates.createdAt), desc(debates.id))
        .$dynamic();
      // SQLite takes OFFSET only after a LIMIT.
      if (opts.limit !== undefined || opts.offset !== undefined) query.limit(opts.limit ?? Number.MAX_SAFE_INTEGER);
      if (opts.offset !== undefined) query.offset(opts.offset);
      return query.all().map((r) => ({ ...r, bench: Boolean(r.bench) }));
    });
  }

  /** How many debates run by `conclave bench` there are (with this status, if given): what `list` hides by default. */
  benchDebateCount(status?: DebateStatus): number {
    return this.#guard('count bench debates', () => {
      const row = this.#statement(
        `select count(*) as n from debates where exists (select 1 from bench_trials t where t.debate_id = debates.id)${status ? ' and status = ?' : ''}`,
      ).get(...(status ? [status] : [])) as { n: number };
      return row.n;
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
        { hint: 'Type more characters of the id. Run `conclave list` to see full ids.' },
      );
    }
    return first;
  }

  /** How many debates are recorded with a preset of this name: a rotating synthesizer's turn. */
  countDebatesWithPreset(presetName: string): number {
    return this.#guard(`count the debates of preset \`${presetName}\``, () =>
      this.#db.select({ n: sql<number>`count(*)` }).from(debates).where(eq(debates.presetName, presetName)).get()?.n ?? 0,
    );
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
          const resumed = tx.select().from(resumptions).where(eq(resumptions.debateId, id)).orderBy(asc(resumptions.ordinal)).all();
          // Calls are numbered within their debate, so a debate reads the same in any database it moves to.
          const numberOf = new Map(callRows.map((r, i) => [r.id, i + 1]));
          const voting = readVoting(tx, id);
          for (const ballot of voting?.iterations.flatMap((it) => it.ballots) ?? []) {
            ballot.callId = ballot.callId === null ? null : (numberOf.get(ballot.callId) ?? null);
            ballot.firstCallId = ballot.firstCallId === null ? null : (numberOf.get(ballot.firstCallId) ?? null);
          }
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
            ...(row.exitDetail === null ? {} : { exitDetail: row.exitDetail }),
            error: row.error,
            roundsCompleted: row.roundsCompleted,
            finalConvergence: row.finalConvergence,
            plan: row.planJson,
            pid: row.pid,
            hostname: row.hostname,
            createdAt: row.createdAt,
            finishedAt: row.finishedAt,
            agents: agentRows.map(toAgentInfo),
            calls: callRows.map((r, i) => toStoredCall(r, i + 1)),
            turns: turnRows.map((r) => toTurnRecord(r.turn)),
            rounds: roundRows.map(toRoundJudgement),
            synthesis: synthesisRow ? toSynthesisRecord(synthesisRow) : null,
            resumptions: resumed.map((r) => ({ fromRound: r.fromRound, callsBefore: r.callsBefore, reused: r.reusedJson ?? [], host: r.host, at: r.at })),
            synthesisAttempts: attemptRows.map((r) => ({
              attempt: r.attempt,
              model: r.model,
              status: r.status,
              error: r.error,
              at: r.createdAt,
            })),
            voting,
            tensions: readTensionMap(tx, id),
            quality: readQuality(tx, id),
            steps: readProtocolSteps(tx, id).map((st) => ({ ...st, afterCallId: st.afterCallId === null ? null : (numberOf.get(st.afterCallId) ?? null) })),
            attachments: readAttachments(tx, id),
            budgetDecisions: readBudgetDecisions(tx, id),
          };
        },
        // A deferred read transaction: one consistent snapshot while the runner keeps writing.
        { behavior: 'deferred' },
      ),
    );
  }

  /**
   * Reopens an interrupted debate to go on from round `fromRound`: it is `running` again under
   * this process, unsealed until it ends, and a `resumptions` row says where it went on. Rows the
   * run writes again are cleared: rounds after `fromRound`, the optional stages and the synthesis.
   * Every recorded call stays, in the chain.
   */
  resumeDebate(debateId: string, r: { fromRound: number; host: string; plan: unknown; at: number }): void {
    this.#write(debateId, `resume debate \`${debateId}\``, () =>
      this.#sqlite
        .transaction(() => {
          const row = this.#statement('select status from debates where id = ?').get(debateId) as { status: string } | undefined;
          if (!row) throw this.#notFound(debateId);
          if (row.status !== 'interrupted') {
            throw new StoreError('DEBATE_NOT_RESUMABLE', `Debate \`${debateId}\` is ${row.status}, not interrupted: there is nothing to resume.`, {
              hint: 'Only an interrupted debate (killed, stopped with Ctrl-C, or cut off from its host) can be resumed.',
            });
          }
          const id = { id: debateId };
          const run = (sql: string): void => void this.#statement(sql).run(id);
          for (const table of RESUME_CLEARS) run(`delete from ${table} where debate_id = @id`);
          this.#statement('delete from turns where debate_id = @id and round > @round').run({ ...id, round: r.fromRound });
          this.#statement('delete from rounds where debate_id = @id and round > @round').run({ ...id, round: r.fromRound });
          this.#statement('delete from result_quality where debate_id = @id and round > @round').run({ ...id, round: r.fromRound });
          this.#statement(
            "update debates set status = 'running', exit_reason = null, error = null, finished_at = null, seal = null, seal_rows_json = null, seal_signature = null, seal_key = null, pid = @pid, hostname = @hostname where id = @id",
          ).run({ ...id, pid: process.pid, hostname: hostname() });
          this.#statement(
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
      const latest = this.#statement('select ordinal, reused_json from resumptions where debate_id = ? order by ordinal desc limit 1').get(debateId) as
        | { ordinal: number; reused_json: string | null }
        | undefined;
      if (!latest) throw new StoreError('NOT_RESUMED', `Debate \`${debateId}\` was not resumed: no turn of it can be reused.`);
      const reused = [...((latest.reused_json ? JSON.parse(latest.reused_json) : []) as ReusedTurn[]), turn];
      this.#statement('update resumptions set reused_json = ? where debate_id = ? and ordinal = ?').run(JSON.stringify(reused), debateId, latest.ordinal);
    }, ['resumptions']);
  }

  /** Every row recorded about one debate, raw, from one consistent snapshot (what `verify` and bundles use). */
  debateRows(id: string): DebateRows {
    return this.#guard(`read debate \`${id}\``, () => {
      const rows = this.#sqlite.transaction(() => readDebateRows(this.#sqlite, id, (source) => this.#statement(source))).deferred();
      if (!rows) throw this.#notFound(id);
      return rows;
    });
  }

  /** Recomputes the hash chain and the seal of one debate (docs/record.md). */
  verifyDebate(id: string): Verdict {
    return verifyRows(this.debateRows(id), this.rulesOf(id));
  }

  /** `legacy` for a debate that was in the file, unsealed, when it was upgraded to checkpoints. */
  rulesOf(id: string): RecordRules {
    return this.#guard(`read debate \`${id}\``, () =>
      this.#statement('select 1 from legacy_debates where debate_id = ?').get(id) === undefined ? 'checkpointed' : 'legacy',
    );
  }

  /** Ids of every debate, oldest first. */
  debateIds(): string[] {
    return this.#guard('list debates', () =>
      (this.#statement('select id from debates order by created_at, id').all() as { id: string }[]).map((r) => r.id),
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

  #notFound(id: string): StoreError {
    return new StoreError('DEBATE_NOT_FOUND', `No debate \`${id}\` in ${this.path}.`, {
      hint: 'Run `conclave list` to see stored debates.',
    });
  }

  /** Runs one statement or transaction, turning SQLite failures into StoreErrors. */
  /**
   * Runs `fn` against the database for the record modules of optional features
   * (votes, clash maps, bench runs). Failures become a StoreError saying what was being done.
   * Wrap writes in `db.transaction` so each lands whole.
   */
  /** Runs one write through a statement compiled once per store: for rows written once per call or rating. */
  runPrepared(what: string, source: string, params: Record<string, unknown>): void {
    const table = /^\s*(?:insert\s+into|update|delete\s+from)\s+(\w+)/i.exec(source)?.[1];
    this.#touch(table ? [table] : 'all');
    this.#guard(what, () => this.#statement(source).run(params));
  }

  use<T>(what: string, fn: (db: BetterSQLite3Database, sqlite: BetterSqlite3.Database) => T): T {
    this.#touch('all');
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

/** Every column of `calls` but `id`, in the order of INSERT_CALL (a test checks none is missing). */
export const CALL_COLUMNS = [
  'debate_id', 'stage', 'round', 'agent_id', 'attempt', 'host', 'api', 'model', 'messages_json', 'options_json', 'format_json',
  'raw', 'parsed_json', 'status', 'validation_error', 'normalized_json', 'error', 'truncation', 'material_json', 'budget_json', 'prompt_tokens', 'completion_tokens',
  'total_duration_ns', 'load_duration_ns', 'prompt_eval_duration_ns', 'eval_duration_ns', 'done_reason', 'started_at',
  'finished_at', 'partial', 'think', 'thinking', 'thinking_tokens', 'prev_hash', 'hash',
] as const;
const INSERT_CALL = `insert into calls (${CALL_COLUMNS.join(', ')}) values (${CALL_COLUMNS.map((c) => `@${c}`).join(', ')})`;

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

const UPSERT_TURN = upsert('turns', ['debate_id', 'round', 'agent_id'], ['model', 'status', 'position', 'confidence', 'body_kind', 'body_json', 'error']);
const UPSERT_ROUND = upsert('rounds', ['debate_id', 'round'], ['status', 'recommendation', 'facts', 'caveats', 'convergence', 'rationale', 'error']);
const INSERT_SYNTHESIS_ATTEMPT =
  'insert into synthesis_attempts (debate_id, attempt, model, status, body_json, error, created_at) values (@debate_id, (select coalesce(max(attempt), 0) + 1 from synthesis_attempts where debate_id = @debate_id), @model, @status, @body_json, @error, @created_at)';
const FINISH_DEBATE =
  'update debates set status = @status, exit_reason = @exit_reason, exit_detail = @exit_detail, error = @error, rounds_completed = @rounds_completed, final_convergence = @final_convergence, finished_at = @finished_at where id = @id';
const UPSERT_SYNTHESIS = upsert('syntheses', ['debate_id'], ['status', 'body_json', 'error']);

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

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/** SQLite stores UTF-8, where a lone surrogate becomes U+FFFD: do that first, so the hash sees what is stored. */
function text(value: string): string {
  return LONE_SURROGATE.test(value) ? value.replace(LONE_SURROGATES, '\uFFFD') : value;
}

function nullableText(value: string | null | undefined): string | null {
  return value === null || value === undefined ? null : text(value);
}

function count(value: number | null | undefined): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
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

function toStoredCall(r: CallRow, number: number): StoredCall {
  return {
    id: number,
    debateId: r.debateId,
    stage: r.stage,
    round: r.round,
    agentId: r.agentId,
    attempt: r.attempt,
    host: r.host,
    ...(r.api === 'openai' ? { api: 'openai' as const } : {}),
    model: r.model,
    messages: r.messagesJson,
    options: r.optionsJson,
    format: r.formatJson,
    raw: r.raw,
    ...(r.partial ? { partial: true } : {}),
    ...(r.think === null ? {} : { think: r.think === 'true' ? true : r.think === 'false' ? false : (r.think as 'low' | 'medium' | 'high') }),
    ...(r.thinking === null ? {} : { thinking: r.thinking }),
    ...(r.thinkingTokens === null ? {} : { thinkingTokens: r.thinkingTokens }),
    parsed: r.parsedJson,
    status: r.status,
    validationError: r.validationError,
    ...(r.normalizedJson?.length ? { normalized: r.normalizedJson } : {}),
    error: r.error,
    truncation: r.truncation,
    ...(r.materialJson?.length ? { material: r.materialJson } : {}),
    ...(r.budgetJson ? { budget: r.budgetJson } : {}),
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
