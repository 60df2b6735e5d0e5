/**
 * `npm run bench:bench-list -- [--runs 20] [--items 500]`: how long `conclave bench list` takes
 * over `--runs` bench runs of `--items` items each, against `conclave verify` of one run and of
 * all, and the list's seal check against verify's over every run, in process. A real run of 20
 * items is made against the simulator (no token delay); its bench rows are copied, under new item
 * ids, until it holds `--items` items, then the run is copied under new run ids; each run is
 * sealed as if it had recorded its rows. Run `npm run build` first; `BENCH_KEEP=1` keeps the file.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import type BetterSqlite3 from 'better-sqlite3';
import { main } from '../src/cli/main.js';
import { loadPreset } from '../src/config/load-preset.js';
import { packagePath } from '../src/package-root.js';
import { demoResponder, simModelsFor } from '../src/sim/demo.js';
import { startSimulator } from '../src/sim/index.js';
import { openStore } from '../src/store/open.js';
import { listBenchRuns } from '../src/store/bench.js';
import { benchRunIds, glanceBenchRun, resealBenchRun, verifyBenchRun } from '../src/store/bench-seal.js';
import { capture } from '../test/helpers/cli.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '20' }, items: { type: 'string', default: '500' }, 'seed-items': { type: 'string', default: '20' }, preset: { type: 'string', default: 'small-8gb' } } });
const runs = Number(values.runs);
const target = Number(values.items);
const seedItems = Number(values['seed-items']);
const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-list-'));
const db = join(dir, 'bench.db');

const preset = loadPreset(values.preset).preset;
const sim = await startSimulator({ models: simModelsFor([preset]), respond: demoResponder([preset]) });
const quiet = { stdout: capture(), stderr: capture(), env: {}, cwd: dir };
const code = await main(['bench', '--suite', 'arithmetic', '--limit', String(seedItems), '--preset', values.preset, '--host', sim.url, '--db', db, '--concurrency', '4', '--quiet'], quiet);
await sim.close();
if (code !== 0) throw new Error(`bench failed: ${quiet.stderr.text}`);

const store = openStore(db);
const seedRun = listBenchRuns(store)[0]!.id;
store.use('copy the runs', (_db, sqlite: BetterSqlite3.Database) => {
  const insert = (table: string, row: Record<string, unknown>): number => {
    const names = Object.keys(row);
    return Number(sqlite.prepare(`insert into ${table} (${names.join(', ')}) values (${names.map(() => '?').join(', ')})`).run(...names.map((n) => row[n] as never)).lastInsertRowid);
  };
  const without = (row: Record<string, unknown>, key: string): Record<string, unknown> => Object.fromEntries(Object.entries(row).filter(([k]) => k !== key));
  const copyRun = (from: string, to: string | null, copies: number): void => {
    const runId = to ?? from;
    const items = sqlite.prepare('select * from bench_items where run_id = ? order by ordinal').all(from) as Record<string, unknown>[];
    const trials = sqlite.prepare('select * from bench_trials where run_id = ?').all(from) as Record<string, unknown>[];
    if (to !== null) insert('bench_runs', { ...(sqlite.prepare('select * from bench_runs where id = ?').get(from) as Record<string, unknown>), id: to });
    for (let k = to === null ? 1 : 0; k < copies; k++) {
      const suffix = k === 0 ? '' : `-copy${k}`;
      for (const item of items) insert('bench_items', { ...item, run_id: runId, item_id: `${String(item.item_id)}${suffix}`, ordinal: Number(item.ordinal) + k * items.length });
      for (const trial of trials) {
        const newTrial = insert('bench_trials', { ...without(trial, 'id'), run_id: runId, item_id: `${String(trial.item_id)}${suffix}` });
        for (const table of ['bench_results', 'bench_answers', 'bench_calls']) {
          for (const row of sqlite.prepare(`select * from ${table} where trial_id = ?`).all(trial.id) as Record<string, unknown>[]) insert(table, { ...(table === 'bench_calls' ? without(row, 'id') : row), trial_id: newTrial });
        }
      }
    }
    sqlite.prepare('update bench_runs set item_count = ? where id = ?').run(items.length * copies, runId);
    resealBenchRun(sqlite, runId, { run: true, trials: 'all' }, null);
  };
  sqlite.transaction(() => copyRun(seedRun, null, Math.ceil(target / seedItems))).immediate();
  for (let r = 1; r < runs; r++) sqlite.transaction(() => copyRun(seedRun, `${seedRun}-${r}`, 1)).immediate();
});
const rows = store.read('count', (s) => s.prepare("select (select count(*) from bench_trials) as trials, (select count(*) from bench_results) + (select count(*) from bench_answers) + (select count(*) from bench_calls) as rows").get()) as { trials: number; rows: number };
store.close();
console.log(`${runs} bench runs of ${Math.ceil(target / seedItems) * seedItems} items: ${rows.trials.toLocaleString('en-US')} trials, ${rows.rows.toLocaleString('en-US')} result, answer and call rows, ${(statSync(db).size / 2 ** 20).toFixed(0)} MiB`);

// The check itself, in this process: the list's against verify's, over every run.
const sqlite = new Database(db, { readonly: true });
const ids = benchRunIds(sqlite);
for (const [name, check] of [['bench list check (glanceBenchRun)', glanceBenchRun], ['verify of every row (verifyBenchRun)', verifyBenchRun]] as const) {
  const t = performance.now();
  for (const id of ids) if (check(sqlite, id)?.state !== 'sealed') throw new Error(`${id} is not sealed`);
  console.log(`${name.padEnd(38)} ${((performance.now() - t) / 1000).toFixed(2)} s for ${ids.length} runs`);
}
sqlite.close();

const cli = packagePath('bin', 'conclave.js');
for (const args of [['bench', 'list'], ['bench', 'list', '--json'], ['verify', seedRun], ['verify', '--all']]) {
  const r = spawnSync('/usr/bin/time', ['-f', '%e %M', process.execPath, cli, ...args, '--db', db], { encoding: 'utf8', maxBuffer: 1 << 30 });
  const [seconds, kib] = (r.stderr.trim().split('\n').at(-1) ?? '').split(' ');
  console.log(`conclave ${args.join(' ').replace(seedRun, 'RUN').padEnd(22)} exit ${r.status}  ${Number(seconds).toFixed(2)} s  peak RSS ${(Number(kib) / 1024).toFixed(0)} MiB`);
}
if (process.env.BENCH_KEEP === "1") console.log(`kept: ${db}`); else rmSync(dir, { recursive: true, force: true });
