import { hash } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import { hasTable } from './migrations-journal.js';

// The tamper-evident record (docs/record.md, "Hash chain and seal"). Everything here works on
// rows exactly as SQLite returns them, so a third party can re-verify with any SQLite client,
// a JSON Canonicalization Scheme (RFC 8785) encoder and SHA-256.

/** Version of the encoding below; a future change of encoding bumps it. */
export const CHAIN_VERSION = 1;

/** A row as SQLite returns it: column name → value. */
export type Row = Record<string, unknown>;

/**
 * The tables the seal covers, each with the columns that identify a row within its debate.
 * `calls` is covered by the chain instead; the debate's own row is covered under `debates`.
 * A feature that adds a table of debate rows adds it here (a test checks that none is missed).
 */
export const SEALED_TABLES: Readonly<Record<string, readonly string[]>> = {
  agents: ['role', 'agent_id'],
  turns: ['round', 'agent_id'],
  rounds: ['round'],
  syntheses: [],
  synthesis_attempts: ['attempt'],
  tension_maps: [],
  tension_claims: ['claim_id'],
  tensions: ['tension_id'],
  tension_consensus: ['ordinal'],
  tension_exchanges: ['agent_id'],
  vote_artifacts: ['iteration', 'artifact_id'],
  votes: ['iteration', 'artifact_id', 'voter_id'],
  vote_tiers: ['iteration', 'artifact_id'],
  protocol_steps: ['seq'],
  result_quality: ['stage', 'round', 'agent_id', 'try'],
  resumptions: ['ordinal'],
  attachments: ['ordinal'],
  budget_decisions: ['seq'],
};

/** Columns that point at `calls.id`: row ids change when a debate moves, so they are hashed (and bundled) as the call's number. */
export const CALL_LINKS: Readonly<Record<string, readonly string[]>> = {
  votes: ['call_id', 'first_call_id'],
  protocol_steps: ['after_call_id'],
};

/** SQL selecting the row ids of every call that a sealed row links to, for the debate `@id`. */
export const LINKED_CALL_IDS = Object.entries(CALL_LINKS)
  .flatMap(([table, columns]) => columns.map((c) => `select ${c} from ${table} where debate_id = @id`))
  .join(' union ');

/** Columns that hold the chain itself and are never hashed. */
const DEBATE_SEAL_COLUMNS = ['seal', 'seal_rows_json', 'seal_signature', 'seal_key'];

/** JSON with keys sorted by UTF-16 code units and no whitespace (RFC 8785 for the values a record holds). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    // No prototype: a key `__proto__` (a row's key is data, a hand edit's included) stays a key of its own.
    const out: Record<string, unknown> = Object.create(null);
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

export function sha256(text: string): string {
  return hash('sha256', text, 'hex');
}

/** A row's hashed content: every column but those left out, and none whose value is NULL. */
function content(row: Row, leaveOut: readonly string[]): Row {
  const out: Row = {};
  for (const key in row) {
    const v = row[key];
    if (v !== null && v !== undefined && !leaveOut.includes(key)) out[key] = v;
  }
  return out;
}

/** `"key":` for each column name met so far: a row's keys are the same few dozen names, row after row. */
const keyPrefixes = new Map<string, string>();

function keyPrefix(key: string): string {
  let prefix = keyPrefixes.get(key);
  if (prefix === undefined) {
    prefix = `${JSON.stringify(key)}:`;
    keyPrefixes.set(key, prefix);
  }
  return prefix;
}

/**
 * The JSON of a row's columns that are neither NULL nor left out, keys sorted. `keys`: the row's
 * own keys, sorted, when the caller knows them. `object` writes a value that is an object (SQLite
 * returns one only for a blob). A row of plain values is copied, key by key in sorted order, into
 * one object that `JSON.stringify` writes in a single pass: the same text as writing each key and
 * value, at a third of the cost, as long as no key is integer-like (those it would write first)
 * or `__proto__` (which would not be copied); such a row, and one with an object, is written
 * key by key.
 */
