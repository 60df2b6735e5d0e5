import type BetterSqlite3 from 'better-sqlite3';
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
import { ConclaveError, StoreError } from '../errors.js';
import type { Preset } from '../config/preset-schema.js';
import type { Attachment } from '../protocol/material.js';
import type { Critique, JudgeScore, Opening, Synthesis } from '../protocol/schemas.js';
import { type DebateRows, type Row, type Verdict, readDebateRows, streamDebateRows, verifyRows } from './chain.js';
import { closeAtExit, closedBeforeExit } from './close-at-exit.js';
import { describeHolders, fileHolders } from './holders.js';
import { readAttachments, readBudgetDecisions } from './material.js';
import { readProtocolSteps, type StoredStep } from './protocols.js';
import { readQuality } from './quality.js';
import { decodeRow, type RowRepair, tableReader } from './rows.js';
import type { ReusedTurn, agents, calls, debates, resumptions, rounds, syntheses, turns } from './schema.js';
import type { synthesisAttempts } from './schema-synthesis.js';
import { readTensionMap, type StoredTensionMap } from './tensions-read.js';
import { readVoting, type StoredVoting } from './voting-read.js';
import type { RecordReading } from './writer.js';

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


export interface ListOptions {
  limit?: number;
  offset?: number;
  status?: DebateStatus;
  /** Debates run by `conclave bench`: listed with the rest (default), left out, or alone. */
  bench?: 'include' | 'hide' | 'only';
}

/**
 * Everything that reads the record, with better-sqlite3 alone: `show`, `export`, `list`, `verify`
 * and the viewer open one of these and never load drizzle. `Store` extends it with the writes.
 */
/** Whether a debate was run by `conclave bench`, as SQL on the `debates` row. */
const IS_BENCH = 'exists (select 1 from bench_trials t where t.debate_id = debates.id)';

/** A line of `list`: written out in full, each column named as DebateSummary names it. */
const LIST_SELECT = `select debates.id as id, debates.question as question, debates.preset_name as presetName, debates.status as status,
  debates.exit_reason as exitReason,
  case when debates.finished_at is null then coalesce((select max(r.round) from rounds r where r.debate_id = debates.id and r.convergence is not null), debates.rounds_completed) else debates.rounds_completed end as roundsCompleted,
  coalesce(debates.final_convergence, (select r.convergence from rounds r where r.debate_id = debates.id and r.convergence is not null order by r.round desc limit 1)) as finalConvergence,
  (select count(*) from agents a where a.debate_id = debates.id and a.role = 'debater') as agentCount,
  (select count(*) from calls c where c.debate_id = debates.id) as callCount,
  debates.created_at as createdAt, debates.finished_at as finishedAt, ${IS_BENCH} as bench
  from debates`;

/** SQLite's ascending order puts NULL first. */
function nullsFirst(a: number | null, b: number | null): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  return a - b;
}

export class RecordReader implements RecordReading {
  readonly path: string;
  protected readonly sqlite: BetterSqlite3.Database;
  readonly #statements = new Map<string, BetterSqlite3.Statement>();

  /** Use `openStore()` or `openRecord()`: they set pragmas and apply migrations first. */
  constructor(sqlite: BetterSqlite3.Database, path: string) {
    this.sqlite = sqlite;
    this.path = path;
    closeAtExit(this);
  }

  /** Runs `fn` on the database; a failure becomes a StoreError naming `what`. */
  read<T>(what: string, fn: (sqlite: BetterSqlite3.Database) => T): T {
    return this.guard(what, () => fn(this.sqlite));
  }

  /** Debates, newest first. */
  listDebates(opts: ListOptions = {}): DebateSummary[] {
    // Correlated subqueries run only for the rows on the page, and the order comes
    // straight from the (created_at, id) indexes: no table-wide sort or GROUP BY.
    const bench = opts.bench ?? 'include';
    const where = [
      ...(opts.status === undefined ? [] : ['debates.status = @status']),
      ...(bench === 'hide' ? [`not ${IS_BENCH}`] : bench === 'only' ? [IS_BENCH] : []),
    ];
    // SQLite takes OFFSET only after a LIMIT.
    const page = opts.limit !== undefined || opts.offset !== undefined ? ` limit @limit${opts.offset !== undefined ? ' offset @offset' : ''}` : '';
    const source = `${LIST_SELECT}${where.length ? ` where ${where.join(' and ')}` : ''} order by debates.created_at desc, debates.id desc${page}`;
    return this.guard('list debates', () =>
      (
        this.statement(source).all({
          ...(opts.status === undefined ? {} : { status: opts.status }),
          ...(page ? { limit: opts.limit ?? Number.MAX_SAFE_INTEGER } : {}),
          ...(opts.offset !== undefined ? { offset: opts.offset } : {}),
        }) as (Omit<DebateSummary, 'bench'> & { bench: number })[]
      ).map((r) => ({ ...r, bench: Boolean(r.bench) })),
    );
  }

