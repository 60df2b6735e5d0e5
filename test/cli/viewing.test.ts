import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIO } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { capture } from '../helpers/cli.js';
import { scriptedResponder, simModels, testPreset } from '../helpers/panel.js';

let dir = '';
let sim: SimHandle;
let presetFile = '';

async function cli(args: string[], cwd = dir) {
  const stdout = capture();
  const stderr = capture();
  const io: CliIO = { stdout, stderr, env: {}, cwd };
  const code = await main(args, io);
  return { code, stdout: stdout.text, stderr: stderr.text };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-viewing-'));
  const preset = testPreset(['a', 'b', 'c']);
  presetFile = join(dir, 'panel.json');
  writeFileSync(presetFile, JSON.stringify(preset));
  sim = await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.9]).respond });
});

afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('viewing commands', () => {
  const viewing: [string, string[]][] = [
    ['list', ['list']],
    ['show', ['show', 'X']],
    ['replay', ['replay', 'X']],
    ['export', ['export', 'X', '--format', 'md']],
    ['export bundle', ['export', 'X', '--format', 'bundle']],
    ['verify', ['verify', 'X']],
    ['verify --all', ['verify', '--all']],
    ['bench report', ['bench', 'report', 'X']],
    ['bench list', ['bench', 'list']],
  ];

  it.each(viewing)('%s with a --db that does not exist says so and creates no file or folder', async (_name, args) => {
    const cwd = mkdtempSync(join(dir, 'empty-'));
    const r = await cli([...args, '--db', 'some/missing/dir/c.db'], cwd);
    expect(r.code).toBe(4);
    expect(r.stderr).toBe(
      `conclave: No database at ${join(cwd, 'some/missing/dir/c.db')}; run a debate first or pass --db.\n` +
        '  Run `conclave run "question" --preset NAME` to create it, or pass --db (or set CONCLAVE_DB) with the path of an existing database.\n',
    );
    expect(r.stdout).toBe('');
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('reads a record written by run and leaves the folder as it was', async () => {
    const db = join(dir, 'record', 'c.db');
    const ran = await cli(['run', 'Q?', '--preset', presetFile, '--host', sim.url, '--db', db, '--json']);
    expect(ran.code).toBe(0);
    const id = (JSON.parse(ran.stdout) as { id: string }).id;
    const before = readdirSync(join(dir, 'record')).sort();
    expect(before).toEqual(['c.db']);
    for (const args of [['list'], ['show', id], ['replay', id], ['export', id, '--format', 'md']]) {
      const r = await cli([...args, '--db', db]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(args[0] === 'list' ? id : 'Q?');
    }
    expect(readdirSync(join(dir, 'record')).sort()).toEqual(before);
  });

  it('names a directory given as --db', async () => {
    const r = await cli(['list', '--db', dir]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`conclave: ${dir} is a directory, not a database file.`);
  });
});

describe('list --status', () => {
  it('says no debate has that status, rather than that there are none yet', async () => {
    const db = join(dir, 'record', 'c.db');
    const r = await cli(['list', '--status', 'failed', '--db', db]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`No debate matched --status failed in ${db}. \`conclave list\` shows them all.\n`);
  });
});
