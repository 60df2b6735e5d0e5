import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';

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
