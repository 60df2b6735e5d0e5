import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { ON_A_PTY } from '../helpers/pty.js';

let dir = '';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-tty-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function demoOnTerminal(env: Record<string, string>): Promise<{ code: number | null; shown: string }> {
  const base = { ...process.env };
  for (const name of ['CI', 'NO_COLOR', 'FORCE_COLOR', 'TERM']) delete base[name];
  const db = join(dir, `${Object.keys(env).join('-') || 'plain'}.db`);
  const child = spawn('python3', ['-c', ON_A_PTY, process.execPath, '--import', 'tsx', 'src/cli/entry.ts', 'demo', '--db', db, '--token-ms', '2'], {
    cwd: packagePath(),
    env: { ...base, TERM: 'xterm-256color', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let shown = '';
  child.stdout.on('data', (chunk: Buffer) => {
    shown += chunk.toString();
  });
  const code = await new Promise<number | null>((resolvePromise) => child.once('close', resolvePromise));
  return { code, shown };
}

describe('on a terminal', () => {
  it('draws in colour and redraws the live block', async () => {
    const r = await demoOnTerminal({});
    expect(r.code).toBe(0);
    expect(r.shown).toMatch(/\u001b\[1m/);
    expect(r.shown).toMatch(/\u001b\[\d+F\u001b\[J/);
    expect(r.shown).toContain('RECOMMENDATION');
  }, 60_000);

  it.each<Record<string, string>>([{ NO_COLOR: '1' }, { CI: 'true' }])('prints plain lines, with no colour and no redraw, under %o', async (env) => {
    const r = await demoOnTerminal(env);
    expect(r.code).toBe(0);
    expect(r.shown).not.toContain('\u001b');
    expect(r.shown).toContain('Round 0 · independent answers');
    expect(r.shown).toContain('RECOMMENDATION');
  }, 60_000);
});
