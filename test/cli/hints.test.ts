import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { runCli } from '../helpers/cli.js';

/** Every .ts file under a folder, recursively. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

describe('hints', () => {
  it('name the everyday command the README sets up with `npm link`: `conclave …`, never `npx conclave …`', () => {
    const bare: string[] = [];
    for (const file of sources(packagePath('src'))) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          // Comments may name a command; text a user reads may not.
          if (/^\s*(\/\/|\*|\/\*)/.test(line)) return;
          if (/npx conclave/.test(line)) bare.push(`${file.slice(packagePath('src').length + 1)}:${i + 1}`);
        });
    }
    expect(bare).toEqual([]);
  });
});

describe('did you mean', () => {
  it('suggests the nearest command, flag or preset name, and points at the command\'s own help', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-suggest-'));
    const typo = await runCli(['rnu'], dir);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('Unknown command `rnu`. Did you mean `conclave run`?');
    const flag = await runCli(['run', 'Q?', '--preset', 'tech-decision', '--max-round', '2'], dir);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('Unknown option `--max-round`. Did you mean `--max-rounds`?');
    expect(flag.stderr).not.toContain('maxRound');
    expect(flag.stderr).toContain('Run `conclave run --help` for the options.');
    const preset = await runCli(['run', 'Q?', '--preset', 'tech-decison', '--db', join(dir, 'r.db')], dir);
    expect(preset.code).not.toBe(0);
    expect(preset.stderr).toContain('Did you mean `tech-decision`?');
    const far = await runCli(['frobnicate'], dir);
    expect(far.stderr).toContain('Unknown command `frobnicate`.');
    expect(far.stderr).not.toContain('Did you mean');
  });

  it('names the choices of a flag given a value outside them, and the nearest one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-choices-'));
    const protocol = await runCli(['run', 'Q?', '--preset', 'tech-decision', '--protocol', 'debat', '--db', join(dir, 'r.db')], dir);
    expect(protocol.code).toBe(2);
    expect(protocol.stderr).toContain('--protocol does not take `debat`: it takes `debate`, `parallel`,');
    expect(protocol.stderr).toContain('Did you mean `--protocol debate`?');
    expect(protocol.stderr).toContain('Run `conclave run --help` for the options.');
    const format = await runCli(['export', 'x', '--format', 'markdown', '--db', join(dir, 'r.db')], dir);
    expect(format.code).toBe(2);
    expect(format.stderr).toContain('--format does not take `markdown`: it takes `md`, `json`, `bundle`.');
    expect(format.stderr).not.toContain('Did you mean');
  });

  it('reads a --threshold given as a percentage as a slip, and names the share meant', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-threshold-'));
    const r = await runCli(['run', 'Q?', '--preset', 'tech-decision', '--threshold', '85', '--dry-run', '--host', 'http://127.0.0.1:9'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--threshold must be a number from 0 to 1; got 85.');
    expect(r.stderr).toContain('It is a share, not a percentage: --threshold 0.85.');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('prints a shell completion script', async () => {
    // yargs prints the script with console.log.
    const printed: string[] = [];
    const spy = vi.spyOn(console, 'log').mockImplementation((text: string) => void printed.push(text));
    try {
      const r = await runCli(['completion'], mkdtempSync(join(tmpdir(), 'conclave-completion-')));
      expect(r.code).toBe(0);
    } finally {
      spy.mockRestore();
    }
    expect(printed.join('\n')).toContain('conclave --get-yargs-completions');
  });
});
