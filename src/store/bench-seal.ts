import type BetterSqlite3 from 'better-sqlite3';
import { IntegrityError } from '../errors.js';
import { canonicalJson, plainRowDigest, type Row, sha256 } from './chain.js';
import { hasTable } from './migrations-journal.js';
import { continueSignature } from './gate.js';
import type { SealSigner } from './signing.js';

// The seal of a bench run (docs/record.md, "Bench runs"): the figures of `bench report` and
// `rescore` come from these rows, so they are sealed as a debate's are. Raw rows as SQLite returns
// them, canonical JSON and SHA-256, as in chain.ts; no drizzle here, so `verify` can load it.

/** Version of the encoding below. */
export const BENCH_SEAL_VERSION = 1;

/** A part's digests: table → the row's key within the part → the row's digest. */
export type PartDigests = Record<string, Record<string, string>>;

/** The part that holds the run's own row and its items. */
export const RUN_PART = 'run';

/** The part that holds one trial's row, results, answers and baseline calls. */
export function trialPart(trialId: number | bigint): string {
  return `trial ${String(trialId)}`;
}

type Prepare = (source: string) => BetterSqlite3.Statement;

function digestsBy(rows: readonly Row[], key: (row: Row) => string): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const row of rows) out[key(row)] = plainRowDigest(row);
  return out;
}

/** Drops the tables without rows, as a part is written. */
function compact(part: PartDigests): PartDigests {
  const out: PartDigests = {};
  for (const [table, rows] of Object.entries(part)) if (Object.keys(rows).length > 0) out[table] = rows;
  return out;
}

function readRunPart(prepare: Prepare, runId: string): PartDigests | null {
  const run = prepare('select * from bench_runs where id = ?').get(runId) as Row | undefined;
  if (!run) return null;
  // An adopted run's mark is hashed as a column of its row: it can be neither added nor removed unseen.
  const adopted = prepare('select adopted_at from bench_seals where run_id = ?').get(runId) as { adopted_at: number | null } | undefined;
  const items = prepare('select * from bench_items where run_id = ?').all(runId) as Row[];
  return compact({ bench_runs: { [runId]: plainRowDigest({ ...run, adopted_at: adopted?.adopted_at ?? null }) }, bench_items: digestsBy(items, (r) => String(r.item_id)) });
}

/** The tables of a trial's part, each with the key of a row within the trial. */
const TRIAL_TABLES: readonly [table: string, key: (row: Row) => string][] = [
  ['bench_results', (r) => `${String(r.condition)}/${String(r.variant)}`],
  ['bench_answers', (r) => `${String(r.source)}/${String(r.round)}/${String(r.slot)}`],
  ['bench_calls', (r) => String(r.id)],
];

function trialPartOf(trial: Row, rows: (table: string) => readonly Row[], tables = TRIAL_TABLES): PartDigests {
  const part: PartDigests = { bench_trials: { '-': plainRowDigest(trial) } };
  for (const [table, key] of tables) part[table] = digestsBy(rows(table), key);
  return compact(part);
}

function readTrialPart(prepare: Prepare, trialId: number | bigint): PartDigests | null {
  const trial = prepare('select * from bench_trials where id = ?').get(trialId) as Row | undefined;
  if (!trial) return null;
  return trialPartOf(trial, (table) => prepare(`select * from ${table} where trial_id = ?`).all(trialId) as Row[]);
}

function trialIdsOf(prepare: Prepare, runId: string): number[] {
  return (prepare('select id from bench_trials where run_id = ? order by id').all(runId) as { id: number }[]).map((r) => r.id);
}

/**
 * Every part of the run, computed from its rows (read table by table, not trial by trial); null for
 * a run that is not there. With `tables`, a trial's part holds its own row and those tables' only.
 */
