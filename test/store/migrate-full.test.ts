import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/errors.js';
import { applyMigrations } from '../../src/store/migrate.js';
import { lastAppliedMigration } from '../../src/store/migrations-journal.js';
import { openStore } from '../../src/store/open.js';
import { sqliteCodeOf } from '../../src/store/reader.js';
import { tempDir } from './fixtures.js';

let cleanup: (() => void) | null = null;

afterEach(() => {
  cleanup?.();
  cleanup = null;
});

describe('setting up a new database on a full disk', () => {
  it('says the disk is full and how to fix it, keeps SQLite\'s error as the cause, and leaves a file that a retry with room sets up', () => {
    const dir = tempDir();
    cleanup = dir.cleanup;
    const file = join(dir.dir, 'new.db');
    const sqlite = new Database(file);
    sqlite.pragma('journal_mode = WAL');
    // The file may not grow past a few pages: SQLite fails with SQLITE_FULL inside the migrations.
    sqlite.pragma('max_page_count = 12');
    let error: unknown;
    try {
      applyMigrations(sqlite, file, false);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(StoreError);
    const store = error as StoreError;
    expect(store.code).toBe('STORE_DISK_FULL');
    expect(store.message).toBe(`Could not set up the new database ${file}: the disk is full.`);
    expect(store.hint).toBe('Free disk space on that volume, or set CONCLAVE_DB to a database on another disk.');
    expect(sqliteCodeOf(store)).toBe('SQLITE_FULL');
    expect(sqlite.inTransaction).toBe(false);
    expect(lastAppliedMigration(sqlite)).toBeNull();
    sqlite.close();

    const reopened = openStore(file);
    try {
      expect(reopened.listDebates()).toEqual([]);
    } finally {
      reopened.close();
    }
  });
});
