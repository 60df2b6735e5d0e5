import type BetterSqlite3 from 'better-sqlite3';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';

/**
 * What a feature's module (tensions, voting, quality, material, protocol steps) needs of the
 * store to read and write its own rows. `Store` provides it; the modules never import the store,
 * so the store can assemble a debate from their readers without a circle.
 */
export interface RecordWriter {
  /** Runs `fn` on the database; a failure becomes a StoreError naming `what`. */
  use<T>(what: string, fn: (db: BetterSQLite3Database, sqlite: BetterSqlite3.Database) => T): T;
  /** Runs one prepared write (compiled once per store). */
  runPrepared(what: string, source: string, params: Record<string, unknown>): void;
  /** The next number of the debate's sequence in `table`.`column` (`first` when it has none yet), for the row about to be written with it. */
  nextNumber(debateId: string, table: string, column: string, first: number): number;
}

/** What a reader of the record needs: SQL run on the database, failures named. Both the Store and the read-only RecordReader give it. */
export interface RecordReading {
  read<T>(what: string, fn: (sqlite: BetterSqlite3.Database) => T): T;
}
