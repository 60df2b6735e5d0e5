import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { packagePath } from '../../src/package-root.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { capture } from '../helpers/cli.js';

let dir = '';
let db = '';
let id = '';
let sim: SimHandle;

/**
 * Runs the CLI from source in a shell pipeline and returns the CLI's own exit status and stderr.
 * Asynchronous, so the simulator in this process can answer it.
 */
async function piped(args: string[], reader: string): Promise<{ status: number; stderr: string }> {
  const quoted = args.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  const script = `node --import tsx src/cli/entry.ts ${quoted} 2>"$ERR" | ${reader} >/dev/null; echo "\${PIPESTATUS[0]}"`;
  const err = join(dir, `stderr-${Math.random().toString(36).slice(2)}`);
  const child = spawn('bash', ['-c', script], { cwd: packagePath(), env: { ...process.env, ERR: err }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  await new Promise((resolvePromise) => child.once('close', resolvePromise));
  return { status: Number(out.trim()), stderr: readFileSync(err, 'utf8') };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-pipe-'));
  db = join(dir, 'c.db');
  const stdout = capture();
  const code = await main(['demo', '--db', db, '--json', '--quiet', '--token-ms', '0'], { stdout, stderr: capture(), env: {}, cwd: dir });
  expect(code).toBe(0);
  id = (JSON.parse(stdout.text) as { id: string }).id;
  sim = await startSimulator({ models: Array.from({ length: 40 }, (_, i) => ({ name: `model-${i}:1b` })) });
});

afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a closed stdout', () => {
  it.each([
    ['show --json | head -1', ['show', '<id>', '--json'], 'head -1'],
    ['export --format md | head', ['export', '<id>', '--format', 'md'], 'head'],
    ['export --format json | true', ['export', '<id>', '--format', 'json'], 'true'],
    ['list | true', ['list'], 'true'],
  ])('ends %s quietly with status 0', async (_name, args, reader) => {
    const r = await piped([...args.map((a) => (a === '<id>' ? id : a)), '--db', db], reader);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('ends hosts | head -2 quietly with status 0', async () => {
    const r = await piped(['hosts', '--host', sim.url], 'head -2');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});
