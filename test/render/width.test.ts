import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { visibleWidth, wrapLine } from '../../src/render/wrap.js';
import { runCli } from '../helpers/cli.js';
import { packagePath } from '../../src/package-root.js';

const dir = mkdtempSync(join(tmpdir(), 'conclave-width-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('fitting lines to the terminal', () => {
  it('wraps at word boundaries under the line\'s indent, not counting colour codes', () => {
    const line = `  warning: ${'\u001b[33m'}the judge and synthesizer do not fit next to the panel${'\u001b[0m'} and are loaded after each round`;
    const lines = wrapLine(line, 40);
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines) expect(visibleWidth(l)).toBeLessThanOrEqual(40);
    expect(lines.slice(1).every((l) => l.startsWith('    '))).toBe(true);
    expect(lines.join(' ').replace(/\s+/g, ' ')).toContain('do not fit next to the panel');
  });

  it('counts a wide character as two columns and cuts a word longer than the line', () => {
    expect(visibleWidth('数据库')).toBe(6);
    for (const l of wrapLine(`  ${'x'.repeat(200)}`, 30)) expect(visibleWidth(l)).toBeLessThanOrEqual(30);
  });

  it.each(['tech-decision', 'tension-map', 'cluster-vote', 'code-review', 'tournament', 'decompose', 'parallel', 'thinking', 'oxford', 'delphi', 'devils-advocate', 'anti-conformity'])(
    'keeps every line of the %s demo, live view and card, within 80 columns',
    async (preset) => {
      // One short record path for every demo: the "Stored as … in PATH" line carries the path the user chose, which no wrapping can shorten.
      const r = await runCli(['demo', '--preset', preset, '--db', join(dir, 'd.db'), '--token-ms', '0', '--constraint', 'Keep the downtime of any migration step under thirty minutes at all times, whatever the plan'], dir, 80);
      expect(r.code).toBe(0);
      const wide = [...r.stderr.split('\n'), ...r.stdout.split('\n')].filter((l) => visibleWidth(l) > 80);
      expect(wide).toEqual([]);
    },
    60_000,
  );

  it('takes the width COLUMNS names when stdout is a pipe, which has none of its own', () => {
    const card = (columns: string | undefined): string[] => {
      const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
      if (columns === undefined) delete env.COLUMNS;
      else env.COLUMNS = columns;
      const r = spawnSync(process.execPath, [packagePath('bin', 'conclave.js'), 'demo', '--db', join(dir, 'pipe.db'), '--token-ms', '0', '--quiet'], { env, encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      return r.stdout.split('\n');
    };
    const widest = (lines: string[]): number => Math.max(...lines.map(visibleWidth));
    expect(widest(card('60'))).toBeLessThanOrEqual(60);
    // Unset, or not a width, the pipe gets 100 columns as before.
    expect(widest(card(undefined))).toBeGreaterThan(60);
    expect(widest(card('wide'))).toBeGreaterThan(60);
  }, 60_000);
});