function canonicalRow(row: Row, leaveOut: readonly string[], keys: readonly string[] = Object.keys(row).sort(), object: (v: object) => string = JSON.stringify): string {
  const plain: Row = {};
  for (const key of keys) {
    const v = row[key];
    if (v === null || v === undefined || leaveOut.includes(key)) continue;
    if (typeof v === 'object' || !plainKey(key)) return canonicalRowKeyByKey(row, leaveOut, keys, object);
    plain[key] = v;
  }
  return JSON.stringify(plain);
}

/** A key an object keeps in insertion order, as an own property: not integer-like (they start with a digit), not `__proto__`. */
function plainKey(key: string): boolean {
  const first = key.charCodeAt(0);
  return !(first >= 48 && first <= 57) && key !== '__proto__';
}

function canonicalRowKeyByKey(row: Row, leaveOut: readonly string[], keys: readonly string[], object: (v: object) => string): string {
  let out = '';
  for (const key of keys) {
    const v = row[key];
    if (v === null || v === undefined || leaveOut.includes(key)) continue;
    out += `${out === '' ? '' : ','}${keyPrefix(key)}${typeof v === 'object' ? object(v) : JSON.stringify(v)}`;
  }
  return `{${out}}`;
}

const CALL_LEAVE_OUT = ['id', 'hash'];

/** The hash of a `calls` row: its content, `prev_hash` (the previous call's hash) included. `sortedKeys`: the row's keys, sorted, when the caller knows them. */
export function callHash(row: Row, sortedKeys?: readonly string[]): string {
  return sha256(canonicalRow(row, CALL_LEAVE_OUT, sortedKeys));
}

/** The digest of the debate's own row: every column but the seal's. */
export function debateDigest(debate: Row): string {
  return sha256(canonicalRow(debate, DEBATE_SEAL_COLUMNS));
}

/** The digest of one row of a sealed table; links to calls are hashed as the calls' numbers in the debate. */
export function rowDigest(table: string, row: Row, callNumber: CallNumbers): string {
  const links = CALL_LINKS[table];
  if (links === undefined) return plainRowDigest(row);
  const hashed = content(row, []);
  for (const link of links) {
    // A link to a call outside this debate hashes as 0, so repointing a link is seen too.
    if (hashed[link] !== undefined) hashed[link] = callNumber.get(hashed[link]) ?? 0;
  }
  return sha256(canonicalJson(hashed));
}

const NOTHING_LEFT_OUT: readonly string[] = [];

/** The digest of a row that links to no call: `sha256(canonicalJson(content(row, [])))`, without the copies. */
export function plainRowDigest(row: Row): string {
  return sha256(canonicalRow(row, NOTHING_LEFT_OUT, undefined, canonicalJson));
}

/** Everything recorded about one debate, as raw rows: what the seal covers and what a bundle carries. */
export interface DebateRows {
  debate: Row;
  /** In recording order (row id); each row still has its `id` and `hash`. */
  calls: Row[];
  /** Rows of each table in SEALED_TABLES, in insertion order. */
  tables: Record<string, Row[]>;
}

/** The sealed rows of a debate with only the chain's length and head: what computing a seal needs. */
export interface SealInput {
  debate: Row;
  chain: { count: number; head: string | null };
  calls?: Row[];
  tables: Record<string, Row[]>;
}

type Prepare = (source: string) => BetterSqlite3.Statement;

/** Reads every row of one debate, straight from SQLite. Run it inside a transaction for one snapshot. */
export function readDebateRows(sqlite: BetterSqlite3.Database, debateId: string, prepare: Prepare = (s) => sqlite.prepare(s)): DebateRows | null {
  const sealed = readSealInput(sqlite, debateId, prepare, false);
  if (!sealed) return null;
  const calls = prepare('select * from calls where debate_id = ? order by id').all(debateId) as Row[];
  const debate = sealed.debate.seal_rows_json === null || sealed.debate.seal_rows_json === undefined ? { ...sealed.debate, seal_rows_json: recordedDigestsJson(sqlite, debateId, prepare) } : sealed.debate;
  return { debate, calls, tables: sealed.tables };
}