  /** How many debates run by `conclave bench` there are (with this status, if given): what `list` hides by default. */
  benchDebateCount(status?: DebateStatus): number {
    return this.guard('count bench debates', () => {
      const row = this.statement(
        `select count(*) as n from debates where exists (select 1 from bench_trials t where t.debate_id = debates.id)${status ? ' and status = ?' : ''}`,
      ).get(...(status ? [status] : [])) as { n: number };
      return row.n;
    });
  }

  /** The full id of the debate whose id is `idOrPrefix` or starts with it. */
  resolveId(idOrPrefix: string): string {
    const wanted = idOrPrefix.trim();
    const matches = this.guard(`look up debate \`${wanted}\``, () => {
      if (wanted === '') return [];
      const exact = this.statement('select id from debates where id = ?').get(wanted) as { id: string } | undefined;
      if (exact) return [exact.id];
      return (this.statement('select id from debates where substr(id, 1, length(@p)) = @p order by id limit 6').all({ p: wanted }) as { id: string }[]).map((r) => r.id);
    });
    const [first, ...rest] = matches;
    if (first === undefined) throw this.notFound(wanted);
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
  /** Whether a debate with exactly this id is recorded. */
  hasDebate(id: string): boolean {
    return this.guard(`read debate \`${id}\``, () => this.statement('select 1 from debates where id = ?').get(id) !== undefined);
  }

  countDebatesWithPreset(presetName: string): number {
    return this.guard(`count the debates of preset \`${presetName}\``, () => (this.statement('select count(*) as n from debates where preset_name = ?').get(presetName) as { n: number }).n);
  }

  /**
   * Everything recorded about one debate (exact id; see `resolveId` for prefixes). `repair` sees
   * each raw row first (src/store/row-check.ts); the debate's own row left out reads as no debate.
   */
  getDebate(id: string, repair?: RowRepair): StoredDebate {
    return this.guard(`read debate \`${id}\``, () =>
      // A deferred read transaction: one consistent snapshot while the runner keeps writing.
      this.sqlite
        .transaction(() => {
          const read = tableReader((source) => this.statement(source), id, repair);
          const found = this.statement('select * from debates where id = ?').get(id) as Record<string, unknown> | undefined;
          const raw = found && repair ? repair('debates', found, 0) : found;
          if (!raw) throw this.notFound(id);
          // The seal's row digests only name what changed, for `verify`, which reads them itself: the debate is read without them.
          const { seal_rows_json: _digests, ...shown } = raw;
          const row = decodeRow<DebateRow>('debates', shown);
          const agentRows = read<AgentRow>('agents', 'ordinal, role, agent_id');
          const callRows = read<CallRow>('calls', 'id');
          // Turns in round order, then the panel's order (a turn of an agent not in the panel last).
          const order = new Map(agentRows.filter((a) => a.role === 'debater').map((a) => [a.agentId, a.ordinal]));
          const turnRows = read<TurnRow>('turns', 'round, agent_id')
            .map((turn, i) => ({ turn, ordinal: order.get(turn.agentId) ?? null, i }))
            .sort((a, b) => a.turn.round - b.turn.round || nullsFirst(a.ordinal, b.ordinal) || a.i - b.i);
          const roundRows = read<RoundRow>('rounds', 'round');
          const synthesisRow = read<SynthesisRow>('syntheses', 'debate_id')[0];
          const resumed = read<ResumptionRow>('resumptions', 'ordinal');
          // Calls are numbered within their debate, so a debate reads the same in any database it moves to.
          const numberOf = new Map(callRows.map((r, i) => [r.id, i + 1]));
          const voting = readVoting(read);
          for (const ballot of voting?.iterations.flatMap((it) => it.ballots) ?? []) {
            ballot.callId = ballot.callId === null ? null : (numberOf.get(ballot.callId) ?? null);
            ballot.firstCallId = ballot.firstCallId === null ? null : (numberOf.get(ballot.firstCallId) ?? null);
          }
          const attemptRows = read<SynthesisAttemptRow>('synthesis_attempts', 'attempt');
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
            tensions: readTensionMap(read, id),
            quality: readQuality(read),
            steps: readProtocolSteps(read).map((st) => ({ ...st, afterCallId: st.afterCallId === null ? null : (numberOf.get(st.afterCallId) ?? null) })),
            attachments: readAttachments(read),
            budgetDecisions: readBudgetDecisions(read),
          };
        })
        .deferred(),
    );
  }

