import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/errors.js';
import { packagePath } from '../../src/package-root.js';
import { defaultDbPath, openStore } from '../../src/store/index.js';
import { openStoreReadOnly } from '../../src/serve/store.js';
import { asBefore0016, asBefore0017, call, markNewestMigrationUnapplied, newDebate, openingTurn, tempDir } from './fixtures.js';

const require = createRequire(import.meta.url);
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

function openError(path: string, options: { readonly?: boolean } = {}): StoreError {
  try {
    openStore(path, options).close();
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

  it('creates the folder and a write-ahead-logged file with all tables, left in rollback mode once closed so readers read it in place', () => {
    const file = join(dir, 'nested', 'deeper', 'conclave.db');
    const store = openStore(file);
    expect(store.path).toBe(file);
    const open = new Database(file, { readonly: true });
    expect(open.pragma('journal_mode', { simple: true })).toBe('wal');
    open.close();
    store.close();
    expect(tableNames(file)).toEqual(
      expect.arrayContaining(['__drizzle_migrations', 'agents', 'calls', 'debates', 'rounds', 'syntheses', 'turns']),
    );
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('delete');
    raw.close();
    expect(existsSync(`${file}-wal`)).toBe(false);
    expect(existsSync(`${file}-shm`)).toBe(false);
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
    expect(err.message).toMatch(/not a Conclave database/);
    expect(err.hint).toMatch(/CONCLAVE_DB/);
    expect(err.exitCode).toBe(4);
    expect(readFileSync(file, 'utf8')).toMatch(/^these are my notes/);
  });

  it('says the path is a directory, for writing and for reading', () => {
    for (const readonly of [false, true]) {
      const err = openError(dir, { readonly });
      expect(err.code).toBe('STORE_IS_DIRECTORY');
      expect(err.message).toBe(`${dir} is a directory, not a database file.`);
      expect(err.hint).toContain(join(dir, 'conclave.db'));
    }
  });

  it('refuses a SQLite database that holds another program\'s tables instead of migrating into it', () => {
    const file = join(dir, 'other.db');
    const raw = new Database(file);
    raw.exec('create table invoices (id integer primary key, total real)');
    raw.close();
    for (const readonly of [false, true]) {
      const err = openError(file, { readonly });
      expect(err.code).toBe('STORE_NOT_CONCLAVE');
      expect(err.message).toBe(`${file} is not a Conclave database: it is a SQLite database with other tables (\`invoices\`).`);
    }
    expect(tableNames(file)).toEqual(['invoices']);
  });

  it('says a database written by a newer Conclave has a newer schema, and leaves it alone', () => {
    const file = join(dir, 'conclave.db');
    openStore(file).close();
    const raw = new Database(file);
    raw.prepare('insert into __drizzle_migrations (hash, created_at) values (?, ?)').run('future', Date.now() + 10 * 365 * 86_400_000);
    raw.close();
    for (const readonly of [false, true]) {
      const err = openError(file, { readonly });
      expect(err.code).toBe('STORE_TOO_NEW');
      expect(err.message).toMatch(/has a newer schema: it was written by a newer version of Conclave/);
      expect(err.hint).toMatch(/Upgrade Conclave/);
    }
  });

  it('names the process that holds the lock when another program keeps a write transaction open', async () => {
    const file = join(dir, 'conclave.db');
    const store = openStore(file, { busyTimeoutMs: 50 });
    const script = join(dir, 'hold-lock.cjs');
    writeFileSync(
      script,
      `const D = require(${JSON.stringify(require.resolve('better-sqlite3'))});
       const db = new D(process.argv[2]); db.exec('BEGIN IMMEDIATE');
       process.stdout.write('ready\\n'); setInterval(() => {}, 1000);`,
    );
    const holder = spawn(process.execPath, [script, file], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((resolvePromise, reject) => {
        holder.stdout.once('data', () => resolvePromise());
        holder.once('exit', (code) => reject(new Error(`holder exited with ${code}`)));
      });
      let caught: unknown;
      try {
        store.createDebate(newDebate());
      } catch (err) {
        caught = err;
      }
      store.close();
      expect(caught).toBeInstanceOf(StoreError);
      const err = caught as StoreError;
      expect(err.code).toBe('STORE_LOCKED');
      // Named by its command line, not by its main thread's name ("MainThread" on Node 24).
      expect(err.message).toContain(`the database is locked by process ${holder.pid} (${basename(process.execPath)} ${script}`);
      expect(err.hint).toContain(`process ${holder.pid}`);
    } finally {
      holder.kill();
    }
  });

  it('says a read-only database is read-only when a command would write to it', () => {
    const file = join(dir, 'conclave.db');
    const store = openStore(file);
    store.createDebate(newDebate());
    store.close();
    chmodSync(dir, 0o755);
    chmodSync(file, 0o444);
    const storeModule = pathToFileURL(fileURLToPath(new URL('../../src/store/index.ts', import.meta.url))).href;
    const code = `import { openStore } from ${JSON.stringify(storeModule)};
      try { openStore(process.argv[1]); console.log('opened'); } catch (err) { console.log(err.code + ': ' + err.message); }`;
    // Root may write any file: check as an unprivileged user, as the people who meet this are.
    const asUser = process.getuid?.() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [];
    const argv = [...asUser, process.execPath, '--import', 'tsx', '--input-type=module', '-e', code, file];
    const child = spawnSync(argv[0] as string, argv.slice(1), { cwd: packagePath(), encoding: 'utf8' });
    expect(child.stdout.trim()).toBe(`STORE_READONLY: ${file} is read-only: the file cannot be written by this user.`);
    // A writable file in a folder this user cannot write to: SQLite could not create its -wal file.
    chmodSync(file, 0o666);
    chmodSync(dir, 0o555);
    try {
      const again = spawnSync(argv[0] as string, argv.slice(1), { cwd: packagePath(), encoding: 'utf8' });
      expect(again.stdout.trim()).toBe(`STORE_READONLY: ${file} is read-only: its folder ${dir} cannot be written by this user.`);
    } finally {
      chmodSync(dir, 0o755);
    }
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

describe('openStore for reading only', () => {
  it('says there is no database, and creates neither the file nor its folders', () => {
    const file = join(dir, 'missing', 'dir', 'c.db');
    const err = openError(file, { readonly: true });
    expect(err.code).toBe('STORE_MISSING');
    expect(err.message).toBe(`No database at ${file}; run a debate first or pass --db.`);
    expect(existsSync(join(dir, 'missing'))).toBe(false);
  });

  it('reads a closed database without writing a byte or creating -wal and -shm files', () => {
    const file = join(dir, 'conclave.db');
    const writer = openStore(file);
    writer.createDebate(newDebate());
    writer.close();
    const before = readFileSync(file);
    const names = readdirSync(dir);
    const reader = openStore(file, { readonly: true });
    expect(reader.getDebate('d-0001').question).toBe(newDebate().question);
    reader.close();
    expect(readdirSync(dir)).toEqual(names);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('sees what a running debate has written so far', () => {
    const file = join(dir, 'conclave.db');
    const writer = openStore(file);
    writer.createDebate(newDebate());
    writer.recordCall(call('d-0001'));
    const reader = openStore(file, { readonly: true });
    expect(reader.getDebate('d-0001').calls).toHaveLength(1);
    reader.close();
    writer.close();
  });

  it('reads a database from an older Conclave by upgrading a copy in memory, leaving the file as it was', () => {
    const file = join(dir, 'old.db');
    const journal = JSON.parse(readFileSync(packagePath('migrations', 'meta', '_journal.json'), 'utf8')) as {
      entries: { tag: string; when: number }[];
    };
    const first = journal.entries[0];
    expect(journal.entries.length).toBeGreaterThan(1);
    const raw = new Database(file);
    for (const statement of readFileSync(packagePath('migrations', `${first?.tag}.sql`), 'utf8').split('--> statement-breakpoint')) {
      raw.exec(statement);
    }
    raw.exec('create table __drizzle_migrations (id integer primary key, hash text not null, created_at numeric)');
    raw.prepare('insert into __drizzle_migrations (hash, created_at) values (?, ?)').run('first', first?.when);
    raw.close();
    const before = readFileSync(file);
    const reader = openStore(file, { readonly: true });
    expect(reader.listDebates()).toEqual([]);
    reader.close();
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(tableNames(file)).not.toContain('votes');
  });

  it('reads a record that lacks only migrations a reader does not see on the file itself; the viewer opens it too, and refuses one that lacks more', () => {
    const file = join(dir, 'c.db');
    const writer = openStore(file);
    writer.createDebate(newDebate());
    writer.recordCall(call('d-0001'));
    writer.close();
    const raw = new Database(file);
    asBefore0016(raw);
    raw.close();
    const before = readFileSync(file);
    const reader = openStore(file, { readonly: true });
    expect(reader.read('is it a copy', (sqlite) => sqlite.memory)).toBe(false);
    expect(reader.getDebate('d-0001').calls).toHaveLength(1);
    // Without `seal_rows` (0017), the digests are read from the debate's row, as that Conclave wrote them.
    expect(reader.verifyDebate('d-0001')).toMatchObject({ state: 'unsealed', calls: 1 });
    reader.close();
    const viewer = openStoreReadOnly(file);
    expect(viewer.getDebate('d-0001').calls).toHaveLength(1);
    viewer.close();
    expect(readFileSync(file).equals(before)).toBe(true);

    // Marked without 0015 as well (it changes what a reader sees), the viewer refuses it.
    const older = new Database(file);
    markNewestMigrationUnapplied(older);
    older.close();
    expect(() => openStoreReadOnly(file)).toThrow(expect.objectContaining({ code: 'STORE_NEEDS_UPGRADE' }));
  });

  it('names the changed row of a debate that a writer recorded after upgrading the file under a reader already open on it', () => {
    const file = join(dir, 'c.db');
    const writer = openStore(file);
    writer.createDebate(newDebate());
    writer.close();
    const raw = new Database(file);
    asBefore0017(raw);
    // Its digests gone (as a resumed debate's are until its next write): the reader looks for `seal_rows`, and finds none yet.
    raw.prepare('update debates set seal_rows_json = null').run();
    raw.close();
    const reader = openStore(file, { readonly: true });
    expect(reader.read('is it a copy', (sqlite) => sqlite.memory)).toBe(false);
    expect(reader.verifyDebate('d-0001')).toMatchObject({ state: 'unsealed' });
    const upgraded = openStore(file);
    upgraded.createDebate(newDebate({ id: 'd-0002' }));
    upgraded.recordTurn('d-0002', openingTurn('ada', 'No'));
    upgraded.finishDebate('d-0002', { status: 'completed', exitReason: 'max_rounds', error: null, roundsCompleted: 0, finalConvergence: null, finishedAt: 1_700_000_009_000 });
    const edit = new Database(file);
    edit.prepare("update turns set position = 'Yes' where debate_id = 'd-0002'").run();
    edit.close();
    expect(reader.verifyDebate('d-0002')).toMatchObject({ state: 'broken', row: { table: 'turns', key: '0/ada' } });
    upgraded.close();
    reader.close();
  });

  it('says, before it starts, that it upgrades an older record holding debates, once, and where the copy from before is', () => {
    const file = join(dir, 'c.db');
    const told: string[] = [];
    const fresh = openStore(file, { onUpgrade: (m) => told.push(m) });
    fresh.createDebate(newDebate());
    fresh.close();
    expect(told).toEqual([]);
    const raw = new Database(file);
    asBefore0016(raw);
    raw.close();
    openStore(file, { onUpgrade: (m) => told.push(m) }).close();
    expect(told).toEqual([`Upgrading ${file} for this version of Conclave, once; a copy from before is kept at ${file}.before-0016_calls_plain_rowid.`]);
    expect(existsSync(`${file}.before-0016_calls_plain_rowid`)).toBe(true);
    openStore(file, { onUpgrade: (m) => told.push(m) }).close();
    expect(told).toHaveLength(1);
  });

  it('refuses an empty file as not a Conclave database', () => {
    const file = join(dir, 'empty.db');
    writeFileSync(file, '');
    const err = openError(file, { readonly: true });
    expect(err.code).toBe('STORE_NOT_CONCLAVE');
    expect(err.message).toBe(`${file} is not a Conclave database: it is an empty SQLite database.`);
  });

  it('says an empty file that another process has open for writing is being created, rather than not a Conclave database', async () => {
    const file = join(dir, 'new.db');
    // A `conclave run` into a new --db, between creating the file and its first commit: the file is empty and held for writing.
    const holder = spawn(process.execPath, ['-e', `const fs = require('node:fs'); fs.openSync(${JSON.stringify(file)}, 'w'); process.stdout.write('open\\n'); setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout!.on('data', (d: Buffer) => d.toString().includes('open') && resolve());
        holder.on('exit', (code) => reject(new Error(`the holder exited early (${code})`)));
      });
      const err = openError(file, { readonly: true });
      expect(err.code).toBe('STORE_BEING_CREATED');
      expect(err.message).toContain(`${file} holds no debate yet: it is empty, and open for writing by process ${holder.pid}`);
      expect(err.hint).toContain('again in a moment');
    } finally {
      holder.kill();
    }
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
