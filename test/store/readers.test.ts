import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { openRecord } from '../../src/store/open-read.js';
import { openStore } from '../../src/store/index.js';
import { packagePath } from '../../src/package-root.js';
import { runCli } from '../helpers/cli.js';
import { call, newDebate } from './fixtures.js';

// Readers open the record itself, read-only, whatever its size: nothing is loaded into memory
// and nothing is created beside it; what is not a regular file is refused at once.

let dir = '';
let file = '';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-readers-'));
  file = join(dir, 'record.db');
  const store = openStore(file);
  store.createDebate(newDebate({ id: 'd-1' }));
  store.recordCall(call('d-1'));
  store.finishDebate('d-1', { status: 'completed', exitReason: 'converged', error: null, roundsCompleted: 0, finalConvergence: 1, finishedAt: 5 });
  store.close();
});

describe('readers of a closed record', () => {
  it('read the file in place, not a copy in memory, and create no -wal or -shm beside it', async () => {
    const reader = await openRecord(file);
    try {
      expect((reader as unknown as { sqlite: { memory: boolean; readonly: boolean } }).sqlite.memory).toBe(false);
      expect((reader as unknown as { sqlite: { readonly: boolean } }).sqlite.readonly).toBe(true);
      expect(reader.verifyDebate('d-1').state).toBe('sealed');
    } finally {
      reader.close();
    }
    for (const args of [['list'], ['show', 'd-1'], ['verify', '--all'], ['export', 'd-1', '--format', 'json']]) {
      const r = await runCli([...args, '--db', file], dir);
      expect(r.code, args.join(' ')).toBe(0);
    }
    expect(readdirSync(dir).filter((f) => f.startsWith('record.db'))).toEqual(['record.db']);
  });
});

describe('a record holding a debate whose process died', () => {
  let crashDir = '';
  let crashFile = '';
  const digest = (): string => createHash('sha256').update(readFileSync(crashFile)).digest('hex');

  beforeAll(() => {
    crashDir = mkdtempSync(join(tmpdir(), 'conclave-readers-crash-'));
    crashFile = join(crashDir, 'record.db');
    const store = openStore(crashFile);
    store.createDebate(newDebate({ id: 'done' }));
    store.finishDebate('done', { status: 'completed', exitReason: 'converged', error: null, roundsCompleted: 0, finalConvergence: 1, finishedAt: 5 });
    store.close();
    // A run that records a call, then dies without ending its debate or closing the file.
    const script = join(crashDir, 'crash.ts');
    const module = (path: string): string => JSON.stringify(pathToFileURL(fileURLToPath(new URL(path, import.meta.url))).href);
    writeFileSync(
      script,
      [
        `import { openStore } from ${module('../../src/store/index.ts')};`,
        `import { call, newDebate } from ${module('./fixtures.ts')};`,
        'const store = openStore(process.argv[2]);',
        "store.createDebate(newDebate({ id: 'crashed' }));",
        "store.recordCall(call('crashed'));",
        'process.exit(0);',
      ].join('\n'),
    );
    const child = spawnSync(process.execPath, ['--import', 'tsx', script, crashFile], { cwd: packagePath(), encoding: 'utf8' });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
  });

  it('is read in place, not copied into memory, and shows that debate as interrupted without writing the file', async () => {
    const before = digest();
    const files = readdirSync(crashDir).sort();
    const reader = await openRecord(crashFile);
    try {
      expect(reader.getDebate('crashed').status).toBe('interrupted');
      expect(reader.getDebate('crashed').exitReason).toBe('interrupted');
      expect(reader.getDebate('done').status).toBe('completed');
      expect(reader.listDebates({ status: 'interrupted' }).map((d) => d.id)).toEqual(['crashed']);
      const verdict = reader.verifyDebate('crashed');
      expect(verdict.state).toBe('unsealed');
      expect(verdict.state === 'unsealed' && verdict.reason).toContain('its process died');
      expect(digest()).toBe(before);
      expect(readdirSync(crashDir).sort()).toEqual(files);

      // The file itself, not a snapshot: what another process records later shows up.
      const writer = openStore(crashFile);
      writer.createDebate(newDebate({ id: 'later' }));
      writer.close();
      expect(reader.getDebate('later').status).toBe('running');
      expect(reader.listDebates().map((d) => d.id).sort()).toEqual(['crashed', 'done', 'later']);
    } finally {
      reader.close();
    }
  });

  it('is listed and verified by the CLI with that debate interrupted', async () => {
    const list = await runCli(['list', '--db', crashFile], crashDir);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/crashed\s.*interrupted/);
    const verify = await runCli(['verify', 'crashed', '--db', crashFile], crashDir);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toContain('unsealed');
  });
});

describe('--db that is not a regular file', () => {
  let fifo = '';
  beforeAll(() => {
    fifo = join(dir, 'pipe');
    execFileSync('mkfifo', [fifo]);
    mkdirSync(join(dir, 'folder'));
  });

  for (const command of [['list'], ['show', 'x'], ['verify', '--all'], ['export', 'x'], ['run', 'Q?', '--preset', 'tech-decision', '--host', 'http://127.0.0.1:9']]) {
    it(`is refused by ${command[0]} at once, naming what it is`, async () => {
      const zero = await runCli([...command, '--db', '/dev/zero'], dir);
      expect(zero.code).toBe(4);
      expect(zero.stderr).toContain('/dev/zero is a device, not a database file');
      const pipe = await runCli([...command, '--db', fifo], dir);
      expect(pipe.code).toBe(4);
      expect(pipe.stderr).toContain(`${fifo} is a named pipe, not a database file`);
      const folder = await runCli([...command, '--db', join(dir, 'folder')], dir);
      expect(folder.code).toBe(4);
      expect(folder.stderr).toContain('is a directory, not a database file');
      expect(existsSync(join(dir, 'folder', 'conclave.db'))).toBe(false);
    });
  }
});
