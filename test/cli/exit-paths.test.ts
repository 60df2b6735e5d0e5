import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { scriptedResponder, simModels, testPreset } from '../helpers/panel.js';

// Every way a process ends closes the record first: SQLite then folds the write-ahead log back and
// deletes it, so a `-wal` left beside the file after the process is gone means it was not closed.
// A native crash at teardown (better-sqlite3 finalizing statements after Node's environment is gone)
// prints "Assertion failed" and a native stack on stderr.

const BIN = packagePath('bin', 'conclave.js');
const NATIVE_CRASH = /Assertion failed|node::|Segmentation fault|core dumped/;
let dir = '';
let sim: SimHandle;
const preset = testPreset(['a', 'b'], { protocol: { maxRounds: 3, convergenceThreshold: 0.99, callTimeoutSeconds: 60 } });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-exit-'));
  writeFileSync(join(dir, 'panel.json'), JSON.stringify(preset));
  // Slow tokens keep a debate running long enough to be stopped in the middle.
  sim = await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.1, 0.1, 0.1]).respond, tokenMs: 40 });
});

afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

function watch(child: ChildProcess): { stderr: () => string; exited: Promise<number | null> } {
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { stderr: () => stderr, exited };
}

describe('a record open when the process ends', () => {
  it.each([
    ['process.exit()', 'process.exit(3)', 3],
    ['an uncaught error', "setTimeout(() => { throw new Error('thrown on purpose'); }, 0)", 1],
    ['the end of the program, never closed', '', 0],
  ])('is closed before %s ends the process', async (_how, ending, code) => {
    const db = join(dir, `open-${code}.db`);
    const script = join(dir, `end-${code}.ts`);
    writeFileSync(
      script,
      `import { openStore } from ${JSON.stringify(packagePath('src', 'store', 'open.ts'))};
       const store = openStore(process.argv[2]!);
       store.listDebates();
       ${ending}`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script, db], { cwd: packagePath(), stdio: ['ignore', 'ignore', 'pipe'] });
    const { stderr, exited } = watch(child);
    expect(await exited).toBe(code);
    expect(stderr()).not.toMatch(NATIVE_CRASH);
    expect(existsSync(db)).toBe(true);
    expect(existsSync(`${db}-wal`)).toBe(false);
  });
});

describe('a run stopped with Ctrl-C twice', () => {
  it('quits at once with 130, closes the record and keeps what was written', async () => {
    const db = join(dir, 'twice.db');
    const child = spawn(process.execPath, [BIN, 'run', 'Q?', '--preset', join(dir, 'panel.json'), '--host', sim.url, '--db', db], {
      cwd: dir,
      env: { ...process.env, CI: '1' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const { stderr, exited } = watch(child);
    let sent = 0;
    child.stderr!.on('data', () => {
      if (sent === 0 && stderr().includes('Round 1 · critique')) {
        sent = 1;
        child.kill('SIGINT');
      } else if (sent === 1 && stderr().includes('Stopping:')) {
        sent = 2;
        child.kill('SIGINT');
      }
    });
    expect(await exited).toBe(130);
    expect(stderr()).not.toMatch(NATIVE_CRASH);
    expect(existsSync(`${db}-wal`)).toBe(false);
    const store = openStore(db);
    try {
      const [row] = store.listDebates();
      expect(row!.status).toBe('interrupted');
      expect(store.getDebate(row!.id).calls.filter((c) => c.stage === 'opening' && c.status === 'ok')).toHaveLength(2);
    } finally {
      store.close();
    }
  });
});

describe('conclave mcp shutting down', () => {
  async function startedServer(db: string): Promise<{ child: ChildProcess; stderr: () => string; exited: Promise<number | null> }> {
    const child = spawn(process.execPath, [BIN, 'mcp', '--db', db, '--host', sim.url, '--allow-dir', dir], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
    const watched = watch(child);
    let out = '';
    const replies = new Map<number, () => void>();
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      for (const line of out.split('\n').slice(0, -1)) {
        const msg = JSON.parse(line) as { id?: number };
        if (msg.id !== undefined) replies.get(msg.id)?.();
      }
      out = out.slice(out.lastIndexOf('\n') + 1);
    });
    const request = (id: number, method: string, params: unknown): Promise<void> => {
      child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
      return new Promise((resolve) => replies.set(id, resolve));
    };
    await request(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'exit-paths', version: '1' } });
    child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    await request(2, 'tools/call', { name: 'conclave_start', arguments: { question: 'Should we do A?', preset: join(dir, 'panel.json') } });
    return { child, ...watched };
  }

  it.each([
    ['SIGTERM', 'stopped by a signal', 130],
    ['SIGINT', 'stopped by a signal', 130],
    ['the client closing standard input', 'the client closed standard input', 0],
  ] as const)('on %s leaves the running debate interrupted and the record closed', async (how, said, code) => {
    const db = join(dir, `mcp-${how.replace(/\W/g, '')}.db`);
    const { child, stderr, exited } = await startedServer(db);
    if (how === 'the client closing standard input') child.stdin!.end();
    else child.kill(how);
    expect(await exited).toBe(code);
    expect(stderr()).toContain(`${said}: stopping 1 running debate`);
    expect(stderr()).not.toMatch(NATIVE_CRASH);
    expect(existsSync(`${db}-wal`)).toBe(false);
    const store = openStore(db);
    try {
      expect(store.listDebates()[0]!.status).toBe('interrupted');
    } finally {
      store.close();
    }
  });
});

