import Database from 'better-sqlite3';
import { callHash, canonicalJson, readDebateRows, rowDigests, sealOf } from '../../src/store/chain.js';
import { copyRecord } from './record-sql.js';

/**
 * Edits a record as a forger without a signing key can: runs `statements` (each may use `?` for the
 * debate id), then recomputes the debate's chain, its row digests in `seal_rows` and its seal with
 * the documented algorithm (docs/record.md), so `conclave verify` accepts the result.
 */
export function forge(file: string, debateId: string, ...statements: string[]): void {
  const s = new Database(file);
  try {
    s.transaction(() => {
      for (const statement of statements) {
        const st = s.prepare(statement);
        if (st.reader) st.all(...(statement.includes('?') ? [debateId] : []));
        else st.run(...(statement.includes('?') ? [debateId] : []));
      }
      reseal(s, debateId);
    })();
  } finally {
    s.close();
  }
}

/** A copy of `source` at `copy` with `statements` applied and the debate re-sealed. */
export function forgedCopy(source: string, copy: string, debateId: string, ...statements: string[]): string {
  copyRecord(source, copy);
  forge(copy, debateId, ...statements);
  return copy;
}

function reseal(s: Database.Database, debateId: string): void {
  const calls = s.prepare('select * from calls where debate_id = ? order by id').all(debateId) as Record<string, unknown>[];
  const link = s.prepare('update calls set prev_hash = ?, hash = ? where id = ?');
  let prev: string | null = null;
  for (const call of calls) {
    const hash = callHash({ ...call, prev_hash: prev });
    link.run(prev, hash, call.id);
    prev = hash;
  }
  const rows = readDebateRows(s, debateId);
  if (!rows) return;
  const digests = rowDigests(rows);
  s.prepare('delete from seal_rows where debate_id = ?').run(debateId);
  const insert = s.prepare('insert into seal_rows (debate_id, table_name, digests_json) values (?, ?, ?)');
  for (const table of Object.keys(digests).sort()) insert.run(debateId, table, canonicalJson(digests[table]));
  s.prepare('update debates set seal = ?, seal_rows_json = null, seal_signature = null, seal_key = null where id = ?').run(sealOf(rows, digests), debateId);
}
