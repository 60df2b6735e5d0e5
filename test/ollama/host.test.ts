import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { normalizeOpenAIBase } from '../../src/backend/url.js';
import { loadHostsFile } from '../../src/config/load-hosts.js';
import { parsePreset } from '../../src/config/load-preset.js';
import { InputError } from '../../src/errors.js';
import { normalizeHost, resolveHost } from '../../src/ollama/host.js';
import { errorOf } from '../helpers/errors.js';

describe('host URLs as people type them', () => {
  it('refuses a scheme missing its colon or a slash, instead of reading it as a server named http', () => {
    for (const typed of ['http//gpu-1:11434', 'http:/gpu-1:11434', 'HTTPS//gpu-1']) {
      const err = errorOf(() => normalizeHost(typed));
      expect(err).toBeInstanceOf(InputError);
      expect(err.message).toContain(`\`${typed}\` has a broken scheme`);
    }
    expect((errorOf(() => normalizeHost('http//gpu-1:11434')) as InputError).hint).toContain('http://gpu-1:11434');
    expect(errorOf(() => normalizeOpenAIBase('http//gpu-2:8000/v1')).message).toContain('has a broken scheme');
    expect(normalizeHost('httpbox:11434')).toBe('http://httpbox:11434');
    expect(normalizeHost('http://gpu-1:11434/')).toBe('http://gpu-1:11434');
  });

  it('names OLLAMA_HOST when the variable holds a URL that cannot be used, and --host when the flag does', () => {
    const fromEnv = errorOf(() => resolveHost(undefined, { OLLAMA_HOST: 'htp://gpu-1:11434' })) as InputError;
    expect(fromEnv.message).toBe('OLLAMA_HOST: The Ollama host `htp://gpu-1:11434` uses the scheme `htp:`; only http and https are supported.');
    expect(fromEnv.hint).toContain('unset OLLAMA_HOST');
    const fromFlag = errorOf(() => resolveHost('htp://gpu-1:11434', { OLLAMA_HOST: 'gpu-2' }));
    expect(fromFlag.message).not.toContain('OLLAMA_HOST');
  });

  it('names the hosts file and the entry whose url is mistyped, before any host is asked', () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-hosts-'));
    const file = join(dir, 'hosts.yaml');
    writeFileSync(file, '- url: http://gpu-1:11434\n- url: http//gpu-2:11434\n- { url: "gpu-3:8000/v1", api: openai }\n');
    const err = errorOf(() => loadHostsFile(file));
    expect(err.message).toContain(`The hosts file ${file} is invalid:\n  - 1.url: The host URL \`http//gpu-2:11434\` has a broken scheme`);
    writeFileSync(file, '- url: http://gpu-1:99999\n');
    expect(errorOf(() => loadHostsFile(file)).message).toContain('  - 0.url: The Ollama host `http://gpu-1:99999` is not a valid URL.');
  });

  it("names the preset's hosts entry whose url is mistyped", () => {
    const preset = { name: 'p', agents: [{ id: 'a', model: 'm1' }, { id: 'b', model: 'm2' }], judge: { model: 'j' }, synthesizer: { model: 's' } };
    const err = errorOf(() => parsePreset({ ...preset, hosts: [{ url: 'gpu-1:11434' }, { url: 'htp://gpu-2:11434' }] }, 'team.yaml'));
    expect(err.message).toContain('Preset team.yaml is invalid:\n  - hosts.1.url: The Ollama host `htp://gpu-2:11434` uses the scheme `htp:`');
    expect(parsePreset({ ...preset, hosts: [{ url: 'gpu-1:11434' }] }).preset.hosts).toHaveLength(1);
  });
});