describe('an unsupported Node line', () => {
  // The process reports another Node version before the command line starts, as Node 20 would.
  const as = (version: string) => `data:text/javascript,${encodeURIComponent(
    `Object.defineProperty(process, 'versions', { value: { ...process.versions, node: '${version}' } }); Object.defineProperty(process, 'version', { value: 'v${version}' });`,
  )}`;
  const listAs = (version: string, db: string) => spawnSync(process.execPath, ['--import', as(version), BIN, 'list', '--db', db], { encoding: 'utf8' });

  it('is refused before SQLite loads, naming the lines that work, with nothing created', () => {
    for (const version of ['20.19.5', '22.18.0', '23.11.1']) {
      const db = join(dir, `refused-${version}.db`);
      const out = listAs(version, db);
      expect(out.status, version).toBe(1);
      expect(out.stderr).toContain(`this is Node v${version}; Conclave runs on Node 22.19 or later (the LTS lines 22, 24 and 26)`);
      expect(out.stderr).not.toMatch(/\n\s+at /);
      expect(existsSync(db)).toBe(false);
    }
    // `--version` too says so, rather than answer as if the line were supported.
    const version = spawnSync(process.execPath, ['--import', as('20.19.5'), BIN, '--version'], { encoding: 'utf8' });
    expect([version.status, version.stdout]).toEqual([1, '']);
    expect(version.stderr).toContain('this is Node v20.19.5; Conclave runs on Node 22.19 or later');
  });

  it('answers --version from the source entry too, as `conclave version` does', async () => {
    const { main } = await import('../../src/cli/main.js');
    const { capture } = await import('../helpers/cli.js');
    const { ENGINE_VERSION } = await import('../../src/version.js');
    for (const flag of ['--version', '-V']) {
      const stdout = capture();
      const stderr = capture();
      expect(await main([flag], { stdout, stderr, env: {}, cwd: dir }), flag).toBe(0);
      expect(stdout.text).toBe(`${ENGINE_VERSION}\n`);
    }
  });

  it('lets 22.19 and later through', () => {
    for (const version of ['22.19.0', '24.0.0', '26.1.0']) {
      const out = spawnSync(process.execPath, ['--import', as(version), BIN, 'list', '--help'], { encoding: 'utf8' });
      expect(out.stderr, version).not.toContain('Conclave runs on Node');
      expect(out.stdout, version).toContain('--status');
      expect(out.status, version).toBe(0);
    }
  });
});
