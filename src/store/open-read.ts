import { closeSync, existsSync, openSync, readFileSync, readSync, type Stats, statSync } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { StoreError } from '../errors.js';
import { describeHolders, fileHolders } from './holders.js';
import { MIGRATIONS_TABLE, mustUpgradeToRead, pendingMigrations } from './migrations-journal.js';
import { RecordReader, storeErrorFrom } from './reader.js';

/**
 * Opening a record, the part that needs no drizzle: reading an existing record (what `show`,
 * `export`, `list` and `verify` do), the checks every open makes, and the migrations journal.
 * Applying migrations is in open.ts, loaded only when a record needs them.
 */

/** Opens an existing record for reading only, without touching the disk (see `openStore(path, { readonly: true })`). */
export async function openRecord(path: string, options: { busyTimeoutMs?: number } = {}): Promise<RecordReader> {
  const file = resolve(path);
  try {
    const sqlite = readonlyDatabase(file, options.busyTimeoutMs ?? 5000, () => {
      throw new UpgradeNeeded();
    });
    return new RecordReader(sqlite, file);
  } catch (err) {
    // A record from an older Conclave: the migrations (and drizzle with them) are loaded to upgrade a copy in memory.
    if (!(err instanceof UpgradeNeeded || (err as { cause?: unknown }).cause instanceof UpgradeNeeded)) throw err;
    const { applyMigrations } = await import('./migrate.js');
    return new RecordReader(readonlyDatabase(file, options.busyTimeoutMs ?? 5000, (sqlite, f) => applyMigrations(sqlite, f, true)), file);
  }
}

/** Thrown inside `readonlyDatabase` when an older record must be upgraded in memory first. */
export class UpgradeNeeded extends Error {}

/**
 * An existing record opened for reading only. `upgrade` applies the migrations an older record
 * lacks, to a copy in memory; it is called only then.
 */
export function readonlyDatabase(file: string, busyTimeoutMs: number, upgrade: (sqlite: Database.Database, file: string) => void): Database.Database {
  checkNotDirectory(file);
  if (!existsSync(file)) {
    throw new StoreError('STORE_MISSING', `No database at ${file}; run a debate first or pass --db.`, {
      hint: 'Run `conclave run "question" --preset NAME` to create it, or pass --db (or set CONCLAVE_DB) with the path of an existing database.',
    });
  }
  let sqlite: Database.Database;
  try {
    // The file itself, read-only, whatever its size: a record closed by this Conclave is left in
    // rollback-journal mode, which a read-only connection reads without creating anything beside
    // it, and one in use has its -wal and -shm there already, which it shares. Only a record left
    // in WAL mode without its -wal (closed by an older Conclave, or while a viewer held it) would get
    // them created by a read-only connection: a small one is read into memory instead.
    if (existsSync(`${file}-wal`) || !walHeader(file) || statSync(file).size > IN_MEMORY_LIMIT) {
      sqlite = new Database(file, { readonly: true, fileMustExist: true, timeout: busyTimeoutMs });
      sqlite.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
    } else {
      sqlite = new Database(inMemoryImage(readFileSync(file)));
    }
  } catch (err) {
    throw storeErrorFrom(err, `Could not open ${file}`, file);
  }
  try {
    checkConclaveDatabase(sqlite, file, true);
    // An older record is upgraded in a copy in memory (unless it lacks only migrations a reader
    // does not see), and a debate whose process died (kill -9 leaves the -wal behind) is shown
    // interrupted in one: the file itself is left as it is.
    const pending = mustUpgradeToRead(pendingMigrations(sqlite, file));
    if (!sqlite.memory && pending) {
      const image = inMemoryImage(sqlite.serialize());
      sqlite.close();
      sqlite = new Database(image);
    }
    if (pending) upgrade(sqlite, file);
    sqlite.pragma('foreign_keys = ON');
    // A private copy in memory shows dead debates as they are by marking them; the file itself,
    // whatever its size, is read in place, with a view that shows them so (never a copy of it).
    if (sqlite.memory) markInterruptedDebates(sqlite);
    else showInterruptedDebates(sqlite);
  } catch (err) {
    sqlite.close();
    throw storeErrorFrom(err, `Could not open ${file}`, file);
  }
  return sqlite;
}

/** Above this, a WAL-mode record without its -wal is opened on the file (SQLite creates an empty -wal and -shm beside it) rather than read into memory. */
const IN_MEMORY_LIMIT = 256 * 1024 * 1024;