export function readBenchParts(sqlite: BetterSqlite3.Database, runId: string, prepare: Prepare = (s) => sqlite.prepare(s), tables = TRIAL_TABLES): Map<string, PartDigests> | null {
  const run = readRunPart(prepare, runId);
  if (run === null) return null;
  const parts = new Map<string, PartDigests>([[RUN_PART, run]]);
  const byTrial = new Map<string, Map<unknown, Row[]>>();
  for (const [table] of tables) {
    const groups = new Map<unknown, Row[]>();
    for (const row of prepare(`select * from ${table} where trial_id in (select id from bench_trials where run_id = ?)`).all(runId) as Row[]) {
      const list = groups.get(row.trial_id);
      if (list) list.push(row);
      else groups.set(row.trial_id, [row]);
    }
    byTrial.set(table, groups);
  }
  for (const trial of prepare('select * from bench_trials where run_id = ? order by id').all(runId) as Row[]) {
    parts.set(trialPart(trial.id as number), trialPartOf(trial, (table) => byTrial.get(table)!.get(trial.id) ?? [], tables));
  }
  return parts;
}

/**
 * The seal over a run's parts, given as the SHA-256 of each part's canonical JSON: the SHA-256 of
 * `canonicalJson({ parts: { name: hash, … }, v })` (part names are never integer-like, so they
 * sort as plain strings). A write hashes again only the parts it changed.
 */
export function benchSealFrom(partHashes: ReadonlyMap<string, string>): string {
  const names = [...partHashes.keys()].sort();
  return sha256(`{"parts":{${names.map((n) => `${JSON.stringify(n)}:${JSON.stringify(partHashes.get(n)!)}`).join(',')}},"v":${BENCH_SEAL_VERSION}}`);
}

function hashesOf(partsJson: ReadonlyMap<string, string>): Map<string, string> {
  return new Map([...partsJson].map(([name, json]) => [name, sha256(json)]));
}

function partsJsonOf(parts: ReadonlyMap<string, PartDigests>): Map<string, string> {
  return new Map([...parts].map(([name, part]) => [name, canonicalJson(part)]));
}

export type BenchVerdict =
  | { state: 'sealed'; runId: string; trials: number; seal: string; signedBy?: string; adoptedAt?: number }
  | { state: 'unsealed'; runId: string; trials: number; reason: string }
  | { state: 'broken'; runId: string; trials: number; problem: string; row?: { table: string; key: string } };

const MISSING_SEAL =
  "the run's seal is missing: it was removed after it was written (Conclave seals every bench run as each row is written, and sealed the runs recorded before that when the file was upgraded)";
const SEAL_CHANGED = 'the run does not match its seal (the seal or the recorded row digests changed)';

/** What a run in a record from before bench seals is, said plainly wherever its figures are shown. */
export const UNSEALED_RUN = 'recorded before bench runs were sealed; its figures cannot be checked';

/**
 * Recomputes a run's seal from its rows. `broken` names the first row that does not match what
 * was sealed, by table and key, when the recorded digests still show which. A run recorded before
 * runs were sealed was sealed as it stood when its file was upgraded and carries `adopted_at`; in a
 * record not upgraded yet (read as it is), it is `unsealed`.
 */
export function verifyBenchRun(sqlite: BetterSqlite3.Database, runId: string, prepare: Prepare = (s) => sqlite.prepare(s)): BenchVerdict | null {
  const exists = prepare('select 1 from bench_runs where id = ?').get(runId) !== undefined;
  if (!exists) return null;
  if (!withBenchSeals(sqlite)) return { state: 'unsealed', runId, trials: trialIdsOf(prepare, runId).length, reason: UNSEALED_RUN };
  const run = (prepare('select seal, seal_key, adopted_at from bench_seals where run_id = ?').get(runId) as Row | undefined) ?? {};
  const parts = readBenchParts(sqlite, runId, prepare)!;
  const trials = parts.size - 1;
  const seal = typeof run.seal === 'string' ? run.seal : null;
  if (seal === null) return { state: 'broken', runId, trials, problem: MISSING_SEAL };
  if (benchSealFrom(hashesOf(partsJsonOf(parts))) === seal) return sealedVerdict(runId, trials, seal, run);
  const changed = firstDifference(readRecordedParts(prepare, runId), parts, trialLookup(prepare));
  if (changed === null) return { state: 'broken', runId, trials, problem: SEAL_CHANGED };
  return { state: 'broken', runId, trials, problem: changed.problem, row: { table: changed.table, key: changed.key } };
}

