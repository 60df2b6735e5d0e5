import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { errorMessage, StoreError } from '../errors.js';
import { applyMigrations } from './migrate.js';
import { checkConclaveDatabase, checkNotDirectory, markInterruptedDebates, readonlyDatabase } from './open-read.js';
import { Store, storeErrorFrom } from './store.js';

export { defaultDbPath, isProcessAlive, openRecord } from './open-read.js';

export interface OpenStoreOptions {
  /** How long a statement waits for another process's lock before failing. Default 5000. */
  busyTimeoutMs?: number;
  /**
   * Open an existing record for reading only: nothing is created or changed on disk
   * (no folder, no file, no `-wal`/`-shm` beside a closed database, no migration).
   * A missing file is a StoreError. An older record is upgraded in memory for reading.
   */
  readonly?: boolean;
  /** Told, before it starts, that an older record holding debates is being upgraded (it may take a while on a large one). */
  onUpgrade?: (message: string) => void;
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

  if (options.readonly && !memory) return new Store(readonlyDatabase(file, busyTimeoutMs, (sqlite, f) => applyMigrations(sqlite, f, true)), file);
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
          hint: 'Conclave needs Node 22.19 or later on Linux, macOS or Windows (x64 or arm64), where better-sqlite3 ships its own binary. Check `node --version`, then reinstall Conclave (`npm ci` in a clone).',
          cause: err,
        },
      );
    }
    throw storeErrorFrom(err, `Could not open ${file}`);
  }

  try {
    configure(sqlite, file, memory, busyTimeoutMs);
    checkConclaveDatabase(sqlite, file, false);
    applyMigrations(sqlite, file, memory, options.onUpgrade);
    markInterruptedDebates(sqlite);
  } catch (err) {
    sqlite.close();
    throw storeErrorFrom(err, `Could not open ${file}`, file);
  }
  return new Store(sqlite, file);
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

function isNativeModuleFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  const message = errorMessage(err);
  return (
    code === 'ERR_DLOPEN_FAILED' ||
    /NODE_MODULE_VERSION|Could not locate the bindings file|invalid ELF header|Module did not self-register/.test(message)
  );
}