/** Whether the database file's header says WAL mode (bytes 18 and 19 are 2). */
export function walHeader(file: string): boolean {
  const header = Buffer.alloc(20);
  let fd: number | null = null;
  try {
    fd = openSync(file, 'r');
    return readSync(fd, header, 0, 20, 0) === 20 && (header[18] === 2 || header[19] === 2);
  } catch {
    return false;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

/** A database file's bytes as SQLite's in-memory backend accepts them: marked rollback-journal rather than WAL. */
function inMemoryImage(bytes: Buffer): Buffer {
  // Header bytes 18 and 19 are the file format's write and read versions: 2 means WAL.
  if (bytes.length >= 100) {
    if (bytes[18] === 2) bytes[18] = 1;
    if (bytes[19] === 2) bytes[19] = 1;
  }
  return bytes;
}

/** A record is a regular file: a directory, a device (/dev/zero), a named pipe or a socket is refused before SQLite opens it. */
export function checkNotDirectory(file: string): void {
  let st: Stats;
  try {
    st = statSync(file);
  } catch {
    return;
  }
  if (st.isDirectory()) {
    throw new StoreError('STORE_IS_DIRECTORY', `${file} is a directory, not a database file.`, {
      hint: `Pass --db (or set CONCLAVE_DB) with a file path, e.g. ${join(file, 'conclave.db')}.`,
    });
  }
  if (!st.isFile()) {
    const kind = st.isFIFO() ? 'a named pipe' : st.isCharacterDevice() || st.isBlockDevice() ? 'a device' : st.isSocket() ? 'a socket' : 'not a regular file';
    throw new StoreError('STORE_NOT_A_FILE', `${file} is ${kind}, not a database file.`, {
      hint: 'Pass --db (or set CONCLAVE_DB) with the path of a Conclave database file, or of a new file for a fresh one.',
    });
  }
}

/** A file that SQLite reads but that holds another program's tables is refused rather than migrated into. */
export function checkConclaveDatabase(sqlite: Database.Database, file: string, readonly: boolean): void {
  if (file === ':memory:') return;
  const tables = sqlite.prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'").all() as { name: string }[];
  if (tables.some((t) => t.name === MIGRATIONS_TABLE)) return;
  if (tables.length === 0 && !readonly) return;
  if (tables.length === 0) {
    // A run creating this record right now (its first debate, a `conclave run` into a new --db): not another program's file.
    const writers = fileHolders(file).filter((h) => h.writes !== false);
    if (writers.length > 0) {
      throw new StoreError('STORE_BEING_CREATED', `${file} holds no debate yet: it is empty, and open for writing by ${describeHolders(writers)}, which is creating it.`, {
        hint: 'Run the command again in a moment, once its first debate has started.',
      });
    }
  }
  throw new StoreError(
    'STORE_NOT_CONCLAVE',
    tables.length === 0
      ? `${file} is not a Conclave database: it is an empty SQLite database.`
      : `${file} is not a Conclave database: it is a SQLite database with other tables (${tables
          .slice(0, 3)
          .map((t) => `\`${t.name}\``)
          .join(', ')}${tables.length > 3 ? ', …' : ''}).`,
    { hint: 'Pass --db (or set CONCLAVE_DB) with the path of a Conclave database, or of a new file for a fresh one.' },
  );
}

/** `$CONCLAVE_DB`, else `$XDG_DATA_HOME/conclave/conclave.db`, else `~/.local/share/conclave/conclave.db`. */
export function defaultDbPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CONCLAVE_DB) return env.CONCLAVE_DB;
  // The XDG spec says to ignore a relative XDG_DATA_HOME.
  const dataHome = env.XDG_DATA_HOME && isAbsolute(env.XDG_DATA_HOME) ? env.XDG_DATA_HOME : join(homedir(), '.local', 'share');
  return join(dataHome, 'conclave', 'conclave.db');
}

/** Debates still `running` whose process on this machine has died. */
function deadRunningDebates(sqlite: Database.Database): { id: string; pid: number | null }[] {
  try {
    return (sqlite.prepare("select id, pid from debates where status = 'running' and hostname = ?").all(hostname()) as { id: string; pid: number }[]).filter(
      (d) => !isProcessAlive(d.pid),
    );
  } catch {
    // A record too old to have these columns is upgraded in memory first.
    return [];
  }
}

/** Debates still `running` whose process on this machine has died were interrupted. */
export function markInterruptedDebates(sqlite: Database.Database): void {
  const dead = deadRunningDebates(sqlite);
  if (dead.length === 0) return;
  sqlite
    .prepare("update debates set status = 'interrupted', exit_reason = 'interrupted', finished_at = ? where status = 'running' and id in (select value from json_each(?))")
    .run(Date.now(), JSON.stringify(dead.map((d) => d.id)));
}

/**
 * On a connection that may not write the file: shows debates still `running` whose process died
 * as `markInterruptedDebates` would mark them, through a temporary view named `debates` that
 * SQLite finds before the table (the temp schema is searched first). The view lives in memory,
 * for this connection only; the file is read in place, untouched.
 */
function showInterruptedDebates(sqlite: Database.Database): void {
  const dead = deadRunningDebates(sqlite);
  if (dead.length === 0) return;
  sqlite.pragma('temp_store = MEMORY');
  sqlite.exec('create temp table interrupted_debates (id text primary key) without rowid');
  const insert = sqlite.prepare('insert or ignore into temp.interrupted_debates (id) values (?)');
  for (const d of dead) insert.run(d.id);
  const died = "status = 'running' and id in (select id from temp.interrupted_debates)";
  const shown: Record<string, string> = {
    status: `case when ${died} then 'interrupted' else status end`,
    exit_reason: `case when ${died} then 'interrupted' else exit_reason end`,
    finished_at: `case when ${died} then ${Date.now()} else finished_at end`,
  };
  const columns = (sqlite.prepare("select name from pragma_table_info('debates', 'main')").all() as { name: string }[]).map((c) => {
    const name = `"${c.name.replaceAll('"', '""')}"`;
    const expression = shown[c.name];
    return expression === undefined ? name : `${expression} as ${name}`;
  });
  sqlite.exec(`create temp view debates as select ${columns.join(', ')} from main.debates`);
}

/** Whether a process with this pid exists on this machine (ours or another user's). */
export function isProcessAlive(pid: number): boolean {
  // kill(0) would signal our own process group: never a sign of life for a debate.
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
