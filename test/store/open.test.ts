import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/errors.js';
import { packagePath } from '../../src/package-root.js';
import { defaultDbPath, openStore } from '../../src/store/index.js';
import { call, newDebate, openingTurn, tempDir } from './fixtures.js';

let dir: string;
let cleanup: () => void;

beforeEach(() => {
  ({ dir, cleanup } = tempDir());
});

afterEach(() => {
  cleanup();
});

function tableNames(file: string): string[] {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db.prepare("select name from sqlite_master where type = 'table' order by name").all() as { name: string }[];
    return rows.map((r) => r.name);
  } finally {
    db.close();
  }
}

function openError(path: string): StoreError {
  try {
    openStore(path).close();
  } catch (err) {
    expect(err).toBeInstanceOf(StoreError);
    return err as StoreError;
  }
  throw new Error('expected openStore to fail');
}

describe('openStore', () => {
  it('creates every table in a fresh in-memory database', () => {
    const store = openStore(':memory:');
    expect(store.path).toBe(':memory:');
    expect(store.listDebates()).toEqual([]);
    store.createDebate(newDebate());
    expect(store.getDebate('d-0001').status).toBe('running');
    store.close();
  });

  it('creates the folder and a write-ahead-logged file with all tables', () => {
    const file = join(dir, 'nested', 'deeper', 'conclave.db');
    const store = openStore(file);
    expect(store.path).toBe(file);
    store.close();
    expect(tableNames(file)).toEqual(
      expect.arrayContaining(['__drizzle_migrations', 'agents', 'calls', 'debates', 'rounds', 'syntheses', 'turns']),
    );
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
  });

  it('keeps rows and applies no migration twice when an existing file is reopened', () => {
    const file = join(dir, 'conclave.db');
    const first = openStore(file);
    first.createDebate(newDebate());
    first.recordCall(call('d-0001'));
    first.recordTurn('d-0001', openingTurn('ada', 'No'));
    first.close();

    const second = openStore(file);
    const stored = second.getDebate('d-0001');
    expect(stored.calls).toHaveLength(1);
    expect(stored.turns).toHaveLength(1);
    expect(stored.agents).toHaveLength(5);
    second.close();

    const journal = JSON.parse(readFileSync(packagePath('migrations', 'meta', '_journal.json'), 'utf8')) as {
      entries: unknown[];
    };
    const raw = new Database(file, { readonly: true });
    const applied = raw.prepare('select count(*) as n from __drizzle_migrations').get() as { n: number };
    raw.close();
    expect(applied.n).toBe(journal.entries.length);
  });

  it('gives a StoreError naming the file when the file is not a SQLite database', () => {
    const file = join(dir, 'notes.db');
    writeFileSync(file, 'these are my notes, not a database\n'.repeat(200));
    const err = openError(file);
    expect(err.code).toBe('STORE_CORRUPT');
    expect(err.message).toContain(file);
    expect(err.hint).toMatch(/CONCLAVE_DB/);
    expect(err.exitCode).toBe(4);
    expect(readFileSync(file, 'utf8')).toMatch(/^these are my notes/);
  });

  it('gives a StoreError naming the path when it is a folder', () => {
    const err = openError(dir);
    expect(err.message).toContain(dir);
    expect(err.hint).toBeDefined();
  });

  it('explains a write blocked by another process holding the lock', () => {
    const file = join(dir, 'conclave.db');
    const store = openStore(file, { busyTimeoutMs: 50 });
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    try {
      let caught: unknown;
      try {
        store.createDebate(newDebate());
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(StoreError);
      const err = caught as StoreError;
      expect(err.code).toBe('STORE_LOCKED');
      expect(err.message).toContain(file);
      expect(err.hint).toMatch(/another process/i);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    store.createDebate(newDebate());
    expect(store.listDebates()).toHaveLength(1);
    store.close();
  });
});

describe('debates left running', () => {
  it('marks a debate left running by a process that died as interrupted on the next open', () => {
    const file = join(dir, 'conclave.db');
    const script = join(dir, 'crash.ts');
    const storeModule = pathToFileURL(fileURLToPath(new URL('../../src/store/index.ts', import.meta.url))).href;
    writeFileSync(
      script,
      [
        `import { openStore } from ${JSON.stringify(storeModule)};`,
        `import { newDebate } from ${JSON.stringify(pathToFileURL(fileURLToPath(new URL('./fixtures.ts', import.meta.url))).href)};`,
        'const store = openStore(process.argv[2]);',
        "store.createDebate(newDebate({ id: 'crashed' }));",
        'console.log(process.pid);',
        // Exit without finishing the debate or closing the store, as a crash would.
        'process.exit(0);',
      ].join('\n'),
    );
    const child = spawnSync(process.execPath, ['--import', 'tsx', script, file], {
      cwd: packagePath(),
      encoding: 'utf8',
    });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
    const deadPid = Number(child.stdout.trim());
    expect(deadPid).toBeGreaterThan(0);

    const before = Date.now();
    const store = openStore(file);
    const stored = store.getDebate('crashed');
    store.close();
    expect(stored.pid).toBe(deadPid);
    expect(stored.status).toBe('interrupted');
    expect(stored.exitReason).toBe('interrupted');
    expect(stored.finishedAt).toBeGreaterThanOrEqual(before);
  });

  it('leaves a debate running while its process is alive', () => {
    const file = join(dir, 'conclave.db');
    const runner = openStore(file);
    runner.createDebate(newDebate());
    const viewer = openStore(file);
    expect(viewer.getDebate('d-0001').status).toBe('running');
    viewer.close();
    runner.close();
  });

  it('leaves a debate running on another machine alone', () => {
    const file = join(dir, 'conclave.db');
    const store = openStore(file);
    store.createDebate(newDebate());
    store.close();
    const raw = new Database(file);
    raw.prepare("update debates set hostname = 'another-workstation', pid = 999999999").run();
    raw.close();
    const reopened = openStore(file);
    expect(reopened.getDebate('d-0001').status).toBe('running');
    reopened.close();
  });
});

describe('defaultDbPath', () => {
  it('prefers $CONCLAVE_DB, then $XDG_DATA_HOME, then ~/.local/share', () => {
    expect(defaultDbPath({ CONCLAVE_DB: '/x/my.db', XDG_DATA_HOME: '/data' })).toBe('/x/my.db');
    expect(defaultDbPath({ XDG_DATA_HOME: '/data' })).toBe('/data/conclave/conclave.db');
    expect(defaultDbPath({})).toBe(join(homedir(), '.local', 'share', 'conclave', 'conclave.db'));
  });

  it('ignores a relative $XDG_DATA_HOME, as the XDG spec asks', () => {
    expect(defaultDbPath({ XDG_DATA_HOME: 'relative/data' })).toBe(join(homedir(), '.local', 'share', 'conclave', 'conclave.db'));
  });
});

describe('packagePath', () => {
  it('finds the shipped migrations from the package root, whatever the working directory', () => {
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      expect(JSON.parse(readFileSync(packagePath('package.json'), 'utf8'))).toMatchObject({ name: 'conclave' });
      expect(existsSync(packagePath('migrations', 'meta', '_journal.json'))).toBe(true);
    } finally {
      process.chdir(cwd);
    }
  });
});