/** The tables `bench list` hashes again (`glanceBenchRun`): a trial's own row and its results, which the report's accuracy figures are read from. */
const GLANCED_TABLES = TRIAL_TABLES.filter(([table]) => table === 'bench_results');

/**
 * What `bench list` says of a run, without hashing every row as `verifyBenchRun` does: the seal is
 * computed again from the row digests recorded with it (`bench_seal_rows`), and the rows of the run,
 * its items, its trials and their results are hashed again and compared with those digests. The
 * answers and the baseline calls (most of a run's rows and bytes) are left to `verify`: an edit of
 * one of them alone, that leaves its recorded digest as it was, passes this check. Digests that do
 * not give the seal send the run to `verifyBenchRun`. A broken verdict here is one `verify` gives too.
 */
export function glanceBenchRun(sqlite: BetterSqlite3.Database, runId: string, prepare: Prepare = (s) => sqlite.prepare(s)): BenchVerdict | null {
  if (prepare('select 1 from bench_runs where id = ?').get(runId) === undefined) return null;
  if (!withBenchSeals(sqlite)) return { state: 'unsealed', runId, trials: trialIdsOf(prepare, runId).length, reason: UNSEALED_RUN };
  const run = (prepare('select seal, seal_key, adopted_at from bench_seals where run_id = ?').get(runId) as Row | undefined) ?? {};
  const parts = readBenchParts(sqlite, runId, prepare, GLANCED_TABLES)!;
  const trials = parts.size - 1;
  const seal = typeof run.seal === 'string' ? run.seal : null;
  if (seal === null) return { state: 'broken', runId, trials, problem: MISSING_SEAL };
  const recordedJson = new Map((prepare('select part, digests_json from bench_seal_rows where run_id = ?').all(runId) as { part: string; digests_json: string }[]).map((r) => [r.part, r.digests_json]));
  // Digests that no longer give the seal vouch for nothing: the rows themselves say whether the run changed.
  if (benchSealFrom(hashesOf(recordedJson)) !== seal) return verifyBenchRun(sqlite, runId, prepare);
  const checked = new Set(['bench_runs', 'bench_items', 'bench_trials', ...GLANCED_TABLES.map(([table]) => table)]);
  const recorded = new Map([...parsedParts(recordedJson)].map(([name, part]) => [name, Object.fromEntries(Object.entries(part).filter(([table]) => checked.has(table)))]));
  const changed = firstDifference(recorded, parts, trialLookup(prepare));
  if (changed !== null) return { state: 'broken', runId, trials, problem: changed.problem, row: { table: changed.table, key: changed.key } };
  return sealedVerdict(runId, trials, seal, run);
}

function sealedVerdict(runId: string, trials: number, seal: string, run: Row): BenchVerdict {
  return {
    state: 'sealed',
    runId,
    trials,
    seal,
    ...(typeof run.seal_key === 'string' && run.seal_key !== '' ? { signedBy: run.seal_key } : {}),
    ...(typeof run.adopted_at === 'number' ? { adoptedAt: run.adopted_at } : {}),
  };
}

function trialLookup(prepare: Prepare): (id: number) => { item_id: string; preset: string } | undefined {
  return (id) => prepare('select item_id, preset from bench_trials where id = ?').get(id) as { item_id: string; preset: string } | undefined;
}

function readRecordedParts(prepare: Prepare, runId: string): Map<string, PartDigests> {
  const rows = prepare('select part, digests_json from bench_seal_rows where run_id = ?').all(runId) as { part: string; digests_json: string }[];
  return parsedParts(new Map(rows.map((r) => [r.part, r.digests_json])));
}

