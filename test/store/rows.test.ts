import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { eq, getTableColumns, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { type SQLiteTable, getTableConfig } from 'drizzle-orm/sqlite-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SEALED_TABLES } from '../../src/store/chain.js';
import { DECODED_COLUMNS, tableReader } from '../../src/store/rows.js';
import * as core from '../../src/store/schema.js';
import * as material from '../../src/store/schema-material.js';
import * as protocols from '../../src/store/schema-protocols.js';
import * as quality from '../../src/store/schema-quality.js';
import * as synthesis from '../../src/store/schema-synthesis.js';
import * as tensions from '../../src/store/schema-tensions.js';
import * as voting from '../../src/store/schema-voting.js';
import { runCli } from '../helpers/cli.js';

/** Every table of a debate's record, as drizzle's schema declares it. */
const tables = new Map<string, SQLiteTable>();
for (const mod of [core, material, protocols, quality, synthesis, tensions, voting]) {
  for (const value of Object.values(mod)) {
    try {
      const config = getTableConfig(value as SQLiteTable);
      tables.set(config.name, value as SQLiteTable);
    } catch {
      // Not a table: a type helper or a shared column set.
    }
  }
}
const debateTables = ['debates', 'calls', ...Object.keys(SEALED_TABLES)];

let dir = '';
let db = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-rows-'));
  db = join(dir, 'record.db');
  writeFileSync(join(dir, 'notes.md'), '# Notes\n\nThe write load peaks at 40 writers a second.\n');
  // Every feature that writes rows of its own: clashes, votes, protocol steps, attachments, a budget.
  for (const args of [
    ['demo', '--preset', 'tension-map', '--token-budget', '6000'],
    ['demo', '--preset', 'cluster-vote'],
    ['demo', '--preset', 'decompose', '--attach', 'notes.md', '--constraint', 'Budget under 10k EUR'],
  ]) {
    expect((await runCli([...args, '--db', db, '--quiet', '--token-ms', '0'], dir)).code).toBe(0);
  }
}, 120_000);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('reading the record without drizzle', () => {
  it('decodes the JSON and boolean columns the schema declares, table by table', () => {
    for (const name of debateTables) {
      const table = tables.get(name);
      expect(table, name).toBeDefined();
      const columns = getTableConfig(table!).columns;
      const json = columns.filter((c) => c.columnType === 'SQLiteTextJson').map((c) => c.name);
      const bool = columns.filter((c) => c.columnType === 'SQLiteBoolean').map((c) => c.name);
      expect([...(DECODED_COLUMNS[name]?.json ?? [])].sort(), `${name} JSON columns`).toEqual(json.sort());
      expect([...(DECODED_COLUMNS[name]?.bool ?? [])].sort(), `${name} boolean columns`).toEqual(bool.sort());
      // Anything else would need decoding too: a date, a bigint, a blob.
      expect(columns.filter((c) => !['SQLiteTextJson', 'SQLiteBoolean', 'SQLiteText', 'SQLiteInteger', 'SQLiteReal'].includes(c.columnType)).map((c) => c.name), name).toEqual([]);
    }
  });

  it('reads every row of every table of a debate exactly as drizzle does', () => {
    const sqlite = new Database(db, { readonly: true });
    try {
      const orm = drizzle(sqlite);
      const ids = (sqlite.prepare('select id from debates').all() as { id: string }[]).map((r) => r.id);
      expect(ids.length).toBe(3);
      let compared = 0;
      for (const id of ids) {
        const read = tableReader((source) => sqlite.prepare(source), id);
        for (const name of debateTables.filter((t) => t !== 'debates')) {
          const table = tables.get(name)!;
          const key = getTableColumns(table).debateId!;
          const expected = orm.select().from(table).where(eq(key, id)).orderBy(sql`rowid`).all() as Record<string, unknown>[];
          // The one field not named as its column in camelCase is read under the column's name.
          const renamed = expected.map((r) => ('resolvedInRound' in r ? (({ resolvedInRound, ...rest }) => ({ ...rest, resolvedRound: resolvedInRound }))(r) : r));
          expect(read(name, 'rowid'), `${name} of ${id}`).toEqual(renamed);
          compared += expected.length;
        }
        const [debate] = orm.select().from(core.debates).where(eq(core.debates.id, id)).all();
        expect(debate!.presetJson).toEqual(JSON.parse((sqlite.prepare('select preset_json from debates where id = ?').get(id) as { preset_json: string }).preset_json));
      }
      // The demos wrote rows in the feature tables, so the comparison covered them.
      for (const name of ['tension_maps', 'tensions', 'votes', 'vote_tiers', 'protocol_steps', 'attachments', 'budget_decisions', 'result_quality']) {
        expect((sqlite.prepare(`select count(*) as n from ${name}`).get() as { n: number }).n, name).toBeGreaterThan(0);
      }
      expect(compared).toBeGreaterThan(100);
    } finally {
      sqlite.close();
    }
  });
});
