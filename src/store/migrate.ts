import { existsSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { StoreError } from '../errors.js';
import { packagePath } from '../package-root.js';
import { ADOPTION_MIGRATION, adoptDebates, debatesToAdopt } from './adopt.js';
import { lastAppliedMigration, pendingMigrations, readJournal } from './migrations-journal.js';
import { storeErrorFrom } from './reader.js';

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
    if (!existsSync(backup)) sqlite.prepare('VACUUM INTO ?').run(backup);
  }

  // Drizzle runs migrations in one transaction, where `PRAGMA foreign_keys=OFF` in the
  // SQL does nothing: a table rebuild would then cascade-delete child rows. So turn
  // them off here, outside any transaction, and check the links afterwards.
  sqlite.pragma('foreign_keys = OFF');
  try {
    const adopting = pending.some((e) => e.tag === ADOPTION_MIGRATION) ? debatesToAdopt(sqlite) : [];
    try {
      migrate(drizzle(sqlite), { migrationsFolder: folder });
      adoptDebates(sqlite, adopting, Date.now());
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

function migrationError(err: unknown, file: string, backup: string | null): StoreError {
  const mapped = storeErrorFrom(err, `Could not upgrade ${file} to this version of Conclave`);
  if (mapped.code !== 'STORE_FAILED') return mapped;
  return new StoreError('STORE_MIGRATION_FAILED', mapped.message, {
    hint: `${backup ? `A copy from before the upgrade is at ${backup}. ` : ''}Please report this as a bug in Conclave, with the message above.`,
    cause: err,
  });
}
