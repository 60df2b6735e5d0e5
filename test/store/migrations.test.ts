import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { generateSQLiteDrizzleJson, generateSQLiteMigration } from 'drizzle-kit/api';
import { describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { READ_COMPATIBLE, READER_OPTIONAL_TABLES } from '../../src/store/migrations-journal.js';
import { pathToFileURL } from 'node:url';

const folder = packagePath('migrations');

interface Journal {
  entries: { idx: number; tag: string; when: number }[];
}

function journal(): Journal {
  return JSON.parse(readFileSync(join(folder, 'meta', '_journal.json'), 'utf8')) as Journal;
}

describe('shipped migrations', () => {
  it('match the schema: generating from the latest snapshot yields no statements', async () => {
    const entries = journal().entries;
    const latest = entries[entries.length - 1];
    expect(latest).toBeDefined();
    const snapshotFile = join(folder, 'meta', `${String(latest?.idx).padStart(4, '0')}_snapshot.json`);
    const snapshot = JSON.parse(readFileSync(snapshotFile, 'utf8')) as Parameters<typeof generateSQLiteMigration>[0];
    // Every src/store/schema*.ts file, as drizzle.config.ts reads them.
    const dir = packagePath('src', 'store');
    const files = readdirSync(dir).filter((f) => /^schema.*\.ts$/.test(f));
    const modules = await Promise.all(files.map((f) => import(pathToFileURL(join(dir, f)).href) as Promise<Record<string, unknown>>));
    const current = await generateSQLiteDrizzleJson(Object.assign({}, ...modules));
    expect(await generateSQLiteMigration(snapshot, current)).toEqual([]);
  });

  it('list exactly the SQL files in the folder, in timestamp order', () => {
    const entries = journal().entries;
    const sqlFiles = readdirSync(folder).filter((f) => f.endsWith('.sql')).sort();
    expect(entries.map((e) => `${e.tag}.sql`)).toEqual(sqlFiles);
    const times = entries.map((e) => e.when);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it('let readers skip only migrations that leave every table with the columns it had (readers read rows by column name), adding none but tables readers do without', () => {
    const entries = journal().entries;
    const scratch = mkdtempSync(join(tmpdir(), 'conclave-read-compatible-'));
    try {
      for (const tag of READ_COMPATIBLE) {
        const at = entries.findIndex((e) => e.tag === tag);
        expect(at).toBeGreaterThan(0);
        const db = new Database(':memory:');
        migrateUpTo(db, entries.slice(0, at), join(scratch, `${tag}-before`));
        const before = tableColumns(db);
        migrateUpTo(db, entries.slice(0, at + 1), join(scratch, `${tag}-after`));
        const after = tableColumns(db);
        const added = Object.keys(after).filter((t) => !(t in before));
        expect(added.every((t) => READER_OPTIONAL_TABLES.has(t)), `${tag} adds ${added.join(', ')}`).toBe(true);
        for (const t of added) delete after[t];
        expect(after).toEqual(before);
        db.close();
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});

/** Applies these journal entries (a prefix of the shipped ones) with drizzle's migrator, from a folder of their own. */
function migrateUpTo(db: Database.Database, entries: Journal['entries'], dir: string): void {
  mkdirSync(join(dir, 'meta'), { recursive: true });
  writeFileSync(join(dir, 'meta', '_journal.json'), JSON.stringify({ ...journal(), entries }));
  for (const e of entries) cpSync(join(folder, `${e.tag}.sql`), join(dir, `${e.tag}.sql`));
  migrate(drizzle(db), { migrationsFolder: dir });
}

/** Every table but drizzle's own, with its columns (sorted: a rebuild puts columns added later in schema order). */
function tableColumns(db: Database.Database): Record<string, string[]> {
  const tables = db.prepare("select name from sqlite_master where type = 'table' and name not like '\\_\\_%' escape '\\' order by name").all() as { name: string }[];
  return Object.fromEntries(tables.map((t) => [t.name, (db.prepare('select name from pragma_table_info(?)').all(t.name) as { name: string }[]).map((c) => c.name).sort()]));
}