/** A debate's rows as `verifyRows` reads them: its `count` calls one at a time, in recording order, so memory holds one call, not the debate's. */
export interface StreamedDebateRows {
  debate: Row;
  count: number;
  calls: Iterable<Row>;
  tables: Record<string, Row[]>;
}

/** `readDebateRows` with the calls left to be read one at a time: verify it within the same transaction, for one snapshot. */
export function streamDebateRows(sqlite: BetterSqlite3.Database, debateId: string, prepare: Prepare = (s) => sqlite.prepare(s)): StreamedDebateRows | null {
  const sealed = readSealInput(sqlite, debateId, prepare, false);
  if (!sealed) return null;
  const { count } = prepare('select count(*) as count from calls where debate_id = ?').get(debateId) as { count: number };
  const calls = prepare('select * from calls where debate_id = ? order by id');
  const debate = sealed.debate.seal_rows_json === null || sealed.debate.seal_rows_json === undefined ? { ...sealed.debate, seal_rows_json: recordedDigestsJson(sqlite, debateId, prepare) } : sealed.debate;
  return { debate, count, calls: { [Symbol.iterator]: () => calls.iterate(debateId) as IterableIterator<Row> }, tables: sealed.tables };
}

/** Connections known to have the `seal_rows` table (a record written before it is read as it is, without it, until a writer adds it). */
const withSealRows = new WeakSet<BetterSqlite3.Database>();

/**
 * The row digests of the debate's latest checkpoint as one canonical JSON text, the form of
 * `seal_rows_json`, put together from its `seal_rows` (one per table, written by each checkpoint
 * for the tables it changed); null when it has none.
 */
function recordedDigestsJson(sqlite: BetterSqlite3.Database, debateId: string, prepare: Prepare): string | null {
  if (!withSealRows.has(sqlite)) {
    if (!hasTable(sqlite, 'seal_rows')) return null;
    withSealRows.add(sqlite);
  }
  // The primary key orders them by table name, as the canonical JSON does.
  const tables = prepare('select table_name, digests_json from seal_rows where debate_id = ? order by table_name').all(debateId) as { table_name: string; digests_json: string }[];
  return tables.length === 0 ? null : joinTableDigests(tables.map((t) => [t.table_name, t.digests_json]));
}

/**
 * The canonical JSON of a debate's row digests from each table's own, given in table-name order
 * (table names sort as plain strings: none is a number). The seal hashes this text.
 */
export function joinTableDigests(tables: Iterable<readonly [table: string, json: string]>): string {
  const parts: string[] = [];
  for (const [table, json] of tables) parts.push(`${JSON.stringify(table)}:${json}`);
  return `{${parts.join(',')}}`;
}

/** The debate's row, its sealed tables, and its chain's length and head, without reading the calls themselves. */
export function readSealInput(sqlite: BetterSqlite3.Database, debateId: string, prepare: Prepare = (s) => sqlite.prepare(s), chain = true): SealInput | null {
  const debate = prepare('select * from debates where id = ?').get(debateId) as Row | undefined;
  if (!debate) return null;
  const tables: Record<string, Row[]> = {};
  for (const table of Object.keys(SEALED_TABLES)) {
    tables[table] = prepare(`select * from ${table} where debate_id = ? order by rowid`).all(debateId) as Row[];
  }
  const summary = chain
    ? (prepare('select count(*) as count, (select hash from calls where debate_id = @id order by id desc limit 1) as head from calls where debate_id = @id').get({ id: debateId }) as { count: number; head: string | null })
    : { count: 0, head: null };
  return { debate, chain: summary, tables };
}

function chainOf(rows: DebateRows | SealInput): { count: number; head: string | null } {
  if ('chain' in rows) return rows.chain;
  return { count: rows.calls.length, head: rows.calls.length > 0 ? ((rows.calls.at(-1)!.hash as string | null) ?? null) : null };
}

