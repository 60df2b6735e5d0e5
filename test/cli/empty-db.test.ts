import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fastPath } from '../../src/cli/fast-path.js';
import type { CliIO } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { capture } from '../helpers/cli.js';
import { scriptedResponder, simModels, testPreset } from '../helpers/panel.js';

// `--db "$DB"` in a script whose DB is unset: an empty path is no path, never the user's main record.

let dir = '';
let sim: SimHandle;
let presetFile = '';
const preset = testPreset(['a', 'b'], { protocol: { maxRounds: 0, convergenceThreshold: 0.99, callTimeoutSeconds: 30 } });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-empty-db-'));
  presetFile = join(dir, 'panel.json');
  writeFileSync(presetFile, JSON.stringify(preset));
  sim = await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.3]).respond });
});

afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The default record of this test's environment: where XDG_DATA_HOME says, as ~/.local/share would be. */
const dataHome = () => join(dir, 'data');
const defaultDb = () => join(dataHome(), 'conclave', 'conclave.db');

function io(env: NodeJS.ProcessEnv = { XDG_DATA_HOME: dataHome() }) {
  const stdout = capture();
  const stderr = capture();
  return { io: { stdout, stderr, env, cwd: dir } satisfies CliIO, stdout, stderr };
}

async function cli(args: string[], env?: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  const { io: cliIo, stderr } = io(env);
  const code = await main(args, cliIo);
  return { code, stderr: stderr.text };
}

function expectRefused(result: { code: number; stderr: string }): void {
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr).toContain(`conclave: --db is empty: give a file path, or leave --db out to use ${defaultDb()}.`);
  expect(result.stderr).toContain('An unset shell variable');
  // Nothing was created: no default record, no file in the working folder.
  expect(existsSync(defaultDb())).toBe(false);
  expect(readdirSync(dir).sort()).toEqual(['panel.json']);
}

describe('an empty --db', () => {
  it('is refused by `run` (exit 2) before anything is written, and the default record is not created', async () => {
    expectRefused(await cli(['run', 'Should we do A?', '--preset', presetFile, '--host', sim.url, '--db', '', '--quiet']));
  });

  it.each([
    [['resume', 'some-id', '--host', 'http://127.0.0.1:1']],
    [['synthesize', 'some-id']],
    [['list']],
    [['show', 'some-id']],
    [['export', 'some-id']],
    [['verify', 'some-id']],
    [['replay', 'some-id']],
    [['rescore', 'some-id']],
    [['bench', 'list']],
    [['serve', '--port', '0']],
    [['demo', '--quiet']],
  ])('is refused by %j (exit 2), naming the default it would have used', async (line) => {
    expectRefused(await cli([...line, '--db', '']));
  });

  it('is refused as `--db=` and as a --db with no value', async () => {
    expectRefused(await cli(['list', '--db=']));
    expectRefused(await cli(['show', 'some-id', '--db']));
  });

  it('is refused on the fast path of the everyday commands too', async () => {
    for (const line of [['list', '--db', ''], ['show', 'some-id', '--db='], ['verify', 'some-id', '--db', '']]) {
      const { io: cliIo, stderr } = io();
      const code = await fastPath(line, cliIo);
      expectRefused({ code: code ?? -1, stderr: stderr.text });
    }
  });
});

describe('an empty CONCLAVE_DB', () => {
  // Chosen: an empty CONCLAVE_DB reads as unset, as an empty XDG_DATA_HOME does (and CONCLAVE_SIGNING_KEY,
  // CONCLAVE_LOCK_WAIT_SECONDS): the default record, not a refusal.
  it('is read as unset: the default record is used', async () => {
    const result = await cli(['list'], { CONCLAVE_DB: '', XDG_DATA_HOME: dataHome() });
    expect(result.code, result.stderr).toBe(4);
    expect(result.stderr).toContain(`No database at ${defaultDb()}`);
  });
});
