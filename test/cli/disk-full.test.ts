import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { runCli } from '../helpers/cli.js';
import { scriptedResponder, simModels, testPreset } from '../helpers/panel.js';

// The disk fills while Conclave writes. A file-size limit on the process (`ulimit -f`, which
// needs no privilege) makes it happen at a set size: SQLite's write past it fails (an I/O error,
// EFBIG; a full volume gives SQLITE_FULL and takes the same path), and SQLite rolls back by itself.

let dir = '';
let sim: SimHandle;
let presetFile = '';
const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.99, callTimeoutSeconds: 60 } });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-disk-full-'));
  presetFile = join(dir, 'panel.json');
  writeFileSync(presetFile, JSON.stringify(preset));
  sim = await startSimulator({ models: simModels(preset), tokenMs: 1, respond: scriptedResponder([0.3, 0.4, 0.5]).respond });
});

afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The CLI from source in a process of its own, whose files may grow to `maxBytes` at most (none: no limit). */
function conclave(args: string[], maxBytes: number | null): Promise<{ code: number | null; stderr: string }> {
  const command = [process.execPath, '--import', 'tsx', packagePath('src', 'cli', 'entry.ts'), ...args];
  // sh's `ulimit -f` counts blocks of 512 bytes (POSIX).
  const [file, ...rest] = maxBytes === null ? command : ['sh', '-c', `ulimit -f ${Math.floor(maxBytes / 512)} && exec "$@"`, 'sh', ...command];
  const child = spawn(file!, rest, { cwd: packagePath(), env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

const run = (db: string, maxBytes: number | null) => conclave(['run', 'Should we do A?', '--preset', presetFile, '--host', sim.url, '--db', db, '--quiet'], maxBytes);

function expectUserError(stderr: string): void {
  expect(stderr).not.toContain('cannot rollback');
  expect(stderr).not.toContain('report this as a bug');
  expect(stderr).not.toContain('internal error');
  // No stack trace without --debug.
  expect(stderr).not.toMatch(/^\s+at /m);
}

describe('a disk that fills while a new database is set up', () => {
  it('says that the file cannot be written and what to check, not that Conclave has a bug, and a retry with room sets it up', async () => {
    const db = join(dir, 'new.db');
    // Room for the first small writes, not for the migrations' transaction: its COMMIT fails.
    const full = await run(db, 100 * 1024);
    expect(full.code, full.stderr).toBe(4);
    expect(full.stderr).toContain(`conclave: Could not set up the new database ${db}: the file cannot be read or written`);
    expect(full.stderr).toContain('Check that the disk is mounted and has free space');
    expectUserError(full.stderr);

    const retried = await run(db, null);
    expect(retried.code, retried.stderr).toBe(0);
  }, 120_000);
});

describe('a disk that fills while an older database is upgraded', () => {
  it('leaves no unfinished copy from before the upgrade, so the next upgrade makes a whole one', async () => {
    const db = join(dir, 'older.db');
    const old = olderRecord(db);
    const full = await run(db, 200 * 1024);
    expect(full.code, full.stderr).toBe(4);
    expect(readdirSync(dir).filter((f) => f.startsWith('older.db.before-'))).toEqual([]);
    expect(full.stderr).toContain(`Could not keep a copy of ${db} from before its upgrade`);
    expect(full.stderr).toContain('Check that the disk is mounted and has free space');
    expectUserError(full.stderr);

    const retried = await run(db, null);
    expect(retried.code, retried.stderr).toBe(0);
    const backup = `${db}.before-${old.firstPending}`;
    const copy = new Database(backup, { readonly: true });
    try {
      expect((copy.prepare('select count(*) as n from filler').get() as { n: number }).n).toBe(old.fillerRows);
    } finally {
      copy.close();
    }
  }, 120_000);
});

describe('a disk that fills in the middle of a run', () => {
  it('stops the run interrupted, names and keeps what was not written, says how to go on, and the debate resumes once there is room', async () => {
    const db = join(dir, 'mid-run.db');
    // Created first, so the limit leaves room for the run's first writes only.
    openStore(db).close();
    const full = await run(db, 200 * 1024);

    expect(full.code, full.stderr).toBe(130);
    expectUserError(full.stderr);
    expect(full.stderr).toMatch(/the file cannot be read or written \(disk I\/O error\); .*could not be written/);
    expect(full.stderr).toMatch(/^ {2}not written: \w+ call of \w+, round \d+, \w+, \d+ characters? of reply$/m);
    const listed = JSON.parse((await runCli(['list', '--db', db, '--json'], dir)).stdout) as { id: string; status: string }[];
    expect(listed).toHaveLength(1);
    const { id, status } = listed[0]!;
    expect(status).toBe('interrupted');
    expect(full.stderr).toContain(`conclave resume ${id}`);
    const kept = `${db}.unwritten-${id}.json`;
    expect(full.stderr).toContain(`They are saved in ${kept}.`);
    const unwritten = JSON.parse(readFileSync(kept, 'utf8')) as { debateId: string; events: { type: string }[] };
    expect(unwritten.debateId).toBe(id);
    expect(unwritten.events.some((e) => e.type === 'call.finished')).toBe(true);

    expect((await runCli(['verify', id, '--db', db], dir)).code).toBe(0);
    const resumed = await conclave(['resume', id, '--db', db, '--host', sim.url, '--quiet'], null);
    expect(resumed.code, resumed.stderr).toBe(0);
    const after = JSON.parse((await runCli(['list', '--db', db, '--json'], dir)).stdout) as { id: string; status: string }[];
    expect(after).toEqual([expect.objectContaining({ id, status: 'completed' })]);
  }, 120_000);
});

/**
 * A record made by an older Conclave (every migration but the last two applied), holding rows
 * that make a copy of it larger than the limit the run is given.
 */
function olderRecord(file: string): { firstPending: string; fillerRows: number } {
  const folder = packagePath('migrations');
  const journal = JSON.parse(readFileSync(join(folder, 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string }[] };
  const applied = journal.entries.slice(0, -2);
  const older = join(dir, 'older-migrations');
  mkdirSync(join(older, 'meta'), { recursive: true });
  writeFileSync(join(older, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries: applied }));
  for (const e of applied) cpSync(join(folder, `${e.tag}.sql`), join(older, `${e.tag}.sql`));
  const fillerRows = 400;
  const sqlite = new Database(file);
  try {
    migrate(drizzle(sqlite), { migrationsFolder: older });
    sqlite.exec('create table filler (x blob)');
    const insert = sqlite.prepare('insert into filler (x) values (randomblob(1000))');
    sqlite.transaction(() => {
      for (let i = 0; i < fillerRows; i++) insert.run();
    })();
  } finally {
    sqlite.close();
  }
  expect(existsSync(file)).toBe(true);
  return { firstPending: journal.entries.at(-2)!.tag, fillerRows };
}

describe('the file of events not written', () => {
  it('stays beside the database whatever id the record holds', async () => {
    const { unwrittenFileOf } = await import('../../src/cli/run-debate-cli.js');
    expect(unwrittenFileOf('/data/c.db', '261127-054117-8b5230f0')).toBe('/data/c.db.unwritten-261127-054117-8b5230f0.json');
    for (const id of ['../victim/package', '/etc/passwd', 'a/../../b', '..', 'x\u202e.json']) {
      const file = unwrittenFileOf('/data/c.db', id);
      expect(file).toMatch(/^\/data\/c\.db\.unwritten-[0-9a-f]{16}\.json$/);
    }
  });
});
