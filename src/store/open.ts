import { accessSync, constants, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { and, eq, inArray } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { errorMessage, StoreError } from '../errors.js';
import { packagePath } from '../package-root.js';
import { VERSION } from '../version.js';
import { debates } from './schema.js';
import { Store, storeErrorFrom } from './store.js';

export interface OpenStoreOptions {
  /** How long a statement waits for another process's lock before failing. Default 5000. */
  busyTimeoutMs?: number;
  /**
   * Open an existing record for reading only: nothing is created or changed on disk
   * (no folder, no file, no `-wal`/`-shm` beside a closed database, no migration).
   * A missing file is a StoreError. An older record is upgraded in memory for reading.
   */
  readonly?: boolean;
}

/**
 * Opens (creating if needed) the record at `path`, or an in-memory one for
 * `:memory:`: sets pragmas, applies pending migrations, and marks debates left
 * `running` by a process that no longer exists as `interrupted`. With
 * `readonly: true` it opens an existing record without touching the disk.
 */
export function openStore(path: string, options: OpenStoreOptions = {}): Store {
  const memory = path === ':memory:';
  const file = memory ? path : resolve(path);
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;

  if (options.readonly && !memory) return openReadonly(file, busyTimeoutMs);
  if (!memory) checkNotDirectory(file);

  if (!memory) {
    try {
      mkdirSync(dirname(file), { recursive: true });
    } catch (err) {
      throw new StoreError('STORE_OPEN_FAILED', `Could not create the folder ${dirname(file)} for the database: ${errorMessage(err)}.`, {
        hint: 'Check that you may write there, or set CONCLAVE_DB to a path in a writable folder.',
        cause: err,
      });
    }
  }

  if (!memory) checkWritable(file);

  let sqlite: Database.Database;
  try {
    sqlite = new Database(file, { timeout: busyTimeoutMs });
  } catch (err) {
    if (isNativeModuleFailure(err)) {
      throw new StoreError(
        'STORE_NATIVE_MODULE',
        `Could not load the SQLite driver (better-sqlite3) under Node ${process.version}: ${errorMessage(err)}`,
        {
          hint: 'Run `npm rebuild better-sqlite3` in the folder Conclave is installed in, or reinstall Conclave with the Node version you run it with.',
          cause: err,
        },
      );
    }
    throw storeErrorFrom(err, `Could not open ${file}`);
  }

  try {
    configure(sqlite, file, memory, busyTimeoutMs);
    checkConclaveDatabase(sqlite, file, false);
    applyMigrations(sqlite, file, memory);
    markInterruptedDebates(sqlite);
  } catch (err) {
    sqlite.close();
    throw storeErrorFrom(err, `Could not open ${file}`, file);
  }
  return new Store(sqlite, file);
}

function openReadonly(file: string, busyTimeoutMs: number): Store {
  checkNotDirectory(file);
  if (!existsSync(file)) {
    throw new StoreError('STORE_MISSING', `No database at ${file}; run a debate first or pass --db.`, {
      hint: 'Run `conclave run "question" --preset NAME` to create it, or pass --db (or set CONCLAVE_DB) with the path of an existing database.',
    });
  }
  let sqlite: Database.Database;
  try {
    // A database in use has its -wal and -shm beside it: share them, as SQLite
    // requires for a consistent read. A closed one would get them created by a
    // read-only connection, so read its bytes into memory instead.
    if (existsSync(`${file}-wal`)) {
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
    // An older record is upgraded in a copy in memory, and a debate whose process died (kill -9
    // leaves the -wal behind) is shown interrupted in one: the file itself is left as it is.
    const pending = pendingMigrations(sqlite, file).length > 0;
    if (!sqlite.memory && (pending || deadRunningDebates(sqlite).length > 0)) {
      const image = inMemoryImage(sqlite.serialize());
      sqlite.close();
      sqlite = new Database(image);
    }
    if (pending) applyMigrations(sqlite, file, true);
    sqlite.pragma('foreign_keys = ON');
    // A private copy in memory can show dead debates as they are, without writing the file.
    if (sqlite.memory) markInterruptedDebates(sqlite);
  } catch (err) {
    sqlite.close();
    throw storeErrorFrom(err, `Could not open ${file}`, file);
  }
  return new Store(sqlite, file);
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

function checkNotDirectory(file: string): void {
  let isDirectory = false;
  try {
    isDirectory = statSync(file).isDirectory();
  } catch {
    return;
  }
  if (isDirectory) {
    throw new StoreError('STORE_IS_DIRECTORY', `${file} is a directory, not a database file.`, {
      hint: `Pass --db (or set CONCLAVE_DB) with a file path, e.g. ${join(file, 'conclave.db')}.`,
    });
  }
}

function checkWritable(file: string): void {
  // SQLite would silently fall back to reading only, and fail later on the first write.
  // The folder must be writable too: the -wal and -shm files are created beside the file.
  for (const target of existsSync(file) ? [file, dirname(file)] : [dirname(file)]) {
    try {
      accessSync(target, constants.W_OK);
    } catch {
      throw new StoreError('STORE_READONLY', `${file} is read-only: ${target === file ? 'the file' : `its folder ${target}`} cannot be written by this user.`, {
        hint: 'This command records to the database: check the permissions of the file and its folder, or pass --db (or set CONCLAVE_DB) with a writable path.',
      });
    }
  }
}

/** A file that SQLite reads but that holds another program's tables is refused rather than migrated into. */
function checkConclaveDatabase(sqlite: Database.Database, file: string, readonly: boolean): void {
  if (file === ':memory:') return;
  const tables = sqlite.prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'").all() as { name: string }[];
  if (tables.some((t) => t.name === MIGRATIONS_TABLE)) return;
  if (tables.length === 0 && !readonly) return;
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

function configure(sqlite: Database.Database, file: string, memory: boolean, busyTimeoutMs: number): void {
  sqlite.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
  // The first statement that reads the file: a non-database fails here with SQLITE_NOTADB.
  const mode = String(sqlite.pragma('journal_mode = WAL', { simple: true })).toLowerCase();
  if (!memory && mode !== 'wal') {
    throw new StoreError('STORE_NO_WAL', `Could not switch ${file} to write-ahead logging (the journal mode stays \`${mode}\`).`, {
      hint: 'Keep the database on a local disk (WAL needs shared memory, which network filesystems lack): set CONCLAVE_DB to a local path.',
    });
  }
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
}

interface JournalEntry {
  when: number;
  tag: string;
}

const MIGRATIONS_TABLE = '__drizzle_migrations';

/** Migrations this database lacks; refuses one written by a newer Conclave. */
function pendingMigrations(sqlite: Database.Database, file: string): JournalEntry[] {
  const journal = readJournal(packagePath('migrations'));
  const latest = Math.max(...journal.map((e) => e.when));
  const applied = lastAppliedMigration(sqlite);
  if (applied !== null && applied > latest) {
    throw new StoreError('STORE_TOO_NEW', `${file} has a newer schema: it was written by a newer version of Conclave than this one (${VERSION}).`, {
      hint: 'Upgrade Conclave, or pass --db (or set CONCLAVE_DB) with another database.',
    });
  }
  return journal.filter((e) => applied === null || e.when > applied);
}

function applyMigrations(sqlite: Database.Database, file: string, memory: boolean): void {
  const folder = packagePath('migrations');
  const journal = readJournal(folder);
  const latest = Math.max(...journal.map((e) => e.when));
  const applied = lastAppliedMigration(sqlite);
  const pending = pendingMigrations(sqlite, file);
  const first = pending[0];
  if (first === undefined) return;

  let backup: string | null = null;
  if (applied !== null && !memory) {
    // An upgrade of a database that holds debates: keep a copy from before it.
    backup = `${file}.before-${first.tag}`;
    if (!existsSync(backup)) sqlite.prepare('VACUUM INTO ?').run(backup);
  }

  // Drizzle runs migrations in one transaction, where `PRAGMA foreign_keys=OFF` in the
  // SQL does nothing: a table rebuild would then cascade-delete child rows. So turn
  // them off here, outside any transaction, and check the links afterwards.
  sqlite.pragma('foreign_keys = OFF');
  try {
    try {
      migrate(drizzle(sqlite), { migrationsFolder: folder });
    } catch (err) {
      // Another process may have applied the same migrations a moment earlier.
      const now = lastAppliedMigration(sqlite);
      if (now === null || now < latest) throw migrationError(err, file, backup);
    }
    const broken = sqlite.pragma('foreign_key_check') as { table: string; parent: string }[];
    const example = broken[0];
    if (example !== undefined) {
      throw new StoreError(
        'STORE_FOREIGN_KEYS',
        `Migrating ${file} left ${broken.length} row(s) pointing at missing rows (e.g. in \`${example.table}\`, pointing at \`${example.parent}\`).`,
        {
          hint: `${backup ? `A copy from before the migration is at ${backup}. ` : ''}Please report this as a bug in Conclave.`,
        },
      );
    }
  } finally {
    sqlite.pragma('foreign_keys = ON');
  }
}

function readJournal(folder: string): JournalEntry[] {
  const journalFile = join(folder, 'meta', '_journal.json');
  let entries: JournalEntry[] = [];
  try {
    const parsed = JSON.parse(readFileSync(journalFile, 'utf8')) as { entries?: JournalEntry[] };
    entries = parsed.entries ?? [];
  } catch (err) {
    throw new StoreError('STORE_MIGRATIONS_MISSING', `Could not read the database migrations at ${journalFile}: ${errorMessage(err)}.`, {
      hint: 'The installation looks incomplete: reinstall Conclave (or run `npm ci` in a clone).',
      cause: err,
    });
  }
  if (entries.length === 0) {
    throw new StoreError('STORE_MIGRATIONS_MISSING', `No database migrations listed in ${journalFile}.`, {
      hint: 'The installation looks incomplete: reinstall Conclave (or run `npm ci` in a clone).',
    });
  }
  return entries;
}

/** The journal timestamp of the newest migration applied to this database, or null for a new one. */
function lastAppliedMigration(sqlite: Database.Database): number | null {
  const table = sqlite.prepare("select 1 from sqlite_master where type = 'table' and name = ?").get(MIGRATIONS_TABLE);
  if (!table) return null;
  const row = sqlite.prepare(`select max(created_at) as at from ${MIGRATIONS_TABLE}`).get() as { at: number | string | null };
  return row.at === null ? null : Number(row.at);
}

function migrationError(err: unknown, file: string, backup: string | null): StoreError {
  const mapped = storeErrorFrom(err, `Could not upgrade ${file} to this version of Conclave`);
  if (mapped.code !== 'STORE_FAILED') return mapped;
  return new StoreError('STORE_MIGRATION_FAILED', mapped.message, {
    hint: `${backup ? `A copy from before the upgrade is at ${backup}. ` : ''}Please report this as a bug in Conclave, with the message above.`,
    cause: err,
  });
}

/** Debates still `running` whose process on this machine has died. */
function deadRunningDebates(sqlite: Database.Database): { id: string; pid: number | null }[] {
  try {
    return drizzle(sqlite)
      .select({ id: debates.id, pid: debates.pid })
      .from(debates)
      .where(and(eq(debates.status, 'running'), eq(debates.hostname, hostname())))
      .all()
      .filter((d) => !isProcessAlive(d.pid));
  } catch {
    // A record too old to have these columns is upgraded in memory first.
    return [];
  }
}

/** Debates still `running` whose process on this machine has died were interrupted. */
function markInterruptedDebates(sqlite: Database.Database): void {
  const db = drizzle(sqlite);
  const dead = deadRunningDebates(sqlite);
  if (dead.length === 0) return;
  db.update(debates)
    .set({
      status: 'interrupted',
      exitReason: 'interrupted',
      finishedAt: Date.now(),
    })
    .where(
      and(
        eq(debates.status, 'running'),
        inArray(
          debates.id,
          dead.map((d) => d.id),
        ),
      ),
    )
    .run();
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

function isNativeModuleFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  const message = errorMessage(err);
  return (
    code === 'ERR_DLOPEN_FAILED' ||
    /NODE_MODULE_VERSION|Could not locate the bindings file|invalid ELF header|Module did not self-register/.test(message)
  );
}