  /** Every row recorded about one debate, raw, from one consistent snapshot (what `verify` and bundles use). */
  debateRows(id: string): DebateRows {
    return this.guard(`read debate \`${id}\``, () => {
      const rows = this.sqlite.transaction(() => readDebateRows(this.sqlite, id, (source) => this.statement(source))).deferred();
      if (!rows) throw this.notFound(id);
      return rows;
    });
  }

  /** Recomputes the hash chain and the seal of one debate (docs/record.md). */
  verifyDebate(id: string): Verdict {
    return this.verifyWithRow(id).verdict;
  }

  /**
   * `verifyDebate`, with the debate's own row as read (for its signature). The calls are read one
   * at a time, in one snapshot: a debate of any size is verified in the memory of one call.
   */
  verifyWithRow(id: string): { verdict: Verdict; debate: Row } {
    return this.guard(`verify debate \`${id}\``, () =>
      this.sqlite
        .transaction(() => {
          const rows = streamDebateRows(this.sqlite, id, (source) => this.statement(source));
          if (!rows) throw this.notFound(id);
          return { verdict: verifyRows(rows), debate: rows.debate };
        })
        .deferred(),
    );
  }

  /** Ids of every debate, oldest first. */
  debateIds(): string[] {
    return this.guard('list debates', () =>
      (this.statement('select id from debates order by created_at, id').all() as { id: string }[]).map((r) => r.id),
    );
  }

  /** Folds the write-ahead log back into the file and closes it. Safe to call twice. */
  close(): void {
    closedBeforeExit(this);
    if (!this.sqlite.open) return;
    try {
      this.sqlite.pragma('wal_checkpoint(TRUNCATE)');
    } catch {
      // Another connection may still be reading; the next one to close checkpoints instead.
    }
    if (!this.sqlite.readonly && !this.sqlite.memory) {
      // Left in rollback-journal mode, a closed record is read in place by a read-only connection,
      // which creates nothing beside it (read-only media included); the next writer turns WAL on again.
      // Only possible when no other connection has the file open: otherwise it stays WAL, at once.
      try {
        this.sqlite.pragma('busy_timeout = 0');
        this.sqlite.pragma('journal_mode = DELETE');
      } catch {
        // Another connection holds it: the last writer to close does this.
      }
    }
    this.sqlite.close();
  }

  protected notFound(id: string): StoreError {
    return new StoreError('DEBATE_NOT_FOUND', `No debate \`${id}\` in ${this.path}.`, {
      hint: 'Run `conclave list` to see stored debates.',
    });
  }

  /** A prepared statement, compiled once per store. */
  protected statement(source: string): BetterSqlite3.Statement {
    let statement = this.#statements.get(source);
    if (!statement) {
      statement = this.sqlite.prepare(source);
      this.#statements.set(source, statement);
    }
    return statement;
  }

  protected guard<T>(what: string, fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw storeErrorFrom(err, `Could not ${what} in ${this.path}`, this.path);
    }
  }

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
export function storeErrorFrom(err: unknown, doing: string, file?: string): ConclaveError {
  if (err instanceof StoreError) return err;
  // A refusal with its own words (the seal gate's) is not a storage failure.
  if (err instanceof ConclaveError) return err;
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
    // A read-only viewer (`conclave serve`) has the file open but cannot hold the write lock: it is not named.
    const holder = file === undefined || file === ':memory:' ? 'another process' : describeHolders(fileHolders(file).filter((h) => h.writes !== false));
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

type DebateRow = typeof debates.$inferSelect;
type ResumptionRow = typeof resumptions.$inferSelect;
type SynthesisAttemptRow = typeof synthesisAttempts.$inferSelect;
type AgentRow = typeof agents.$inferSelect;
type CallRow = typeof calls.$inferSelect;
type TurnRow = typeof turns.$inferSelect;
export type RoundRow = typeof rounds.$inferSelect;
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
    ...(r.api === 'openai' || r.api === 'embedded' ? { api: r.api } : {}),
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

/** A `rounds` row as every view reads it (the judge's axes and convergence on their 0–1 scale). */
export function toRoundJudgement(r: RoundRow): RoundJudgement {
  const score: JudgeScore | null =
    r.recommendation !== null && r.facts !== null && r.caveats !== null && r.rationale !== null
      ? { recommendation: r.recommendation, facts: r.facts, caveats: r.caveats, rationale: r.rationale }
      : null;
  return { round: r.round, status: r.status, score, convergence: r.convergence, error: r.error };
}

function toSynthesisRecord(r: SynthesisRow): SynthesisRecord {
  return { status: r.status, synthesis: (r.bodyJson as Synthesis | null) ?? null, error: r.error };
}
