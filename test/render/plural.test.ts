import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { plural } from '../../src/plural.js';
import { packagePath } from '../../src/package-root.js';
import { modelConfidenceText } from '../../src/render/confidence.js';

const NOUNS = 'agents|calls|rounds|models|turns|debates|items|tensions|clashes|findings|hosts|votes|positions|answers|runs|questions|stances|attempts|ballots|pairs|families|clusters|resumptions|files|warnings';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

describe('counts in sentences', () => {
  it('puts the noun in the singular for one and the plural otherwise', () => {
    expect([plural(0, 'agent'), plural(1, 'agent'), plural(2, 'agent'), plural(1, 'clash', 'clashes'), plural(3, 'clash', 'clashes')]).toEqual(['0 agents', '1 agent', '2 agents', '1 clash', '3 clashes']);
    expect(modelConfidenceText('high', 1)).toContain('1 agent converged');
  });

  it('writes no count straight before a plural noun in the source, where one would read "1 agents"', () => {
    // `${n} agents` is wrong for n = 1; `of ${n} agents`, `${a}/${b} agents` and `round-${n} answers` read right.
    const pattern = new RegExp(`(^|[^/\\-]|[^f] )\\$\\{[^{}]*\\} (${NOUNS})\\b`, 'g');
    const found: string[] = [];
    for (const file of sources(packagePath('src'))) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const m of line.matchAll(pattern)) {
            const before = line.slice(0, m.index + m[1]!.length);
            if (/\bof $/.test(before) || /several $/.test(before) || /Round $/.test(before)) continue;
            found.push(`${relative(packagePath(), file)}:${i + 1}: ${m[0].trim()}`);
          }
        });
    }
    expect(found).toEqual([]);
  });
});
