import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadHostsFile } from '../../src/config/load-hosts.js';
import { InputError } from '../../src/errors.js';
import { errorOf } from '../helpers/errors.js';

describe('a hosts file', () => {
  it('written as a preset writes its hosts (a mapping with `hosts:`) is named as such, with the fix', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'conclave-hosts-file-')), 'hosts.yaml');
    writeFileSync(file, 'hosts:\n  - { url: http://gpu-1:11434, vramGiB: 24 }\n');
    const err = errorOf(() => loadHostsFile(file)) as InputError;
    expect(err).toBeInstanceOf(InputError);
    expect(err.message).toBe(`The hosts file ${file} is a mapping with \`hosts:\`, as a preset writes it; a hosts file is the list alone.`);
    expect(err.hint).toContain('Remove the `hosts:` line');
    writeFileSync(file, '- { url: http://gpu-1:11434, vramGiB: 24 }\n');
    expect(loadHostsFile(file)).toEqual([{ url: 'http://gpu-1:11434', vramGiB: 24 }]);
  });

  it('with a misspelt field names the field meant', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'conclave-hosts-file-')), 'hosts.yaml');
    writeFileSync(file, '- { url: http://gpu-1:11434, vramGib: 24 }\n');
    expect(errorOf(() => loadHostsFile(file)).message).toContain('  - 0: unknown field `vramGib` (did you mean `vramGiB`?)');
  });
});
