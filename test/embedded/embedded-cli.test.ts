import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { tinyGguf } from '../helpers/gguf.js';

const run = promisify(execFile);
const BIN = packagePath('bin', 'conclave.js');

// Real llama.cpp decoding, through the built CLI, on a tiny random-weight model.
describe('a debate on embedded GGUF models, through the real llama.cpp', { timeout: 600_000 }, () => {
  let dir: string;
  let sha: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'conclave-embedded-'));
    // The CLI remembers the sha256 of model files it read in the cache folder: this test's own, not the user's.
    process.env.XDG_CACHE_HOME = join(dir, 'cache');
    const model = tinyGguf();
    sha = createHash('sha256').update(model).digest('hex');
    // A folder of .gguf files: the model is named by its file name.
    mkdirSync(join(dir, 'gguf'));
    writeFileSync(join(dir, 'gguf', 'tiny.gguf'), model);
    // An Ollama models folder: the name comes from the manifest, the file is the blob its model layer names.
    const store = join(dir, 'ollama', 'models');
    mkdirSync(join(store, 'blobs'), { recursive: true });
    mkdirSync(join(store, 'manifests', 'registry.ollama.ai', 'library', 'tiny'), { recursive: true });
    writeFileSync(join(store, 'blobs', `sha256-${sha}`), model);
    writeFileSync(
      join(store, 'manifests', 'registry.ollama.ai', 'library', 'tiny', '0.1m'),
      JSON.stringify({ schemaVersion: 2, layers: [{ mediaType: 'application/vnd.ollama.image.model', digest: `sha256:${sha}`, size: model.length }] }),
    );
    for (const [file, name] of [['gguf.yaml', 'tiny'], ['ollama.yaml', 'tiny:0.1m']] as const) {
      writeFileSync(
        join(dir, file),
        [`name: tiny-${file.slice(0, -5)}`, 'agents:', `  - { id: a, model: "${name}" }`, `  - { id: b, model: "${name}" }`, `judge: { model: "${name}" }`, `synthesizer: { model: "${name}" }`, 'protocol: { maxRounds: 1, maxAnswerTokens: 160 }', ''].join('\n'),
      );
    }
    writeFileSync(
      join(dir, 'review.yaml'),
      [
        'name: tiny-review',
        'agents:',
        '  - { id: lead, role: lead, model: tiny }',
        '  - { id: product, role: analyst, model: tiny }',
        '  - { id: checks, role: reviewer, model: tiny }',
        '  - { id: editor, role: filter, model: tiny }',
        'judge: { model: tiny }',
        'synthesizer: { model: tiny }',
        'protocol: { kind: pipeline, filterMode: list, maxAnswerTokens: 160 }',
        '',
      ].join('\n'),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the same tiny model every time', () => {
    expect(createHash('sha256').update(tinyGguf()).digest('hex')).toBe(sha);
    expect(tinyGguf({ seed: 7 }).equals(tinyGguf())).toBe(false);
  });

  it('lists the models of a GGUF folder and of an Ollama folder by the names users give them', async () => {
    const gguf = await run(process.execPath, [BIN, 'models', '--embedded', join(dir, 'gguf'), '--json'], { cwd: dir });
    const ollama = await run(process.execPath, [BIN, 'models', '--embedded', join(dir, 'ollama', 'models'), '--json'], { cwd: dir });
    const names = (text: string): string[] => (JSON.parse(text) as { models: { name: string; digest: string }[] }).models.map((m) => `${m.name} ${m.digest}`);
    expect(names(gguf.stdout)).toEqual([`tiny ${sha}`]);
    expect(names(ollama.stdout)).toEqual([`tiny:0.1m ${sha}`]);
    // Reading each file in full takes a while on real models: stderr says so before it starts.
    expect(gguf.stderr).toMatch(/^Listing .*gguf: each \.gguf file not named by its sha256/);
  });

  it('runs a review pipeline on the tiny model to a sealed record, every call embedded', async () => {
    const db = join(dir, 'review.db');
    const r = await run(process.execPath, [BIN, 'run', 'Review: the order service now retries payment calls three times.', '--preset', join(dir, 'review.yaml'), '--embedded', join(dir, 'gguf'), '--db', db, '--quiet'], { cwd: dir }).catch(
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    expect([0, 5], r.stderr).toContain('code' in r ? r.code : 0);
    const verified = await run(process.execPath, [BIN, 'verify', '--all', '--db', db], { cwd: dir });
    expect(verified.stdout.match(/\bsealed\b/g)).toHaveLength(1);
    const store = new Database(db, { readonly: true });
    try {
      const calls = store.prepare('select api, stage from calls').all() as { api: string | null; stage: string }[];
      expect(new Set(calls.map((c) => c.api))).toEqual(new Set(['embedded']));
      // The plan, the review and the filter each called the model.
      expect(new Set(calls.map((c) => c.stage)).size).toBeGreaterThanOrEqual(3);
    } finally {
      store.close();
    }
  });

  it('runs a bench item on the tiny model, every call embedded', async () => {
    const db = join(dir, 'bench.db');
    const r = await run(process.execPath, [BIN, 'bench', '--suite', 'arithmetic', '--preset', join(dir, 'gguf.yaml'), '--limit', '1', '--embedded', join(dir, 'gguf'), '--db', db, '--quiet'], { cwd: dir }).catch(
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    expect('code' in r ? r.code : 0, r.stderr).toBe(0);
    const store = new Database(db, { readonly: true });
    try {
      const tables = (store.prepare("select name from sqlite_master where type = 'table'").all() as { name: string }[]).map((t) => t.name);
      const callTables = tables.filter((t) => t.endsWith('calls'));
      let embedded = 0;
      for (const t of callTables) {
        const rows = store.prepare(`select api from ${t}`).all() as { api: string | null }[];
        for (const row of rows) {
          expect(row.api).toBe('embedded');
          embedded += 1;
        }
      }
      expect(embedded).toBeGreaterThan(0);
    } finally {
      store.close();
    }
  });

  for (const layout of ['gguf', 'ollama'] as const) {
    it(`completes a debate twice in a row from ${layout === 'gguf' ? 'a folder of GGUF files' : 'an Ollama models folder'}, sealed, every call embedded`, async () => {
      const db = join(dir, `${layout}.db`);
      const models = layout === 'gguf' ? join(dir, 'gguf') : join(dir, 'ollama', 'models');
      for (let i = 0; i < 2; i++) {
        const r = await run(process.execPath, [BIN, 'run', 'Is a queue better than a topic here?', '--preset', join(dir, `${layout}.yaml`), '--embedded', models, '--db', db, '--quiet'], { cwd: dir, env: { ...process.env, NO_COLOR: '1' } }).catch(
          (err: { code: number; stdout: string; stderr: string }) => err,
        );
        // A random model may leave too few usable answers or no synthesis (exit 5): the record must still be whole.
        expect([0, 5], r.stderr).toContain('code' in r ? r.code : 0);
      }
      const verified = await run(process.execPath, [BIN, 'verify', '--all', '--db', db], { cwd: dir });
      expect(verified.stdout.match(/\bsealed\b/g)).toHaveLength(2);
      const store = new Database(db, { readonly: true });
      try {
        const calls = store.prepare('select api, host, model from calls').all() as { api: string | null; host: string; model: string }[];
        expect(calls.length).toBeGreaterThanOrEqual(2 * 2);
        expect(new Set(calls.map((c) => c.api))).toEqual(new Set(['embedded']));
        expect(new Set(calls.map((c) => c.host))).toEqual(new Set([`embedded:${models}`]));
        const digests = store.prepare('select distinct digest from agents').all() as { digest: string }[];
        expect(digests).toEqual([{ digest: sha }]);
        const debates = store.prepare('select status, plan_json from debates').all() as { status: string; plan_json: string }[];
        for (const d of debates) {
          expect(['completed', 'unsynthesized', 'failed']).toContain(d.status);
          expect(JSON.parse(d.plan_json).hosts[0]).toMatchObject({ api: 'embedded', device: 'CPU' });
        }
      } finally {
        store.close();
      }
      // Nothing in the Ollama folder is written.
      if (layout === 'ollama') expect(createHash('sha256').update(readFileSync(join(models, 'blobs', `sha256-${sha}`))).digest('hex')).toBe(sha);
    });
  }
});