/** The digest of each sealed row, keyed by table and then by the row's identifying columns. */
export function rowDigests(rows: DebateRows | SealInput, callNumber = callNumbers(rows)): Record<string, Record<string, string>> {
  const position = callNumber;
  const out: Record<string, Record<string, string>> = {
    debates: { [String(rows.debate.id)]: debateDigest(rows.debate) },
  };
  for (const table of Object.keys(SEALED_TABLES)) {
    const list = rows.tables[table] ?? [];
    if (list.length > 0) out[table] = tableDigests(table, list, position);
  }
  return out;
}

/**
 * The digest of each of a debate's rows in one sealed table, by the row's key. The object has no
 * prototype, so any key (`__proto__` included: a key is data, a hand edit's too) is its own.
 */
export function tableDigests(table: string, rows: readonly Row[], callNumber: CallNumbers): Record<string, string> {
  const keyColumns = SEALED_TABLES[table]!;
  const digests: Record<string, string> = Object.create(null);
  for (const row of rows) digests[rowKey(row, keyColumns)] = rowDigest(table, row, callNumber);
  return digests;
}

/** Call row id → its number in the debate, for the links that point at calls. */
export type CallNumbers = { get(id: unknown): number | undefined };

function callNumbers(rows: DebateRows | SealInput): CallNumbers {
  return new Map<unknown, number>((rows.calls ?? []).map((c, i) => [c.id, i + 1]));
}

/** The key a sealed row's digest is filed under in its table: its identifying columns, joined by `/`. */
export function rowKey(row: Row, keyColumns: readonly string[]): string {
  return keyColumns.length === 0 ? '-' : keyColumns.map((c) => String(row[c])).join('/');
}

/** The seal: the chain's head and call count with the digest of every sealed row. */
export function sealOf(rows: DebateRows | SealInput, digests = rowDigests(rows)): string {
  return sealFrom(chainOf(rows), canonicalJson(digests));
}

/**
 * The seal from the chain and the canonical JSON of the row digests: the same text as
 * `canonicalJson({ v, calls, rows })` (keys sorted: calls, rows, v), so a writer that keeps the
 * digests' JSON between writes does not sort them again.
 */
export function sealFrom(chain: { count: number; head: string | null }, rowsJson: string): string {
  // `canonicalJson({ count, head })`, written out: both keys are always there, in this order.
  return sha256(`{"calls":{"count":${JSON.stringify(chain.count)},"head":${JSON.stringify(chain.head)}},"rows":${rowsJson},"v":${CHAIN_VERSION}}`);
}

/** Where a recorded call sits in its debate, to name it in a report. */
export interface CallPlace {
  /** 1-based, in recording order: the call's `id` in the JSON document. */
  number: number;
  stage: string;
  round: number;
  agentId: string;
  attempt: number;
}

export type Verdict =
  | { state: 'sealed'; calls: number; seal: string; signedBy?: string; adoptedAt?: number }
  | { state: 'unsealed'; calls: number; reason: string; seal?: string; signedBy?: string; adoptedAt?: number }
  | { state: 'broken'; calls: number; problem: string; call?: CallPlace; row?: { table: string; key: string } };

/**
 * Recomputes the chain and the seal of one debate. `broken` names the first call, or else the
 * first row, that does not match. A debate still running, or whose process died, is `unsealed`:
 * its rows are checked against the checkpoint seal written with its last row, as strictly as a
 * sealed one. Every debate has a seal: those recorded before seals existed were sealed as they
 * stood when their file was upgraded, and carry `adopted_at` (src/store/adopt.ts).
 */