function parsedParts(partsJson: ReadonlyMap<string, string>): Map<string, PartDigests> {
  const out = new Map<string, PartDigests>();
  for (const [part, json] of partsJson) {
    try {
      const parsed = JSON.parse(json) as unknown;
      if (parsed && typeof parsed === 'object') out.set(part, parsed as PartDigests);
    } catch {
      // An unreadable part names nothing; the seal still says the run changed.
    }
  }
  return out;
}

const TABLE_ORDER = ['bench_runs', 'bench_items', 'bench_trials', 'bench_results', 'bench_answers', 'bench_calls'];

function firstDifference(
  recorded: Map<string, PartDigests>,
  now: Map<string, PartDigests>,
  trialOf: (id: number) => { item_id: string; preset: string } | undefined,
): { table: string; key: string; problem: string } | null {
  const names = [...new Set([...recorded.keys(), ...now.keys()])].sort((a, b) => partOrder(a) - partOrder(b));
  for (const name of names) {
    const before = recorded.get(name) ?? {};
    const after = now.get(name) ?? {};
    for (const table of TABLE_ORDER) {
      const b = before[table] ?? {};
      const a = after[table] ?? {};
      // A trial by its item and preset as the file holds them now: the ids are the file's own.
      const trial = (): string => {
        const t = name === RUN_PART ? undefined : trialOf(partOrder(name));
        return t === undefined ? name : `${name}: item ${t.item_id}, preset ${t.preset}`;
      };
      const label = (key: string): string => (name === RUN_PART ? key : key === '-' ? trial() : `${trial()}; ${key}`);
      for (const key of Object.keys(b)) {
        if (!Object.hasOwn(a, key)) return { table, key: label(key), problem: `a \`${table}\` row (${label(key)}) was removed` };
        if (b[key] !== a[key]) return { table, key: label(key), problem: `a \`${table}\` row (${label(key)}) was edited` };
      }
      for (const key of Object.keys(a)) {
        if (!Object.hasOwn(b, key)) return { table, key: label(key), problem: `a \`${table}\` row (${label(key)}) was added` };
      }
    }
  }
  return null;
}

function partOrder(name: string): number {
  return name === RUN_PART ? -1 : Number(name.slice('trial '.length));
}

/** A run's seal in one word, as `bench list` and the viewer show it (`glanceBenchRun`); a signature's key is named, not checked. */
export function benchSealWord(v: BenchVerdict | null): string {
  if (v === null) return '?';
  if (v.state === 'broken') return 'BROKEN';
  if (v.state === 'unsealed') return 'unsealed';
  if (v.adoptedAt !== undefined) return 'adopted';
  return v.signedBy === undefined ? 'sealed' : 'signed';
}

/** One line naming what does not match, for messages. */
export function describeBenchBreak(v: Extract<BenchVerdict, { state: 'broken' }>): string {
  return v.problem;
}

/** The error a reader of a run's figures throws over a run that does not verify. */
export function benchRunTampered(v: Extract<BenchVerdict, { state: 'broken' }>, path: string, done: string): IntegrityError {
  return new IntegrityError('BENCH_RUN_TAMPERED', `Bench run \`${v.runId}\` in ${path} does not match its seal: ${describeBenchBreak(v)}. ${done}.`, {
    hint: `Its figures changed after they were recorded. \`conclave verify ${v.runId}\` (with the same --db) shows the run's state; restore the database from a backup, or run the suite again with \`conclave bench\`.`,
  });
}

/** What a write to a run changed: its own row and items, some trials, or every trial. */
export interface BenchTouch {
  run?: boolean;
  trials?: readonly (number | bigint)[] | 'all';
}

interface SealState {
  seal: string;
  partHashes: Map<string, string>;
}

/**
 * What each connection last sealed of each run: a write re-reads only the parts it touched. A seal
 * in the file that differs from the one kept (another process wrote to the run) sends the next write
 * through the full check again.
 */
const sealed = new WeakMap<BetterSqlite3.Database, Map<string, SealState>>();

