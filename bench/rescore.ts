/**
 * `npm run bench:rescore -- [--items 500] [--seed-items 20]`: how long `conclave rescore` takes
 * on a bench run of 500 items. A real run of `--seed-items` items is made against the simulator
 * (no token delay), then its debates and bench rows are copied, under new ids, until the run
 * holds `--items` items; the copies are real rows of the record, read as any run is.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import type BetterSqlite3 from 'better-sqlite3';
import { main } from '../src/cli/main.js';
import { loadPreset } from '../src/config/load-preset.js';
import { demoResponder, simModelsFor } from '../src/sim/demo.js';
import { startSimulator } from '../src/sim/index.js';
import { openStore } from '../src/store/open.js';
import { listBenchRuns, loadBenchData } from '../src/store/bench.js';
import { readRescoreRecords } from '../src/store/rescore-read.js';
import { rescoreRun } from '../src/bench/rescore.js';
import { capture } from '../test/helpers/cli.js';
import { adoptDebates } from '../src/store/adopt.js';
import { resealBenchRun } from '../src/store/bench-seal.js';
import { CALL_LINKS } from '../src/store/chain.js';

const { values } = parseArgs({ options: { items: { type: 'string', default: '500' }, 'seed-items': { type: 'string', default: '20' }, preset: { type: 'string', default: 'small-8gb' } } });
const target = Number(values.items);
const seedItems = Number(values['seed-items']);
const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-rescore-'));
const db = join(dir, 'bench.db');

const preset = loadPreset(values.preset).preset;
const sim = await startSimulator({ models: simModelsFor([preset]), respond: demoResponder([preset]) });
const quiet = { stdout: capture(), stderr: capture(), env: {}, cwd: dir };
const t0 = performance.now();
const code = await main(['bench', '--suite', 'arithmetic', '--limit', String(seedItems), '--preset', values.preset, '--host', sim.url, '--db', db, '--concurrency', '4', '--quiet'], quiet);
await sim.close();
if (code !== 0) throw new Error(`bench failed: ${quiet.stderr.text}`);
const seedSeconds = (performance.now() - t0) / 1000;

const store = openStore(db);
const runId = listBenchRuns(store)[0]!.id;
const copies = Math.ceil(target / seedItems);
store.use('copy the run', (_db, sqlite: BetterSqlite3.Database) => {
  const columns = (table: string): string[] => (sqlite.prepare(`select name from pragma_table_info('${table}')`).all() as { name: string }[]).map((c) => c.name);
  const childTables = (sqlite.prepare("select name from sqlite_master where type = 'table'").all() as { name: string }[])
    .map((t) => t.name)
    .filter((t) => t !== 'debates' && columns(t).includes('debate_id') && !t.startsWith('bench_'));
  const insert = (table: string, row: Record<string, unknown>): number => {
    const names = Object.keys(row);
    return Number(sqlite.prepare(`insert into ${table} (${names.join(', ')}) values (${names.map(() => '?').join(', ')})`).run(...names.map((n) => row[n] as never)).lastInsertRowid);
  };
  const without = (row: Record<string, unknown>, key: string): Record<string, unknown> => Object.fromEntries(Object.entries(row).filter(([k]) => k !== key));
  const items = sqlite.prepare('select * from bench_items where run_id = ? order by ordinal').all(runId) as Record<string, unknown>[];
  const trials = sqlite.prepare('select * from bench_trials where run_id = ?').all(runId) as Record<string, unknown>[];
  const copied: string[] = [];
  sqlite.transaction(() => {
    for (let k = 1; k < copies; k++) {
      const suffix = `-copy${k}`;
      for (const item of items) insert('bench_items', { ...item, item_id: `${String(item.item_id)}${suffix}`, ordinal: Number(item.ordinal) + k * items.length });
      for (const trial of trials) {
        const debateId = trial.debate_id === null ? null : `${String(trial.debate_id)}${suffix}`;
        if (debateId !== null) {
          const debate = sqlite.prepare('select * from debates where id = ?').get(trial.debate_id) as Record<string, unknown>;
          insert('debates', { ...debate, id: debateId, created_at: Number(debate.created_at) + k, seal: null, seal_rows_json: null, seal_signature: null, seal_key: null });
          // Calls first, so rows that link to a call point at the copy's own; the copy is then chained and sealed as its own record.
          const newCall = new Map<unknown, number>();
          for (const table of ['calls', ...childTables.filter((t) => t !== 'calls' && t !== 'seal_rows')]) {
            for (const row of sqlite.prepare(`select * from ${table} where debate_id = ?${table === 'calls' ? ' order by id' : ''}`).all(trial.debate_id) as Record<string, unknown>[]) {
              if (table === 'calls') {
                newCall.set(row.id, insert(table, { ...without(row, 'id'), debate_id: debateId, prev_hash: null, hash: null }));
                continue;
              }
              const links = Object.fromEntries((CALL_LINKS[table] ?? []).filter((c) => row[c] !== null && row[c] !== undefined).map((c) => [c, newCall.get(row[c])]));
              insert(table, { ...row, ...links, debate_id: debateId });
            }
          }
          copied.push(debateId);
        }
        const newTrial = insert('bench_trials', { ...without(trial, 'id'), item_id: `${String(trial.item_id)}${suffix}`, debate_id: debateId });
        for (const table of ['bench_results', 'bench_answers', 'bench_calls']) {
          const key = columns(table).includes('id') ? 'id' : '';
          for (const row of sqlite.prepare(`select * from ${table} where trial_id = ?`).all(trial.id) as Record<string, unknown>[]) insert(table, { ...(key ? without(row, key) : row), trial_id: newTrial });
        }
      }
    }
    sqlite.prepare('update bench_runs set item_count = ? where id = ?').run(items.length * copies, runId);
  })();
  // `rescore` verifies every debate it reads: each copy gets a chain and a seal of its own.
  adoptDebates(sqlite, copied, Date.now());
  // And the run's own rows: the copies are sealed with the run, as if it had recorded them.
  sqlite.transaction(() => resealBenchRun(sqlite, runId, { run: true, trials: 'all' }, null)).immediate();
});

const t1 = performance.now();
const data = loadBenchData(store, runId);
const records = readRescoreRecords(store, data.trials.flatMap((t) => (t.debateId ? [t.debateId] : [])));
const t2 = performance.now();
const result = rescoreRun(data, records);
const t3 = performance.now();
rescoreRun(data, records, { iterations: 1 });
const t3b = performance.now();
store.close();

const out = capture();
const t4 = performance.now();
const cli = await main(['rescore', runId, '--json', '--db', db], { stdout: out, stderr: capture(), env: {}, cwd: dir });
const t5 = performance.now();
if (cli !== 0) throw new Error('rescore failed');

const calls = [...records.values()].reduce((n, r) => n + r.calls.length, 0);
console.log(`bench run of ${data.trials.length} items (${seedItems} run against the simulator in ${seedSeconds.toFixed(1)} s, copied ${copies}×), ${calls} debate calls, ${result.rules.length} rules`);
console.log(`read the record:          ${((t2 - t1) / 1000).toFixed(2)} s`);
console.log(`apply every rule + CIs:   ${((t3 - t2) / 1000).toFixed(2)} s (2000 bootstrap resamples per rule and per paired difference)`);
console.log(`apply every rule alone:   ${((t3b - t3) / 1000).toFixed(2)} s (one resample)`);
console.log(`conclave rescore RUN --json, in process: ${((t5 - t4) / 1000).toFixed(2)} s`);
rmSync(dir, { recursive: true, force: true });
