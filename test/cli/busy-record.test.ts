import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { packagePath } from '../../src/package-root.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { capture, runCli } from '../helpers/cli.js';
import { scriptedResponder, simModels, testPreset } from '../helpers/panel.js';

// Another process (a backup, `sqlite3` in a terminal, a second writer) holds the database's
// write lock for 10 s in the middle of a debate: no finished reply may be lost for it.

let dir = '';
let sim: SimHandle;
let presetFile = '';
const panel = scriptedResponder([0.3, 0.4, 0.5]);
const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.99, callTimeoutSeconds: 60 } });
const HOLD_MS = 10_000;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-busy-'));
  presetFile = join(dir, 'panel.json');
  writeFileSync(presetFile, JSON.stringify(preset));
  sim = await startSimulator({ models: simModels(preset), tokenMs: 15, respond: panel.respond });
});

afterAll(async () => {
  await sim?.close();
});

function callCount(db: string): number {
  try {
    const s = new Database(db, { readonly: true, fileMustExist: true });
    try {
      return (s.prepare('select count(*) as n from calls').get() as { n: number }).n;
    } finally {
      s.close();
    }
  } catch {
    return 0;
  }
}

/** Waits until `ready` holds, polling without blocking the run in this process. */
async function until(what: string, ready: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`${what} never happened`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Another process that takes the write lock (BEGIN IMMEDIATE) and holds it for `ms`; resolves once it holds it. */
async function holdLock(db: string, ms: number): Promise<{ child: ChildProcess; released: Promise<void> }> {
  const script = `const D = require('better-sqlite3'); const d = new D(${JSON.stringify(db)}); d.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n'); setTimeout(() => { d.exec('COMMIT'); d.close(); }, ${ms});`;
  const child = spawn(process.execPath, ['-e', script], { cwd: packagePath(), stdio: ['ignore', 'pipe', 'inherit'] });
  const released = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('locked')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`the lock holder exited early (${code})`)));
  });
  return { child, released };
}

describe('a write lock held by another process during a debate', () => {
  it('loses no finished reply, reports no host failure, and the run completes once the lock is released', async () => {
    const db = join(dir, 'waits.db');
    const stdout = capture();
    const stderr = capture();
    const before = panel.seen.length;
    const run = main(['run', 'Should we do A?', '--preset', presetFile, '--host', sim.url, '--db', db, '--quiet', '--json'], { stdout, stderr, env: {}, cwd: dir });
    await until('the first recorded call', () => callCount(db) >= 1);
    const lock = await holdLock(db, HOLD_MS);
    const code = await run;
    await lock.released;

    expect(code, stderr.text).toBe(0);
    expect(stderr.text).toContain('the database is locked by');
    expect(stderr.text).toContain('Waiting to write');
    expect(stderr.text).toContain('the database is free again');
    const doc = JSON.parse(stdout.text) as { id: string; status: string; calls: { status: string; error: string | null; raw: string }[] };
    expect(doc.status).toBe('completed');
    // One recorded call per request the server answered, every one ok: nothing lost, nothing blamed on the host.
    expect(doc.calls).toHaveLength(panel.seen.length - before);
    expect(doc.calls.filter((c) => c.status !== 'ok')).toEqual([]);
    expect(doc.calls.every((c) => c.raw.length > 0)).toBe(true);
    const verify = await runCli(['verify', doc.id, '--db', db], dir);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toContain('sealed');
  }, 120_000);

  it('ends the run interrupted when the writer gives up, keeps what it could not write beside the database, and resumes once the lock is released', async () => {
    const db = join(dir, 'gives-up.db');
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', packagePath('src', 'cli', 'entry.ts'), 'run', 'Should we do A?', '--preset', presetFile, '--host', sim.url, '--db', db, '--quiet'],
      { cwd: packagePath(), env: { ...process.env, CONCLAVE_LOCK_WAIT_SECONDS: '1' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    await until('the first recorded call', () => callCount(db) >= 1);
    const lock = await holdLock(db, HOLD_MS);
    const code = await exited;
    await lock.released;

    expect(code, stderr).toBe(130);
    expect(stderr).toContain('stopped, interrupted');
    expect(stderr).not.toContain('Cannot reach Ollama');
    const id = /Debate (\S+) stopped/.exec(stderr)?.[1] ?? '';
    const kept = join(dir, `gives-up.db.unwritten-${id}.json`);
    expect(existsSync(kept)).toBe(true);
    const unwritten = JSON.parse(readFileSync(kept, 'utf8')) as { events: { type: string }[] };
    expect(unwritten.events.length).toBeGreaterThan(0);

    const listed = JSON.parse((await runCli(['list', '--db', db, '--json'], dir)).stdout) as { id: string; status: string }[];
    expect(listed.find((d) => d.id === id)?.status).toBe('interrupted');
    const verify = await runCli(['verify', id, '--db', db], dir);
    expect(verify.code).toBe(0);
    const resumed = await runCli(['resume', id, '--db', db, '--host', sim.url, '--json', '--quiet'], dir);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect((JSON.parse(resumed.stdout) as { status: string }).status).toBe('completed');
  }, 120_000);
});
