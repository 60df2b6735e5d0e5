import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { errorMessage, StoreError } from '../errors.js';
import { packagePath } from '../package-root.js';
import { VERSION } from '../version.js';

/** The migrations journal (migrations/meta/_journal.json) and what a database has applied of it. */

export interface JournalEntry {
  when: number;
  tag: string;
}

export const MIGRATIONS_TABLE = '__drizzle_migrations';

/**
 * Migrations that change nothing a reader sees (same tables, columns and rows, or a table a
 * reader does without when it is missing: `seal_rows`, `bench_seals`): a record that
 * lacks only these is read as it is, by the viewer and by read-only opens, with no copy in
 * memory. The next command that records applies them.
 */
export const READ_COMPATIBLE: ReadonlySet<string> = new Set(['0016_calls_plain_rowid', '0017_seal_rows', '0018_bench_seals']);

/** Tables a reader does without when a record lacks them (a read-compatible migration may add only these). */
export const READER_OPTIONAL_TABLES: ReadonlySet<string> = new Set(['seal_rows', 'bench_seals', 'bench_seal_rows']);

/** Whether a reader must apply these pending migrations (in a copy) before it can read the record. */
export function mustUpgradeToRead(pending: readonly JournalEntry[]): boolean {
  return pending.some((e) => !READ_COMPATIBLE.has(e.tag));
}

/** Migrations this database lacks; refuses one written by a newer Conclave. */
export function pendingMigrations(sqlite: Database.Database, file: string): JournalEntry[] {
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

export function readJournal(folder: string): JournalEntry[] {
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
export function lastAppliedMigration(sqlite: Database.Database): number | null {
  if (!hasTable(sqlite, MIGRATIONS_TABLE)) return null;
  const row = sqlite.prepare(`select max(created_at) as at from ${MIGRATIONS_TABLE}`).get() as { at: number | string | null };
  return row.at === null ? null : Number(row.at);
}

/** Whether the database has this table. */
export function hasTable(sqlite: Database.Database, name: string): boolean {
  return sqlite.prepare("select 1 from sqlite_master where type = 'table' and name = ?").get(name) !== undefined;
}
