import { describe, expect, it } from 'vitest';
import { fastArgs } from '../../src/cli/fast-path.js';
import { parsedCommandLine } from '../../src/cli/main.js';
import { capture } from '../helpers/cli.js';

const io = () => ({ stdout: capture(), stderr: capture(), env: {}, cwd: process.cwd(), stdin: process.stdin });

/** Plain lines the fast path takes, and lines it must leave to yargs. */
const plain = [
  ['list'],
  ['list', '--json', '--limit', '5'],
  ['list', '--status', 'interrupted', '--db', 'x.db'],
  ['list', '--limit=7', '--debug'],
  ['show', 'abc'],
  ['show', 'abc', '--json', '--db', 'my record.db'],
  ['export', 'abc', '-f', 'bundle', '-o', 'out.json'],
  ['export', 'abc', '--format=json'],
  ['verify'],
  ['verify', '--all', '--json'],
  ['verify', 'abc', '--public-key', 'k.pub'],
  ['verify', '--bundle', 'b.json', '--public-key=k.pub'],
];
const notPlain = [
  ['list', '--help'],
  ['list', '--limti', '5'],
  ['list', '--limit', 'many'],
  ['list', '--status', 'lost'],
  ['list', 'extra'],
  ['show'],
  ['show', 'abc', '--json', '--json'],
  ['export', 'abc', '--format'],
  ['export', 'abc', '--format', 'pdf'],
  ['run', 'Q?'],
  ['verify', 'abc', '--', 'x'],
];

describe('the fast path of the everyday commands', () => {
  it.each(plain)('gives %s the same arguments yargs gives it', async (...line) => {
    const fast = fastArgs(line, io());
    const yargs = await parsedCommandLine(line, io());
    expect(fast).not.toBeNull();
    expect(yargs).not.toBeNull();
    // Every key yargs hands the handler, the fast path hands it the same (yargs adds a few of its own bookkeeping).
    const keys = Object.keys(fast!.args).filter((k) => k !== '$0');
    for (const key of keys) expect([key, fast!.args[key]]).toEqual([key, yargs![key]]);
    for (const key of Object.keys(yargs!).filter((k) => k !== '$0' && yargs![k] !== undefined)) expect(keys).toContain(key);
  });

  it.each(notPlain)('leaves %s to yargs', (...line) => {
    expect(fastArgs(line, io())).toBeNull();
  });
});
