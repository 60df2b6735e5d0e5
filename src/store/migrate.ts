import { existsSync, rmSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { StoreError } from '../errors.js';
import { packagePath } from '../package-root.js';
import { ADOPTION_MIGRATION, adoptDebates, debatesToAdopt } from './adopt.js';
import { adoptBenchRuns, BENCH_SEAL_MIGRATION } from './bench-seal.js';
import { lastAppliedMigration, pendingMigrations, readJournal } from './migrations-journal.js';
import { sqliteCodeOf, storeErrorFrom } from './reader.js';

/** Applying migrations: drizzle's migrator, with a backup first and the foreign keys checked after. */

export function applyMigrations(sqlite: Database.Database, file: string, memory: boolean, onUpgrade?: (message: string) => void): void {
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
    onUpgrade?.(`Upgrading ${file} for this version of Conclave, once; a copy from before is kept at ${backup}.`);
    if (!existsSync(backup)) writeBackup(sqlite, file, backup);
  }

  // Drizzle runs migrations in one transaction, where `PRAGMA foreign_keys=OFF` in the
  // SQL does nothing: a table rebuild would then cascade-delete child rows. So turn
  // them off here, outside any transaction, and check the links afterwards.
  sqlite.pragma('foreign_keys = OFF');
  try {
    const adopting = pending.some((e) => e.tag === ADOPTION_MIGRATION) ? debatesToAdopt(sqlite) : [];
    const sealingBench = applied !== null && pending.some((e) => e.tag === BENCH_SEAL_MIGRATION);
    // A reader's copy in memory shows the runs as the file holds them, unsealed: its upgrade is not the file's.
    const sealBench = (): void => {
      if (memory) sqlite.exec('drop table bench_seal_rows; drop table bench_seals');
      else adoptBenchRuns(sqlite, Date.now());
    };
    try {
      migrate(drizzle(rollbackOnlyWhenActive(sqlite)), { migrationsFolder: folder });
      adoptDebates(sqlite, adopting, Date.now());
      // Runs recorded before bench seals: sealed as they stand, once, by the upgrade that brings them.
      if (sealingBench) sealBench();
    } catch (err) {
      // Another process may have applied the same migrations a moment earlier.
      const now = lastAppliedMigration(sqlite);
      if (now === null || now < latest) throw migrationError(err, file, applied === null, backup);
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

function migrationError(err: unknown, file: string, created: boolean, backup: string | null): StoreError {
  const mapped = storeErrorFrom(err, created ? `Could not set up the new database ${file}` : `Could not upgrade ${file} to this version of Conclave`);
  // A full disk, an I/O error, a lock: the user's to fix, with the hint that says how (the record is left as it was).
  if (mapped.code !== 'STORE_FAILED') return mapped;
  return new StoreError('STORE_MIGRATION_FAILED', mapped.message, {
    hint: `${backup ? `A copy from before the upgrade is at ${backup}. ` : ''}Please report this as a bug in Conclave, with the message above.`,
    cause: err,
  });
}

/**
 * The connection as drizzle's migrator gets it. SQLite rolls a transaction back by itself when a
 * write fails for want of room or on an I/O error (a COMMIT on a full disk); the migrator's own
 * ROLLBACK would then fail ("no transaction is active"), and its error would replace the one
 * that says what happened. Here ROLLBACK does nothing when no transaction is left.
 */
function rollbackOnlyWhenActive(sqlite: Database.Database): Database.Database {
  return new Proxy(sqlite, {
    get(target, key) {
      if (key === 'prepare') {
        return (source: string) => {
          const statement = target.prepare(source);
          if (!/^\s*rollback\s*;?\s*$/i.test(source)) return statement;
          return { run: (...params: unknown[]) => (target.inTransaction ? statement.run(...params) : { changes: 0, lastInsertRowid: 0 }) };
        };
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * The copy from before an upgrade. One left unfinished by a full disk or an I/O error is removed:
 * a later upgrade would take it for the copy and skip its own.
 */
function writeBackup(sqlite: Database.Database, file: string, backup: string): void {
  try {
    sqlite.prepare('VACUUM INTO ?').run(backup);
  } catch (err) {
    // Not on any other failure: a file already there (another process's copy, made a moment earlier) stays.
    if (/^SQLITE_(FULL|IOERR)/.test(sqliteCodeOf(err) ?? '')) for (const f of [backup, `${backup}-journal`, `${backup}-wal`, `${backup}-shm`]) rmSync(f, { force: true });
    throw storeErrorFrom(err, `Could not keep a copy of ${file} from before its upgrade, at ${backup}`, file);
  }
}
