import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { tinyGguf } from '../helpers/gguf.js';

const run = promisify(execFile);
const BIN = packagePath('bin', 'conclave.js');

type Outcome = { code: number; stdout: string; stderr: string };

// The built CLI, as a user meets a models folder with a broken file in it.
describe('a models folder holding a file that is not a whole GGUF model', { timeout: 120_000 }, () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'conclave-bad-gguf-'));
    // The CLI remembers the sha256 of model files it read in the cache folder: this test's own, not the user's.
    process.env.XDG_CACHE_HOME = join(dir, 'cache');
    mkdirSync(join(dir, 'models'));
    const model = tinyGguf();
    writeFileSync(join(dir, 'models', 'cut.gguf'), model.subarray(0, 100));
    writeFileSync(join(dir, 'models', 'text.gguf'), 'not a model at all');
    // A copy that stopped in the tensors: its header is whole.
    writeFileSync(join(dir, 'models', 'half.gguf'), model.subarray(0, 400_000));
    for (const name of ['cut', 'text', 'half']) {
      const yaml = ['name: broken', 'agents:', `  - { id: a, model: ${name} }`, `  - { id: b, model: ${name} }`, `judge: { model: ${name} }`, `synthesizer: { model: ${name} }`, 'protocol: { maxRounds: 1 }', ''];
      writeFileSync(join(dir, `${name}.yaml`), yaml.join('\n'));
    }
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const attempt = (name: string): Promise<Outcome> =>
    run(process.execPath, [BIN, 'run', 'Queue or topic?', '--preset', join(dir, `${name}.yaml`), '--embedded', join(dir, 'models'), '--db', join(dir, 'c.db'), '--quiet'], { cwd: dir, env: { ...process.env, NO_COLOR: '1' } }).then(
      (r) => ({ code: 0, ...r }),
      (err: Outcome) => err,
    );

  it('refuses a file cut short inside its header, naming the model, its file and what to do', async () => {
    const r = await attempt('cut');
    expect(r.code).toBe(3);
    const [message, hint] = r.stderr.trim().split('\n');
    expect(message).toBe(`conclave: Model \`cut\` cannot be read as a GGUF model from ${join(dir, 'models', 'cut.gguf')}: the GGUF header ends early.`);
    expect(hint).toMatch(/Copy the whole model file again/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses a file cut short in its tensors before any call, instead of failing every call in llama.cpp', async () => {
    const r = await attempt('half');
    expect(r.code).toBe(3);
    expect(r.stderr.trim().split('\n')[0]).toBe(`conclave: Model \`half\` is cut short: ${join(dir, 'models', 'half.gguf')} holds 400000 bytes, and its header describes ${tinyGguf().length}.`);
    expect(r.stderr).not.toMatch(/llama_model_load|\n\s+at /);
  });

  it('refuses a file that is not GGUF at all the same way', async () => {
    const r = await attempt('text');
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`Model \`text\` cannot be read as a GGUF model from ${join(dir, 'models', 'text.gguf')}: it is not a GGUF file (it starts with "not ").`);
  });
});
