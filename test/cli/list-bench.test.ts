import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load-preset.js';
import { demoResponder, simModelsFor } from '../../src/sim/demo.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { main } from '../../src/cli/main.js';
import { capture, runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'conclave-list-bench-'));
const db = join(dir, 'record.db');
let sim: SimHandle;

beforeAll(async () => {
  const { preset } = loadPreset('small-8gb');
  sim = await startSimulator({ models: simModelsFor([preset]), respond: demoResponder([preset]) });
  expect((await runCli(['bench', '--suite', 'arithmetic', '--preset', 'small-8gb', '--limit', '3', '--host', sim.url, '--db', db, '--quiet'], dir)).code).toBe(0);
  expect((await runCli(['demo', '--db', db, '--quiet', '--token-ms', '0'], dir)).code).toBe(0);
}, 120_000);

afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('list and bench items', () => {
  it('lists the debates people ran, counts the bench items it leaves out, and lists those with --bench', async () => {
    const plain = await runCli(['list', '--db', db], dir);
    expect(plain.code).toBe(0);
    const rows = plain.stdout.trim().split('\n').slice(1);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain('tech-decision');
    expect(plain.stderr).toContain('3 debates run by `conclave bench` are not listed: `conclave list --bench` lists them');

    const bench = await runCli(['list', '--db', db, '--bench', '--json'], dir);
    const items = JSON.parse(bench.stdout) as { presetName: string; bench: boolean }[];
    expect(items).toHaveLength(3);
    expect(items.every((d) => d.bench && d.presetName === 'small-8gb')).toBe(true);
  });

  it('fits `list` and `bench list` in 100 columns off a terminal, or in the terminal\'s width, clipping the question', async () => {
    for (const args of [['list', '--db', db, '--bench'], ['list', '--db', db], ['bench', 'list', '--db', db]]) {
      const r = await runCli(args, dir);
      expect(r.code).toBe(0);
      expect(r.stdout.trim()).not.toBe('');
      for (const line of r.stdout.split('\n')) expect(line.length).toBeLessThanOrEqual(100);
    }
    const stdout = Object.assign(capture(80), { isTTY: true });
    const stderr = capture(80);
    expect(await main(['list', '--db', db, '--bench'], { stdout, stderr, env: {}, cwd: dir })).toBe(0);
    for (const line of stdout.text.trim().split('\n')) expect(line.length).toBeLessThanOrEqual(80);
    expect(stdout.text).toContain('…');
  });

  it('says that no debate matched an empty --status filter, before the note on bench items', async () => {
    const r = await runCli(['list', '--db', db, '--status', 'failed'], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^No debate matched --status failed in .*record\.db\. `conclave list` shows them all\.\n/);
    // Every completed debate a person ran is left out with --bench: said first, then the note.
    const onlyBench = await runCli(['list', '--db', db, '--status', 'completed', '--bench', '--limit', '0'], dir);
    expect(onlyBench.stderr.split('\n')[0]).toMatch(/^No debate run by `conclave bench` matched --status completed/);
  });

  it('wraps an error message at word boundaries on a terminal', async () => {
    const stdout = capture(60);
    const stderr = Object.assign(capture(60), { isTTY: true });
    expect(await main(['show', 'no-such-debate-anywhere', '--db', db], { stdout, stderr, env: {}, cwd: dir })).not.toBe(0);
    const lines = stderr.text.trimEnd().split('\n');
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(60);
    // No word was cut: joined again, the text reads as one.
    const words = stderr.text.split(/\s+/).filter(Boolean);
    const piped = capture(60);
    await main(['show', 'no-such-debate-anywhere', '--db', db], { stdout, stderr: piped, env: {}, cwd: dir });
    expect(words).toEqual(piped.text.split(/\s+/).filter(Boolean));
  });

  it('shows the rounds and the last score of a debate killed before it finished, not 0 and -', async () => {
    const [row] = JSON.parse((await runCli(['list', '--db', db, '--json'], dir)).stdout) as { id: string; roundsCompleted: number; finalConvergence: number }[];
    const sqlite = new Database(db);
    // What a kill -9 leaves: the rounds and scores written, the debate's own row never finished.
    sqlite.prepare("update debates set status = 'interrupted', finished_at = null, rounds_completed = 0, final_convergence = null where id = ?").run(row!.id);
    sqlite.close();
    const [killed] = JSON.parse((await runCli(['list', '--db', db, '--json'], dir)).stdout) as typeof row[];
    expect(killed!.roundsCompleted).toBe(row!.roundsCompleted);
    expect(killed!.finalConvergence).toBe(row!.finalConvergence);
    expect(row!.roundsCompleted).toBeGreaterThan(0);
  });
});
