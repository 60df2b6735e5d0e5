import type Database from 'better-sqlite3';
import { callHash, readDebateRows, type Row, rowDigests, sealOf } from './chain.js';

// Debates recorded before checkpoints had no seal while they ran, and those recorded before the
// hash chain have none at all. They were once listed in a table (`legacy_debates`) that switched
// `verify` to weaker rules, and anyone who could write the file could list another debate there.
// Instead, the upgrade that drops the list seals each of them as it stands, and marks it
// `adopted_at`, a column the seal covers: from then on its rows are checked like any other's,
// and the mark can be neither added nor removed without breaking the seal (docs/record.md).

/** The migration that replaces the list with adopted seals. */
export const ADOPTION_MIGRATION = '0015_adopted_seals';

/** Before migrating: the debates that the old rules treated as legacy, which the upgrade adopts. */
export function debatesToAdopt(sqlite: Database.Database): string[] {
  const tables = new Set((sqlite.prepare("select name from sqlite_master where type = 'table'").all() as { name: string }[]).map((t) => t.name));
  if (!tables.has('debates')) return [];
  if (tables.has('legacy_debates')) {
    return (sqlite.prepare('select l.debate_id as id from legacy_debates l join debates d on d.id = l.debate_id where d.seal is null').all() as { id: string }[]).map((r) => r.id);
  }
  // A file from before checkpoints: the migration that brought them would have listed every unsealed debate.
  const columns = new Set((sqlite.prepare('select name from pragma_table_info(?)').all('debates') as { name: string }[]).map((c) => c.name));
  const sql = columns.has('seal') ? 'select id from debates where seal is null' : 'select id from debates';
  return (sqlite.prepare(sql).all() as { id: string }[]).map((r) => r.id);
}

/** After migrating: chains the calls of those that have no hash at all, and seals each as it stands. */
export function adoptDebates(sqlite: Database.Database, ids: readonly string[], now: number): void {
  if (ids.length === 0) return;
  sqlite.transaction(() => {
    for (const id of ids) {
      const calls = sqlite.prepare('select * from calls where debate_id = ? order by id').all(id) as Row[];
      if (calls.length > 0 && calls.every((c) => c.hash === null || c.hash === undefined)) {
        let prev: string | null = null;
        const update = sqlite.prepare('update calls set prev_hash = ?, hash = ? where id = ?');
        for (const call of calls) {
          const hash = callHash({ ...call, prev_hash: prev });
          update.run(prev, hash, call.id);
          prev = hash;
        }
      }
      sqlite.prepare('update debates set adopted_at = ? where id = ?').run(now, id);
      const rows = readDebateRows(sqlite, id);
      if (!rows) continue;
      const digests = rowDigests(rows);
      sqlite.prepare('update debates set seal = ?, seal_rows_json = ? where id = ?').run(sealOf(rows, digests), JSON.stringify(digests), id);
    }
  })();
}