/**
 * Inside a write transaction to bench run `runId`, before the write: verifies the run in full when
 * this connection did not write its current seal, or when the write touches every trial, and refuses to write over a run that does not
 * verify, or whose signing key this write cannot continue (as `sealGate` does for debates).
 */
export function gateBenchRun(sqlite: BetterSqlite3.Database, runId: string, signer: SealSigner | null, touch: BenchTouch = {}, prepare: Prepare = (s) => sqlite.prepare(s)): void {
  if (prepare('select 1 from bench_runs where id = ?').get(runId) === undefined) return;
  const now = (prepare('select seal, seal_signature, seal_key from bench_seals where run_id = ?').get(runId) as Row | undefined) ?? { seal: null };
  const known = sealed.get(sqlite)?.get(runId);
  // A write that hashes every trial again (a resume's claim, a run's end) verifies them all first, so it seals no edit made meanwhile.
  if (known !== undefined && known.seal === now.seal && touch.trials !== 'all') return;
  sealed.get(sqlite)?.delete(runId);
  const verdict = verifyBenchRun(sqlite, runId, prepare)!;
  // A writer's record has bench seals (it was upgraded on open): every run there has one.
  if (verdict.state === 'unsealed') throw new Error(`Internal error: bench run ${runId} was about to be written in a record without bench seals.`);
  if (verdict.state === 'broken') {
    throw new IntegrityError('BENCH_SEAL_GATE_BROKEN', `Bench run \`${runId}\` does not match its seal (${describeBenchBreak(verdict)}), so nothing was written over it.`, {
      hint: `Run \`conclave verify ${runId}\` for details. Restore the database from a backup, or start the suite again as a new run.`,
    });
  }
  const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
  continueSignature({ seal: verdict.seal, signature: text(now.seal_signature), keyId: text(now.seal_key) }, signer, `Bench run \`${runId}\``, {
    id: runId,
    keyFrom: 'CONCLAVE_SIGNING_KEY',
    what: 'run',
    restore: 'restore the database from a backup',
    unset: 'with CONCLAVE_SIGNING_KEY unset',
  });
}

/**
 * Inside the same write transaction, after the write: computes the parts it touched again and
 * rewrites the run's seal (signed with `signer` when there is one) and the touched parts' digests.
 */
export function resealBenchRun(sqlite: BetterSqlite3.Database, runId: string, touch: BenchTouch, signer: SealSigner | null, prepare: Prepare = (s) => sqlite.prepare(s)): void {
  let byRun = sealed.get(sqlite);
  if (byRun === undefined) sealed.set(sqlite, (byRun = new Map()));
  const known = byRun.get(runId);
  if (prepare('select 1 from bench_runs where id = ?').get(runId) === undefined) return;
  const current = (prepare('select seal from bench_seals where run_id = ?').get(runId) as { seal: string } | undefined) ?? { seal: null };
  let partHashes: Map<string, string>;
  const changed = new Map<string, string | null>();
  if (known === undefined || known.seal !== current.seal || touch.trials === 'all') {
    // A first write, or one after another writer: every part from the rows (the gate has verified them).
    const parts = readBenchParts(sqlite, runId, prepare)!;
    const partsJson = partsJsonOf(parts);
    partHashes = hashesOf(partsJson);
    for (const [name, json] of partsJson) changed.set(name, json);
    if (known === undefined || known.seal !== current.seal) {
      // Parts recorded for rows that are gone go too; every part is written again.
      prepare('delete from bench_seal_rows where run_id = ?').run(runId);
    }
  } else {
    partHashes = new Map(known.partHashes);
    const names = [...(touch.run ? [RUN_PART] : []), ...(touch.trials ?? []).map((id) => trialPart(id))];
    for (const name of names) {
      const part = name === RUN_PART ? readRunPart(prepare, runId) : readTrialPart(prepare, Number(name.slice('trial '.length)));
      const json = part === null ? null : canonicalJson(part);
      if (json === null) partHashes.delete(name);
      else partHashes.set(name, sha256(json));
      changed.set(name, json);
    }
  }
  const seal = benchSealFrom(partHashes);
  for (const [name, json] of changed) {
    if (json === null) prepare('delete from bench_seal_rows where run_id = ? and part = ?').run(runId, name);
    else prepare('insert into bench_seal_rows (run_id, part, digests_json) values (?, ?, ?) on conflict (run_id, part) do update set digests_json = excluded.digests_json').run(runId, name, json);
  }
  prepare(
    'insert into bench_seals (run_id, seal, seal_signature, seal_key) values (?, ?, ?, ?) on conflict (run_id) do update set seal = excluded.seal, seal_signature = excluded.seal_signature, seal_key = excluded.seal_key',
  ).run(runId, seal, signer ? signer.sign(seal) : null, signer ? signer.keyId : null);
  byRun.set(runId, { seal, partHashes });
}