export function verifyRows(rows: DebateRows | StreamedDebateRows): Verdict {
  const calls = 'count' in rows ? rows.count : rows.calls.length;
  const seal = (rows.debate.seal as string | null | undefined) ?? null;
  const adopted = typeof rows.debate.adopted_at === 'number' ? { adoptedAt: rows.debate.adopted_at } : {};

  let prev: string | null = null;
  let i = 0;
  // Call row id → its number in the debate, for the rows that link to calls.
  const numbers = new Map<unknown, number>();
  for (const row of rows.calls) {
    const problem =
      row.hash === null || row.hash === undefined
        ? 'it has no hash'
        : row.hash !== callHash(row)
          ? 'its content does not match its hash (edited since it was recorded)'
          : (row.prev_hash ?? null) !== prev
            ? 'it does not follow the call before it (a call was removed or the calls reordered)'
            : null;
    if (problem !== null) return { state: 'broken', calls, problem, call: placeOf(row, i) };
    prev = row.hash as string;
    numbers.set(row.id, ++i);
  }
  const chain = { count: i, head: prev };

  const status = String(rows.debate.status);
  if (seal === null) return { state: 'broken', calls, problem: `the debate's seal is missing: it was removed after it was written (Conclave seals every debate, ${status} or not, as each row is written)` };

  // A debate whose process died was sealed while `running`; opening the file then marks it
  // interrupted, the one change made to a record without sealing it again.
  const forms = [rows.debate];
  if (status === 'interrupted' && rows.debate.exit_reason === 'interrupted') {
    forms.push({ ...rows.debate, status: 'running', exit_reason: null, finished_at: null });
  }
  const recorded = parseRecordedDigests(rows.debate.seal_rows_json);
  let firstProblem: { table: string; key: string; problem: string } | null = null;
  for (const [f, debate] of forms.entries()) {
    const form: SealInput = { debate, chain, tables: rows.tables };
    const digests = rowDigests(form, numbers);
    if (sealOf(form, digests) === seal) {
      if (f === 1) return { state: 'unsealed', calls, seal, reason: 'its process died before it ended; every row matches the checkpoint written with its last record', ...adopted };
      if (status === 'running') return { state: 'unsealed', calls, seal, reason: 'still running, or killed before it ended; every row matches its latest checkpoint', ...adopted };
      return { state: 'sealed', calls, seal, ...adopted };
    }
    const changed = recorded ? firstDifference(recorded, digests) : null;
    // Name a changed row from the form whose own row matches what was recorded, if any.
    if (changed && (firstProblem === null || changed.table !== 'debates')) firstProblem = changed;
  }
  if (firstProblem) return { state: 'broken', calls, problem: firstProblem.problem, row: { table: firstProblem.table, key: firstProblem.key } };
  return { state: 'broken', calls, problem: 'the record does not match its seal (the seal, the row digests or the last call changed)' };
}

function placeOf(row: Row, index: number): CallPlace {
  return {
    number: index + 1,
    stage: String(row.stage),
    round: Number(row.round),
    agentId: String(row.agent_id),
    attempt: Number(row.attempt),
  };
}

function parseRecordedDigests(value: unknown): Record<string, Record<string, string>> | null {
  if (typeof value !== 'string') return null;
  try {
    const parsed = JSON.parse(value) as unknown;
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, Record<string, string>>) : null;
  } catch {
    return null;
  }
}

function firstDifference(
  recorded: Record<string, Record<string, string>>,
  now: Record<string, Record<string, string>>,
): { table: string; key: string; problem: string } | null {
  const tables = ['debates', ...Object.keys(SEALED_TABLES)];
  for (const table of tables) {
    const before = recorded[table] ?? {};
    const after = now[table] ?? {};
    for (const key of Object.keys(before)) {
      if (!Object.hasOwn(after, key)) return { table, key, problem: `a \`${table}\` row (${key}) was removed` };
      if (before[key] !== after[key]) return { table, key, problem: `a \`${table}\` row (${key}) was edited` };
    }
    for (const key of Object.keys(after)) {
      if (!Object.hasOwn(before, key)) return { table, key, problem: `a \`${table}\` row (${key}) was added` };
    }
  }
  return null;
}

/** One line naming what does not match, for messages. */
export function describeBreak(v: Extract<Verdict, { state: 'broken' }>): string {
  if (v.call) {
    const c = v.call;
    return `call ${c.number} of ${v.calls} (${c.stage}, round ${c.round}, ${c.agentId}${c.attempt > 0 ? ', repair' : ''}): ${v.problem}`;
  }
  return v.problem;
}
