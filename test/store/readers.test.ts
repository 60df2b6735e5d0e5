import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { openRecord } from '../../src/store/open-read.js';
import { openStore } from '../../src/store/index.js';
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
