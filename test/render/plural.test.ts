import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatNumber, plural, withArticle } from '../../src/plural.js';
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

  it('writes every number as en-US does, grouped in thousands', () => {
    const values = [0, -0, 1, -1, 7, 12, 999, 1000, -1000, 1234, 99_999, 100_000, 123_456, 1_000_000, -9_876_543, 2 ** 31, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 53, 1e21, 0.5, 1234.5678, -0.0004, 1 / 3, Number.NaN, Infinity, -Infinity];
    // Numbers of every length, from a fixed sequence.
    let x = 12345;
    for (let k = 1; k < 2000; k++) {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      values.push(Math.floor((x / 2 ** 31) * 10 ** (k % 16)) * (k % 2 ? 1 : -1));
    }
    for (const n of values) expect(formatNumber(n), String(n)).toBe(n.toLocaleString('en-US'));
    expect([formatNumber(1234567), formatNumber(-1000)]).toEqual(['1,234,567', '-1,000']);
  });

  it('puts an before a protocol or step name that starts with a vowel, where a sentence read "a auto run"', () => {
    expect(['debate', 'auto', 'oxford', 'delphi', 'advice', 'pipeline'].map(withArticle)).toEqual(['a debate', 'an auto', 'an oxford', 'a delphi', 'an advice', 'a pipeline']);
  });

  it('writes no article of its own before a protocol or step kind in the source, where `auto` and `oxford` would read "a auto"', () => {
    const pattern = /\ban? \$\{[^{}]*\b(kind|protocol)\b[^{}]*\}/g;
    const found: string[] = [];
    for (const file of sources(packagePath('src'))) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const m of line.matchAll(pattern)) found.push(`${relative(packagePath(), file)}:${i + 1}: ${m[0]}`);
        });
    }
    expect(found).toEqual([]);
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
