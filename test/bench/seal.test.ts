import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReport } from '../../src/bench/report.js';
import { executeBench } from '../../src/bench/runner.js';
import { IntegrityError, InterruptedError } from '../../src/errors.js';
import { finishBenchRun, loadBenchData } from '../../src/store/bench.js';
import { openStore } from '../../src/store/open.js';
import { newKeyPair, signerFromPem } from '../../src/store/signing.js';
import { packagePath } from '../../src/package-root.js';
import { capture, runCli } from '../helpers/cli.js';
import { main } from '../../src/cli/main.js';
import { startViewer } from '../helpers/viewer.js';
import { asBefore0018 } from '../store/fixtures.js';
import { readBenchParts } from '../../src/store/bench-seal.js';
import { canonicalJson } from '../../src/store/chain.js';
import { type BenchSetup, items, setupBench } from './fixture.js';

// A bench run's own rows (its items, trials, results, answers, baseline calls) are sealed as a
// debate's are: `bench report`, `rescore` and `verify` refuse a run edited by hand (exit 6).

let dir = '';
let clean = '';
let runId = '';
let bench: BenchSetup;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-bench-seal-'));
  clean = join(dir, 'clean.db');
  bench = await setupBench({ dbPath: clean });
  runId = await bench.start();
  bench.store.close();
});

afterAll(async () => {
  await bench?.close().catch(() => undefined);
});

/** A copy of the recorded run with one SQL statement applied by hand, as `sqlite3` would. */
function edited(name: string, sql: string): string {
  const file = join(dir, `${name}.db`);
  copyFileSync(clean, file);
  const raw = new Database(file);
  expect(raw.prepare(sql).run().changes, sql).toBeGreaterThan(0);
  raw.close();
  return file;
}

const cli = (args: string[]) => runCli(args, dir);

function markdownFigures(markdown: string): string {
  // The accuracy tables, without the lines that name times.
  return markdown
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .join('\n');
}