/** Forgets what this connection sealed of a run: after a rolled-back write, the next one reads it again. */
export function forgetBenchSeal(sqlite: BetterSqlite3.Database, runId: string): void {
  sealed.get(sqlite)?.delete(runId);
}

/** The upgrade that brings bench seals: the migration after which `adoptBenchRuns` runs. */
export const BENCH_SEAL_MIGRATION = '0018_bench_seals';

/**
 * Seals each bench run recorded before runs were sealed as it stands, and marks it `adopted_at`
 * (a column the seal covers): from then on its rows are checked like any other run's, and a seal
 * that goes missing is a removal, never an older run. What it held before cannot be checked.
 */
export function adoptBenchRuns(sqlite: BetterSqlite3.Database, now: number): void {
  const ids = (sqlite.prepare('select id from bench_runs where id not in (select run_id from bench_seals)').all() as { id: string }[]).map((r) => r.id);
  if (ids.length === 0) return;
  sqlite.transaction(() => {
    for (const id of ids) {
      // The seal's row comes first, to carry the mark that the run's digest then covers.
      sqlite.prepare("insert into bench_seals (run_id, seal, adopted_at) values (?, '', ?)").run(id, now);
      resealBenchRun(sqlite, id, { run: true, trials: 'all' }, null);
    }
  })();
}

/** Connections known to have `bench_seals` (a record written before it is read as it is, its runs unsealed). */
const withSeals = new WeakSet<BetterSqlite3.Database>();

function withBenchSeals(sqlite: BetterSqlite3.Database): boolean {
  if (withSeals.has(sqlite)) return true;
  if (!hasTable(sqlite, 'bench_seals')) return false;
  withSeals.add(sqlite);
  return true;
}

/** The ids of every bench run, oldest first; none in a record without bench tables. */
export function benchRunIds(sqlite: BetterSqlite3.Database): string[] {
  if (!hasTable(sqlite, 'bench_runs')) return [];
  return (sqlite.prepare('select id from bench_runs order by created_at, id').all() as { id: string }[]).map((r) => r.id);
}

/** The bench runs whose id is `wanted` or starts with it (the exact one alone when there is one). */
export function matchBenchRuns(sqlite: BetterSqlite3.Database, wanted: string): string[] {
  if (wanted === '' || !hasTable(sqlite, 'bench_runs')) return [];
  if (sqlite.prepare('select 1 from bench_runs where id = ?').get(wanted) !== undefined) return [wanted];
  return (sqlite.prepare('select id from bench_runs where substr(id, 1, length(@p)) = @p order by id limit 6').all({ p: wanted }) as { id: string }[]).map((r) => r.id);
}

/** The seal's own columns of a run (for a signature check), or null when it has none. */
export function benchSealRow(sqlite: BetterSqlite3.Database, runId: string): { seal: string; seal_signature: string | null; seal_key: string | null } | null {
  if (!hasTable(sqlite, 'bench_seals')) return null;
  return (sqlite.prepare('select seal, seal_signature, seal_key from bench_seals where run_id = ?').get(runId) as { seal: string; seal_signature: string | null; seal_key: string | null } | undefined) ?? null;
}
