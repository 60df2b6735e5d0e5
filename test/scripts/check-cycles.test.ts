import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';

const dir = mkdtempSync(join(tmpdir(), 'conclave-cycles-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function check(root?: string) {
  return spawnSync(process.execPath, [packagePath('scripts', 'check-cycles.mjs'), ...(root ? [root] : [])], { encoding: 'utf8' });
}

describe('the import circle check', () => {
  it('passes on src/', () => {
    const r = check();
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('No import circles');
  });

  it('fails on a circle made only of type imports, naming its files', () => {
    mkdirSync(join(dir, 'a'), { recursive: true });
    writeFileSync(join(dir, 'a', 'one.ts'), "import type { Two } from '../two.js';\nexport interface One { two: Two }\n");
    writeFileSync(join(dir, 'two.ts'), "import type { One } from './a/one.js';\nexport interface Two { one: One }\n");
    writeFileSync(join(dir, 'free.ts'), "import type { One } from './a/one.js';\nexport type Free = One;\n");
    const r = check(dir);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('2 files: a/one.ts, two.ts');
    expect(r.stderr).not.toContain('free.ts');
  });
});