describe('the writes of a bench run', () => {
  it('all go through benchWrite, which verifies the run and reseals it in the same transaction', () => {
    const source = readFileSync(packagePath('src', 'store', 'bench.ts'), 'utf8');
    const functions = source.split(/\n(?=export function |function )/).filter((f) => /\.(insert|update|delete)\(/.test(f));
    expect(functions.length).toBeGreaterThanOrEqual(7);
    for (const f of functions) expect(f, f.slice(0, f.indexOf('('))).toMatch(/benchWrite\(|^function benchWrite/);
    // And nothing else in src writes bench rows.
    expect(source.match(/sqlite\.prepare\(['"`](insert|update|delete)/g) ?? []).toEqual([]);
  });
});

describe('a bench run as recorded', () => {
  it('reports its figures as before, and verify says the run is sealed', async () => {
    const report = await cli(['bench', 'report', runId, '--db', clean]);
    expect([report.code, report.stderr]).toEqual([0, '']);
    expect(report.stdout).toMatch(/debate \+ majority \| 75\.0% \|/);
    expect(report.stdout).not.toContain('sealed');
    const verify = await cli(['verify', runId, '--db', clean]);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toMatch(new RegExp(`^${runId}  bench run sealed    4 trials, seal [0-9a-f]{64}\\n$`));
    const all = await cli(['verify', '--all', '--db', clean]);
    expect(all.code).toBe(0);
    expect(all.stdout).toContain(`${runId}  bench run sealed`);
  });
});

describe('a bench run edited by hand', () => {
  const edits: [what: string, sql: string, row: RegExp][] = [
    ['a grade in bench_results', "update bench_results set correct = 1 - correct where condition = 'debate-vote' and trial_id = (select id from bench_trials where item_id = 'i3')", /a `bench_results` row \(trial \d+: item i3, preset test-panel; debate-vote\/\) was edited/],
    ['an answer in bench_answers', "update bench_answers set correct = 1 where trial_id = (select id from bench_trials where item_id = 'i3') and source = 'synthesis'", /a `bench_answers` row \(trial \d+: item i3, preset test-panel; synthesis\/\d+\/synthesizer\) was edited/],
    ['a trial in bench_trials', "update bench_trials set status = 'interrupted' where item_id = 'i2'", /a `bench_trials` row \(trial \d+: item i2, preset test-panel\) was edited/],
    ['an item in bench_items', "update bench_items set answer = '8' where item_id = 'i3'", /a `bench_items` row \(i3\) was edited/],
    ['the run in bench_runs', "update bench_runs set seed = 7", /a `bench_runs` row \(b[\w-]+\) was edited/],
    ['a baseline call in bench_calls', "update bench_calls set completion_tokens = 1 where id = (select min(id) from bench_calls)", /a `bench_calls` row \(trial \d+: item i1, preset test-panel; \d+\) was edited/],
    ['a result removed', "delete from bench_results where condition = 'single' and variant = 'c'", /a `bench_results` row \(trial \d+: item i\d, preset test-panel; single\/c\) was removed/],
    ['its seal removed', 'delete from bench_seals', /seal is missing: it was removed/],
  ];

  for (const [what, sql, row] of edits) {
    it(`refuses to report or re-score over ${what} (exit 6), naming the run and the row; verify names it too`, async () => {
      const file = edited(what.replace(/\W+/g, '-'), sql);
      const report = await cli(['bench', 'report', runId, '--db', file]);
      expect(report.code).toBe(6);
      expect(report.stdout).toBe('');
      expect(report.stderr).toContain(`Bench run \`${runId}\``);
      expect(report.stderr).toMatch(row);
      expect(report.stderr).toContain('No report was written.');
      expect(report.stderr).toContain(`conclave verify ${runId}`);
      const rescore = await cli(['rescore', runId, '--db', file]);
      expect([rescore.code, rescore.stdout]).toEqual([6, '']);
      expect(rescore.stderr).toMatch(row);
      expect(rescore.stderr).toContain('Nothing was re-scored.');
      const verify = await cli(['verify', runId, '--db', file]);
      expect(verify.code).toBe(6);
      expect(verify.stdout).toMatch(new RegExp(`^${runId}  bench run BROKEN`));
      expect(verify.stderr).toMatch(row);
      const all = await cli(['verify', '--all', '--db', file]);
      expect(all.code).toBe(6);
      // Only the run is edited, among debates that verify: the fix is the run's, not a debate's bundle.
      expect(all.stderr).toContain('run the suite again with `conclave bench`');
      expect(all.stderr).not.toContain('import FILE');
      const compare = await cli(['bench', 'compare', runId, runId, '--db', file]);
      expect([compare.code, compare.stdout]).toEqual([6, '']);
      expect(compare.stderr).toContain('Nothing was compared.');
    });
  }

  it("is refused by the viewer's report page, which says the record was edited and names the row", async () => {
    const file = edited('viewer', "update bench_results set correct = 1 where condition = 'single' and variant = 'c'");
    const viewer = await startViewer(file);
    try {
      const res = await fetch(`${viewer.url}/bench/${runId}`);
      expect(res.status).toBe(500);
      const page = await res.text();
      expect(page).toContain('The record was edited');
      expect(page).toMatch(/a <code>bench_results<\/code> row \(trial \d+: item i\d, preset test-panel; single\/c\) was edited|a `bench_results` row \(trial \d+: item i\d, preset test-panel; single\/c\) was edited/);
    } finally {
      await viewer.close();
    }
  });

  it("is marked BROKEN in the viewer's list of bench runs, with its changed row on hover, where an intact copy says sealed", async () => {
    const file = edited('viewer-list', "update bench_results set correct = 1 where condition = 'single' and variant = 'c'");
    const cell = async (db: string): Promise<string> => {
      const viewer = await startViewer(db);
      try {
        const res = await fetch(`${viewer.url}/`);
        expect(res.status).toBe(200);
        const page = await res.text();
        const row = page.slice(page.indexOf('id="bench-runs"')).split('<tr>').find((r) => r.includes(runId)) ?? '';
        return /<td class="seal">(.*?)<\/td>/s.exec(row)?.[1] ?? '';
      } finally {
        await viewer.close();
      }
    };
    const broken = await cell(file);
    expect(broken).toContain('>BROKEN<');
    expect(broken).toMatch(/title="a `bench_results` row \(trial \d+: item i\d, preset test-panel; single\/c\) was edited"/);
    const intact = await cell(clean);
    expect(intact).toContain('>sealed<');
    expect(intact).not.toContain('title=');
  });

  it('is refused by a write that would seal over it, which leaves the seal as it was', () => {
    const file = edited('resume-over-edit', "update bench_results set correct = 1 where condition = 'single' and variant = 'c'");
    const store = openStore(file);
    const seal = store.read('seal', (s) => s.prepare('select seal from bench_seals').get());
    expect(() => finishBenchRun(store, runId, 'interrupted', null, 1)).toThrow(IntegrityError);
    expect(() => finishBenchRun(store, runId, 'interrupted', null, 1)).toThrow(/does not match its seal \(a `bench_results` row \(trial \d+: item i\d, preset test-panel; single\/c\) was edited\), so nothing was written over it/);
    expect(store.read('seal', (s) => s.prepare('select seal from bench_seals').get())).toEqual(seal);
    store.close();
  });
});

describe('a bench run edited while its writer has it open', () => {
  it('is refused by the write that hashes every trial again (a run\'s end), which seals no edit made since the writer last checked', () => {
    const file = join(dir, 'open-writer.db');
    copyFileSync(clean, file);
    const store = openStore(file);
    finishBenchRun(store, runId, 'completed', null, 5);
    const raw = new Database(file);
    raw.prepare("update bench_results set correct = 1 where condition = 'single' and variant = 'c'").run();
    raw.close();
    expect(() => finishBenchRun(store, runId, 'completed', null, 6)).toThrow(/does not match its seal \(a `bench_results` row \(trial \d+: item i\d, preset test-panel; single\/c\) was edited\)/);
    store.close();
  });
});

describe('a bench run recorded before runs were sealed', () => {
  it('is reported by a reader with a plain notice that its figures cannot be checked, and verify says it is unsealed', async () => {
    const file = join(dir, 'old-read.db');
    copyFileSync(clean, file);
    const raw = new Database(file);
    asBefore0018(raw);
    raw.close();
    const report = await cli(['bench', 'report', runId, '--db', file]);
    expect(report.code).toBe(0);
    expect(report.stderr).toBe(`Bench run ${runId} was recorded before bench runs were sealed; its figures cannot be checked.\n`);
    expect(report.stdout).toContain(`**⚠ Bench run ${runId} was recorded before bench runs were sealed; its figures cannot be checked.**`);
    const fresh = await cli(['bench', 'report', runId, '--db', clean]);
    expect(markdownFigures(report.stdout)).toBe(markdownFigures(fresh.stdout));
    const rescore = await cli(['rescore', runId, '--db', file]);
    expect(rescore.code).toBe(0);
    expect(rescore.stderr).toContain('recorded before bench runs were sealed; its figures cannot be checked');
    const verify = await cli(['verify', runId, '--db', file]);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toBe(`${runId}  bench run unsealed  4 trials; recorded before bench runs were sealed; its figures cannot be checked\n`);
  });

  it('is sealed as it stands by the upgrade that brings seals, said so in the report, and edits after it are refused', async () => {
    const file = join(dir, 'old-upgrade.db');
    copyFileSync(clean, file);
    const raw = new Database(file);
    asBefore0018(raw);
    raw.close();
    const store = openStore(file);
    const data = loadBenchData(store, runId);
    expect(data.integrity.adoptedAt).toBeGreaterThan(0);
    expect(data.integrity.notice).toMatch(/was recorded before bench runs were sealed: it was sealed as it stood when this file was upgraded, \d{4}-\d\d-\d\d, and its figures cannot be checked against what was recorded before then\./);
    store.close();
    const report = await cli(['bench', 'report', runId, '--db', file]);
    expect(report.code).toBe(0);
    expect(report.stderr).toContain('sealed as it stood when this file was upgraded');
    const verify = await cli(['verify', runId, '--db', file]);
    expect(verify.stdout).toMatch(/bench run sealed {4}4 trials, seal [0-9a-f]{64}; recorded before bench runs were sealed, and sealed as it stood when the file was upgraded/);

    const edit = new Database(file);
    edit.prepare("update bench_results set correct = 1 where condition = 'single' and variant = 'c'").run();
    edit.close();
    expect((await cli(['bench', 'report', runId, '--db', file])).code).toBe(6);
    // The adoption mark is covered by the seal: removing it to pass the run as never adopted breaks it too.
    const unmark = join(dir, 'unmark.db');
    copyFileSync(clean, unmark);
    const raw2 = new Database(unmark);
    asBefore0018(raw2);
    raw2.close();
    openStore(unmark).close();
    const mark = new Database(unmark);
    mark.prepare('update bench_seals set adopted_at = null').run();
    mark.close();
    const unmarked = await cli(['bench', 'report', runId, '--db', unmark]);
    expect(unmarked.code).toBe(6);
    expect(unmarked.stderr).toMatch(/a `bench_runs` row \(b[\w-]+\) was edited/);
  });
});

describe('bench list', () => {
  // Two runs in one file: the run of four items (older) and one of a single item (newer).
  let two = '';
  let second = '';

  beforeAll(async () => {
    two = join(dir, 'two-runs.db');
    copyFileSync(clean, two);
    const more = await setupBench({ dbPath: two, items: items.slice(0, 1) });
    second = await more.start();
    await more.close();
  });

  /** A copy of the two runs with `sql` applied to the older one by hand. */
  function editedTwo(name: string, sql: string): string {
    const file = join(dir, `list-${name}.db`);
    copyFileSync(two, file);
    const raw = new Database(file);
    expect(raw.prepare(sql).run(runId).changes, sql).toBeGreaterThan(0);
    raw.close();
    return file;
  }

  /** Each run's line of `bench list`, split into its columns. */
  async function listed(file: string): Promise<{ code: number; stderr: string; cells: Map<string, string[]> }> {
    const r = await cli(['bench', 'list', '--db', file]);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]?.split(/\s{2,}/)).toEqual(['id', 'status', 'seal', 'done', 'started', 'suite', 'presets']);
    return { code: r.code, stderr: r.stderr, cells: new Map(lines.slice(1).map((l) => [l.split(/\s{2,}/)[0]!, l.split(/\s{2,}/)])) };
  }

  async function sealStates(file: string): Promise<Record<string, { state: string; [k: string]: unknown }>> {
    const r = await cli(['bench', 'list', '--db', file, '--json']);
    expect(r.code).toBe(0);
    return Object.fromEntries((JSON.parse(r.stdout) as { id: string; sealState: { state: string } }[]).map((run) => [run.id, run.sealState]));
  }

  it('says each run is sealed, in its own column and in --json, and says nothing more', async () => {
    const { code, stderr, cells } = await listed(two);
    expect([code, stderr]).toEqual([0, '']);
    expect(cells.get(runId)?.slice(1, 4)).toEqual(['completed', 'sealed', '4/4']);
    expect(cells.get(second)?.slice(1, 4)).toEqual(['completed', 'sealed', '1/1']);
    const states = await sealStates(two);
    expect(states[runId]).toEqual({ state: 'sealed', trials: 4, seal: expect.stringMatching(/^[0-9a-f]{64}$/) });
    // The seal is the one verify recomputes from every row.
    const verify = await cli(['verify', runId, '--db', two]);
    expect(verify.stdout).toContain(`seal ${String(states[runId]!.seal)}`);
  });

  const edits: [what: string, sql: string, problem: RegExp][] = [
    ['a grade in bench_results', "update bench_results set correct = 1 - correct where condition = 'debate-vote' and trial_id = (select id from bench_trials where run_id = ? and item_id = 'i3')", /a `bench_results` row \(trial \d+: item i3, preset test-panel; debate-vote\/\) was edited/],
    ['a result removed', "delete from bench_results where condition = 'single' and variant = 'c' and trial_id in (select id from bench_trials where run_id = ?)", /a `bench_results` row \(trial \d+: item i1, preset test-panel; single\/c\) was removed/],
    ['a trial in bench_trials', "update bench_trials set status = 'interrupted' where run_id = ? and item_id = 'i2'", /a `bench_trials` row \(trial \d+: item i2, preset test-panel\) was edited/],
    ['an item in bench_items', "update bench_items set answer = '8' where run_id = ? and item_id = 'i3'", /a `bench_items` row \(i3\) was edited/],
    ['the run in bench_runs', 'update bench_runs set seed = 7 where id = ?', /a `bench_runs` row \(b[\w-]+\) was edited/],
    ['its seal removed', 'delete from bench_seals where run_id = ?', /seal is missing: it was removed/],
    ['its seal rewritten', "update bench_seals set seal = '0000000000000000000000000000000000000000000000000000000000000000' where run_id = ?", /does not match its seal \(the seal or the recorded row digests changed\)/],
  ];

  for (const [what, sql, problem] of edits) {
    it(`names the run BROKEN on its line over ${what}, lists the other run as sealed, and exits 0 as \`list\` does`, async () => {
      const file = editedTwo(what.replace(/\W+/g, '-'), sql);
      const { code, stderr, cells } = await listed(file);
      expect(code).toBe(0);
      expect(cells.get(runId)?.[2]).toBe('BROKEN');
      expect(cells.get(second)?.[2]).toBe('sealed');
      expect(stderr).toMatch(new RegExp(`^Bench run ${runId} does not match its seal: .+\\. \`conclave verify ${runId}\` checks every row of it\\.\\n$`));
      expect(stderr).toMatch(problem);
      const states = await sealStates(file);
      expect(states[runId]).toMatchObject({ state: 'broken', problem: expect.stringMatching(problem) });
      expect(states[second]?.state).toBe('sealed');
      // verify, which reads every row, fails on it.
      expect((await cli(['verify', runId, '--db', file])).code).toBe(6);
    });
  }

  it('leaves an edit of an answer or a baseline call alone to verify: the list reads their digests, not their rows', async () => {
    for (const sql of [
      "update bench_answers set correct = 1 where source = 'synthesis' and trial_id in (select id from bench_trials where run_id = ?)",
      'update bench_calls set completion_tokens = 1 where trial_id in (select id from bench_trials where run_id = ?)',
    ]) {
      const file = editedTwo('answer', sql);
      const { code, cells } = await listed(file);
      expect([code, cells.get(runId)?.[2]]).toEqual([0, 'sealed']);
      const verify = await cli(['verify', runId, '--db', file]);
      expect(verify.code).toBe(6);
      expect(verify.stdout).toContain('bench run BROKEN');
    }
  });

  it('reads every row of a run whose recorded digests no longer give its seal, as verify does', async () => {
    // An answer edited, and the digests recorded for its trial written again to match it: only the seal is left as it was.
    const file = editedTwo('covered', "update bench_answers set correct = 1 where source = 'synthesis' and trial_id = (select id from bench_trials where run_id = ? and item_id = 'i4')");
    const raw = new Database(file);
    for (const [part, digests] of readBenchParts(raw, runId)!) raw.prepare('update bench_seal_rows set digests_json = ? where run_id = ? and part = ?').run(canonicalJson(digests), runId, part);
    raw.close();
    const { cells, stderr } = await listed(file);
    expect(cells.get(runId)?.[2]).toBe('BROKEN');
    expect(stderr).toContain('does not match its seal: the run does not match its seal (the seal or the recorded row digests changed)');
    // Digests edited over rows as recorded: the rows still give the seal, and the run is sealed, for verify too.
    const intact = join(dir, 'list-digest-only.db');
    copyFileSync(two, intact);
    const raw2 = new Database(intact);
    expect(raw2.prepare("update bench_seal_rows set digests_json = replace(digests_json, '\"bench_answers\":{\"', '\"bench_answers\":{\"0') where run_id = ? and part like 'trial %'").run(runId).changes).toBeGreaterThan(0);
    raw2.close();
    expect((await listed(intact)).cells.get(runId)?.[2]).toBe('sealed');
    expect((await cli(['verify', runId, '--db', intact])).code).toBe(0);
  });

  it('says a run recorded before runs were sealed is unsealed, then adopted once the file is upgraded, each with a note', async () => {
    const file = join(dir, 'list-old.db');
    copyFileSync(two, file);
    const raw = new Database(file);
    asBefore0018(raw);
    raw.close();
    const old = await listed(file);
    expect(old.code).toBe(0);
    expect([old.cells.get(runId)?.[2], old.cells.get(second)?.[2]]).toEqual(['unsealed', 'unsealed']);
    expect(old.stderr).toBe('unsealed: recorded before bench runs were sealed; its figures cannot be checked. The next command that writes to this file seals such runs as they stand.\n');
    expect((await sealStates(file))[runId]).toEqual({ state: 'unsealed', trials: 4, reason: 'recorded before bench runs were sealed; its figures cannot be checked' });

    openStore(file).close();
    const upgraded = await listed(file);
    expect([upgraded.cells.get(runId)?.[2], upgraded.cells.get(second)?.[2]]).toEqual(['adopted', 'adopted']);
    expect(upgraded.stderr).toMatch(/^adopted: recorded before bench runs were sealed, and sealed as they stood when the file was upgraded, \d{4}-\d\d-\d\d; what they held before then cannot be checked\.\n$/);
    expect((await sealStates(file))[runId]).toMatchObject({ state: 'sealed', adoptedAt: expect.any(Number) });
  });

  it('colours the seal column only on a terminal, and never under NO_COLOR or CI', async () => {
    const run = async (env: NodeJS.ProcessEnv, tty: boolean): Promise<string> => {
      const stdout = Object.assign(capture(120), { isTTY: tty });
      expect(await main(['bench', 'list', '--db', two], { stdout, stderr: capture(), env, cwd: dir })).toBe(0);
      return stdout.text;
    };
    const coloured = await run({}, true);
    expect(coloured).toContain('\u001b[32msealed\u001b[39m');
    // The colour takes no room: the columns line up as they do in plain text.
    expect(coloured.replace(/\u001b\[\d+m/g, '')).toBe(await run({}, false));
    for (const [env, tty] of [[{ NO_COLOR: '1' }, true], [{ CI: 'true' }, true], [{}, false]] as const) expect(await run(env, tty)).not.toContain('\u001b');
  });
});

describe('bench --resume', () => {
  it('verifies the run and seals every row it adds; a second writer on the same file keeps the seal whole', async () => {
    const controller = new AbortController();
    const file = join(mkdtempSync(join(tmpdir(), 'conclave-bench-seal-resume-')), 'record.db');
    const setup = await setupBench({
      dbPath: file,
      onRequest: (req) => {
        if (req.messages.some((m) => m.content.includes(items[2]!.question))) controller.abort();
        return undefined;
      },
    });
    try {
      const id = setup.create();
      await expect(setup.execute(id, { signal: controller.signal })).rejects.toBeInstanceOf(InterruptedError);
      setup.store.close();
      // A second process writes to the run between this one's writes: each sees the other's seal and reads the run again.
      const other = openStore(file);
      const store = openStore(file);
      setup.store = store;
      finishBenchRun(other, id, 'interrupted', 'stopped by the other', 2);
      await executeBench({ store, runId: id });
      finishBenchRun(other, id, 'completed', null, 3);
      other.close();
      const data = loadBenchData(store, id);
      expect(data.integrity).toMatchObject({ seal: expect.stringMatching(/^[0-9a-f]{64}$/), notice: null });
      expect(buildReport(data).conditions.find((c) => c.condition === 'debate-vote')).toMatchObject({ n: 4, correct: 3 });
      store.close();
      const verify = await cli(['verify', id, '--db', file]);
      expect([verify.code, verify.stdout]).toEqual([0, expect.stringMatching(/bench run sealed {4}\d+ trials/)]);

      // An edit made while a run is stopped is refused by the resume, before any model call.
      const edit = new Database(file);
      edit.prepare("update bench_runs set status = 'interrupted'").run();
      edit.prepare("update bench_answers set correct = 1 where source = 'synthesis' and correct = 0").run();
      edit.close();
      const resumed = await cli(['bench', '--resume', id, '--db', file, '--host', setup.sim.url]);
      expect(resumed.code).toBe(6);
      expect(resumed.stderr).toMatch(/a `bench_(runs|answers)` row/);
    } finally {
      await setup.close().catch(() => undefined);
    }
  });

  it('signs the run seal with the key every seal of the run is signed with, and verify --public-key checks it', async () => {
    const keys = newKeyPair();
    const file = join(mkdtempSync(join(tmpdir(), 'conclave-bench-seal-signed-')), 'record.db');
    const setup = await setupBench({ dbPath: file, items: items.slice(0, 1) });
    try {
      setup.store.signWith(signerFromPem(keys.privateKeyPem, 'key'));
      const id = await setup.start();
      setup.store.close();
      writeFileSync(join(dir, 'seal.pub'), keys.publicKeyPem);
      const verify = await cli(['verify', id, '--db', file, '--public-key', 'seal.pub', '--require-signed']);
      expect(verify.code).toBe(0);
      expect(verify.stdout).toContain(`bench run sealed    1 trial, seal`);
      expect(verify.stdout).toContain(`signed by key ${keys.keyId.slice(0, 16)}`);
      // bench list names the key the seal claims; only verify --public-key proves it.
      const list = await cli(['bench', 'list', '--db', file]);
      expect(list.stdout.split('\n')[1]?.split(/\s{2,}/).slice(1, 3)).toEqual(['completed', 'signed']);
      expect(list.stderr).toBe(`signed: by key ${keys.keyId.slice(0, 16)} (1 run), as its seal says; \`conclave verify RUN --public-key FILE\` proves a signature, which the list does not check.\n`);
      const json = JSON.parse((await cli(['bench', 'list', '--db', file, '--json'])).stdout) as { sealState: unknown }[];
      expect(json[0]?.sealState).toMatchObject({ state: 'sealed', signedBy: keys.keyId });
      // A write goes on only with the key that signed the run.
      const writer = openStore(file);
      expect(() => finishBenchRun(writer, id, 'completed', null, 7)).toThrow(/is signed by key [0-9a-f]{16}; going on without that key would leave it unsigned/);
      writer.signWith(signerFromPem(newKeyPair().privateKeyPem, 'other'));
      expect(() => finishBenchRun(writer, id, 'completed', null, 7)).toThrow(/not by the key given/);
      // Re-sealed without the key: the hashes match, the signature does not.
      const raw = new Database(file);
      raw.prepare('update bench_seals set seal_signature = null').run();
      raw.close();
      writer.signWith(signerFromPem(keys.privateKeyPem, 'key'));
      expect(() => finishBenchRun(writer, id, 'completed', null, 7)).toThrow(/its seal is not signed by it: it was re-sealed without the private key/);
      writer.close();
      // An unsigned run is not signed by a later write.
      const unsigned = join(dir, 'unsigned-then-key.db');
      copyFileSync(clean, unsigned);
      const signing = openStore(unsigned);
      signing.signWith(signerFromPem(keys.privateKeyPem, 'key'));
      expect(() => finishBenchRun(signing, runId, 'completed', null, 7)).toThrow(/is not signed, so signing it now with key/);
      signing.close();
      const forged = await cli(['verify', id, '--db', file, '--public-key', 'seal.pub']);
      expect(forged.code).toBe(6);
      expect(forged.stdout).toMatch(/bench run BROKEN {4}its seal is not signed/);
    } finally {
      await setup.close().catch(() => undefined);
    }
  });
});
