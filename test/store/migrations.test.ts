import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateSQLiteDrizzleJson, generateSQLiteMigration } from 'drizzle-kit/api';
import { describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
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
});
