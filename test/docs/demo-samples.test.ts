import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { runCli } from '../helpers/cli.js';

/**
 * The demo output quoted in README.md and docs/tensions.md, held against what the demo prints
 * now. A sample may leave lines out (at a line of its own reading "…", or at a blank line) and
 * wrap lines as it likes: each run of lines between the gaps must appear in the output, in order,
 * spaces aside.
 */

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-demo-samples-'));
});

const flat = (text: string) => text.replace(/\s+/g, ' ').trim();

function textBlock(file: string, opening: string): string {
  const body = [...readFileSync(packagePath(file), 'utf8').matchAll(/^```text\n([\s\S]*?)^```/gm)].map((m) => m[1]!).find((b) => b.startsWith(opening));
  if (body === undefined) throw new Error(`${file} has no text block opening with ${opening}`);
  return body;
}

function expectQuoted(sample: string, output: string, where: string): void {
  const printed = flat(output);
  let from = 0;
  for (const part of sample.split(/^\s*…?\s*$/m).map(flat).filter(Boolean)) {
    const at = printed.indexOf(part, from);
    expect(at, `${where}: not printed (after what came before):\n${part}`).toBeGreaterThanOrEqual(0);
    from = at + part.length;
  }
}

describe('demo output quoted in the docs', () => {
  it("quotes `conclave demo`'s card in README as it prints now", async () => {
    const r = await runCli(['demo', '--db', join(dir, 'plain.db'), '--token-ms', '0'], dir);
    expect(r.code).toBe(0);
    expectQuoted(textBlock('README.md', 'RECOMMENDATION\n  Stay on SQLite for now behind'), r.stdout, 'README.md');
  });

  it('quotes the tension-map demo as it prints now: the card in README and docs/tensions.md, the live view in docs/tensions.md', async () => {
    const r = await runCli(['demo', '--preset', 'tension-map', '--db', join(dir, 'map.db'), '--token-ms', '0'], dir);
    expect(r.code).toBe(0);
    expectQuoted(textBlock('README.md', 'TENSION MAP (4 tensions'), r.stdout, 'README.md');
    expectQuoted(textBlock('docs/tensions.md', 'TENSION MAP (4 tensions'), r.stdout, 'docs/tensions.md, the card');
    expectQuoted(textBlock('docs/tensions.md', 'Tension map · 3 agents'), r.stderr, 'docs/tensions.md, the live view');
  });

  it("prints the Delphi demo's figures as README describes them, with the unit it names", async () => {
    const readme = readFileSync(packagePath('README.md'), 'utf8');
    const line = readme.split('\n').find((l) => l.startsWith('- `conclave demo --preset delphi`'))!;
    const described = /\(10, 50, 80 (writes per second) at first\) narrow from quartiles (30–65) to (47\.5–52\.5) around a median of (50)/.exec(line);
    expect(described, line).not.toBeNull();
    const [, unit, first, last, median] = described!;
    const r = await runCli(['demo', '--preset', 'delphi', '--db', join(dir, 'delphi.db'), '--token-ms', '0', '--quiet'], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`round 0: median ${median} (quartiles ${first}`);
    expect(r.stdout).toContain(`result: median ${median} (quartiles ${last}`);
    const recommendation = flat(r.stdout.slice(r.stdout.indexOf('RECOMMENDATION'), r.stdout.indexOf('TRIGGERS TO REVISIT')));
    expect(recommendation).toContain(`about ${median} per second`);
    expect(recommendation).toContain(unit);
  });
});
