import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import Database from 'better-sqlite3';
import { StoreError } from '../errors.js';
import { isProcessAlive, openStore } from '../store/open.js';
import { lastAppliedMigration, mustUpgradeToRead, pendingMigrations } from '../store/migrations-journal.js';
import { checkNotDirectory, walHeader } from '../store/open-read.js';
import { type StoredDebate, Store, storeErrorFrom } from '../store/store.js';

/**
 * Opens an existing record for reading only: no migrations, no pragmas that write,
 * no marking of stale debates. The connection stays on the file, never on a copy,
 * so a debate that another process starts later shows up and can be followed live.
 * A record whose schema is behind this version is refused with the command that
 * upgrades it, since the viewer must not.
 */
export function openStoreReadOnly(path: string): Store {
  const file = resolve(path);
  if (!existsSync(file)) {
    throw new StoreError('STORE_NOT_FOUND', `There is no database at ${file}.`, {
      hint: 'Run a debate first (`conclave demo` records one), or point --db (or CONCLAVE_DB) at an existing record.',
    });
  }
  checkNotDirectory(file);
  let sqlite: Database.Database;
  try {
    sqlite = new Database(file, { readonly: true, fileMustExist: true, timeout: 5000 });
  } catch (err) {
    throw storeErrorFrom(err, `Could not open ${file} for reading`);
  }
  try {
    checkSchema(sqlite, file);
  } catch (err) {
    sqlite.close();
    throw err instanceof StoreError ? err : storeErrorFrom(err, `Could not read ${file}`);
  }
  return new Store(sqlite, file);
}

function checkSchema(sqlite: Database.Database, file: string): void {
  if (lastAppliedMigration(sqlite) === null) {
    throw new StoreError('STORE_NEEDS_UPGRADE', `${file} is not a Conclave record; a read-only connection cannot set it up.`, {
      hint: 'Point --db (or CONCLAVE_DB) at a record written by `conclave run`, `conclave demo` or `conclave bench`.',
    });
  }
  // Refuses a record written by a newer Conclave; one that lacks only migrations a reader does not see is read as it is.
  if (mustUpgradeToRead(pendingMigrations(sqlite, file))) {
    throw new StoreError('STORE_NEEDS_UPGRADE', `${file} was written by an older version of Conclave; a read-only connection cannot upgrade it.`, {
      hint: 'Any command that records (`conclave run`, `conclave demo`, `conclave bench`) upgrades it, or read a snapshot with `openStore(path, { readonly: true })`.',
    });
  }
}

/**
 * A debate still marked `running` whose process on this machine has gone was
 * interrupted; other commands record that on open, the read-only viewer only shows it.
 */
export function withLiveness(d: StoredDebate): StoredDebate {
  if (d.status !== 'running' || d.hostname !== hostname() || isProcessAlive(d.pid)) return d;
  return { ...d, status: 'interrupted', exitReason: 'interrupted', finishedAt: d.finishedAt ?? Date.now() };
}

/** The same check for a list row, which carries no pid: looked up on demand. */
export function isStaleRunning(store: Store, id: string): boolean {
  const row = store.use(`read the process of debate \`${id}\``, (_db, sqlite) =>
    sqlite.prepare('select pid, hostname from debates where id = ?').get(id) as { pid: number; hostname: string } | undefined,
  );
  return row !== undefined && row.hostname === hostname() && !isProcessAlive(row.pid);
}

/** Changes whenever another connection commits to the file: a cheap poll for new records. */
export function dataVersion(store: Store): number {
  return store.use('poll for changes', (_db, sqlite) => Number(sqlite.pragma('data_version', { simple: true })));
}

/**
 * The viewer's record: a live read-only connection, or, for a record that predates
 * this version's schema, the snapshot `openStore` upgrades in memory (it cannot see
 * what is recorded after it opened). `warn` is told which.
 */
export function openViewerStore(path: string, warn: (line: string) => void): Store {
  try {
    return openStoreReadOnly(path);
  } catch (err) {
    // A record left in WAL mode without its -wal, on read-only media: SQLite cannot read it in place there.
    const file = resolve(path);
    if (err instanceof StoreError && err.code !== 'STORE_NEEDS_UPGRADE' && !existsSync(`${file}-wal`) && walHeader(file)) {
      const store = openStore(path, { readonly: true });
      warn(`${store.path} was closed in WAL mode without its -wal file and cannot be read in place here (read-only media?). The viewer shows it as it is now and will not follow debates recorded from here on.`);
      return store;
    }
    if (!(err instanceof StoreError) || err.code !== 'STORE_NEEDS_UPGRADE') throw err;
    const store = openStore(path, { readonly: true });
    warn(
      `${store.path} was written by an older version of Conclave. The viewer shows it as it is now and will not follow debates recorded from here on; a command that records (\`conclave run\`) upgrades the file.`,
    );
    return store;
  }
}
