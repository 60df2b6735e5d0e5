import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { and, eq, inArray } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { errorMessage, StoreError } from '../errors.js';
import { packagePath } from '../package-root.js';
import { debates } from './schema.js';
import { Store, storeErrorFrom } from './store.js';

export interface OpenStoreOptions {
  /** How long a statement waits for another process's lock before failing. Default 5000. */
  busyTimeoutMs?: number;
}

/**
 * Opens (creating if needed) the record at `path`, or an in-memory one for
 * `:memory:`: sets pragmas, applies pending migrations, and marks debates left
 * `running` by a process that no longer exists as `interrupted`.
 */
export function openStore(path: string, options: OpenStoreOptions = {}): Store {
  const memory = path === ':memory:';
  const file = memory ? path : resolve(path);
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;

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
    applyMigrations(sqlite, file, memory);
    markInterruptedDebates(sqlite);
  } catch (err) {
    sqlite.close();
    throw storeErrorFrom(err, `Could not open ${file}`);
  }
  return new Store(sqlite, file);
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

function applyMigrations(sqlite: Database.Database, file: string, memory: boolean): void {
  const folder = packagePath('migrations');
  const journal = readJournal(folder);
  const latest = Math.max(...journal.map((e) => e.when));
  const applied = lastAppliedMigration(sqlite);
  if (applied !== null && applied > latest) {
    throw new StoreError('STORE_TOO_NEW', `${file} was written by a newer version of Conclave than this one.`, {
      hint: 'Upgrade Conclave, or set CONCLAVE_DB to another database.',
    });
  }
  const pending = journal.filter((e) => applied === null || e.when > applied);
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

/** Debates still `running` whose process on this machine has died were interrupted. */
function markInterruptedDebates(sqlite: Database.Database): void {
  const db = drizzle(sqlite);
  const host = hostname();
  const running = db
    .select({ id: debates.id, pid: debates.pid })
    .from(debates)
    .where(and(eq(debates.status, 'running'), eq(debates.hostname, host)))
    .all();
  const dead = running.filter((d) => !isProcessAlive(d.pid));
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
