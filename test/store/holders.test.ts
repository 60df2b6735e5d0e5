import { spawn } from 'node:child_process';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandLine, describeHolders } from '../../src/store/holders.js';

/** A node process that waits with the given arguments, until the test ends it. */
async function waiting(args: string[]): Promise<{ pid: number; stop: () => void }> {
  const child = spawn(process.execPath, ['-e', 'console.log("ready"); setInterval(() => {}, 1e3)', ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  return { pid: child.pid!, stop: () => void child.kill() };
}

describe('the name of a process that holds the database', () => {
  it('is its command line, the program by its file name, not the name of its main thread', async () => {
    const p = await waiting(['run', 'Q?']);
    try {
      const name = commandLine(String(p.pid));
      expect(name).toMatch(new RegExp(`^${basename(process.execPath)} -e `));
      expect(name).toContain(' run Q?');
      expect(name).not.toBe('MainThread');
      expect(describeHolders([{ pid: p.pid, command: name }])).toBe(`process ${p.pid} (${name})`);
    } finally {
      p.stop();
    }
  });

  it('shows no control characters from the arguments and clips a long command line', async () => {
    const p = await waiting([`line\nbreak\u001b[31m`, 'x'.repeat(200)]);
    try {
      const name = commandLine(String(p.pid))!;
      expect(name).toContain('line?break?[31m');
      expect(name).not.toMatch(/[\u0000-\u001f]/);
      expect(name.length).toBe(80);
      expect(name.endsWith('…')).toBe(true);
    } finally {
      p.stop();
    }
  });

  it('is null for a process that is gone', () => {
    expect(commandLine('999999999')).toBeNull();
  });
});
