import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallError } from '../../src/backend/types.js';
import { engine } from '../../src/embedded/engine.js';
import { modelHashCacheFile } from '../../src/embedded/file-hashes.js';
import { EmbeddedServer } from '../../src/embedded/server.js';
import { packagePath } from '../../src/package-root.js';
import { tinyGguf } from '../helpers/gguf.js';

const run = promisify(execFile);
const BIN = packagePath('bin', 'conclave.js');

let dir: string;
let model: Buffer;
let sha: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-blob-check-'));
  model = tinyGguf();
  sha = createHash('sha256').update(model).digest('hex');
});
afterAll(async () => {
  await engine.unload();
  rmSync(dir, { recursive: true, force: true });
});

let folders = 0;
/** An Ollama models folder holding `tiny:latest`, its blob named by the tiny model's sha256 and holding `content`. */
function ollamaFolder(content: Buffer = model): { root: string; blob: string; cache: string } {
  const root = join(dir, `ollama-${++folders}`);
  mkdirSync(join(root, 'blobs'), { recursive: true });
  mkdirSync(join(root, 'manifests', 'registry.ollama.ai', 'library', 'tiny'), { recursive: true });
  const blob = join(root, 'blobs', `sha256-${sha}`);
  writeFileSync(blob, content);
  writeFileSync(
    join(root, 'manifests', 'registry.ollama.ai', 'library', 'tiny', 'latest'),
    JSON.stringify({ schemaVersion: 2, layers: [{ mediaType: 'application/vnd.ollama.image.model', digest: `sha256:${sha}`, size: content.length }] }),
  );
  return { root, blob, cache: join(dir, `cache-${folders}`, 'conclave', 'model-sha256.json') };
}

/** The tiny model with its last byte (in the tensors, past the header) changed: same size, whole header. */
function oneByteChanged(): Buffer {
  const bad = Buffer.from(model);
  bad[bad.length - 1] = bad[bad.length - 1]! ^ 0x01;
  return bad;
}
const shaOf = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

async function refusal(p: Promise<unknown>): Promise<CallError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CallError);
  return err as CallError;
}

type CacheFile = { format: number; files: Record<string, { size: number; mtimeMs: number; ctimeMs: number; ino: number; sha256: string }> };
const readCache = (file: string): CacheFile => JSON.parse(readFileSync(file, 'utf8')) as CacheFile;

describe('an Ollama blob is checked against the digest it is named by before it is loaded', { timeout: 120_000 }, () => {
  it('loads a blob whose content hashes to its name, and remembers the check in the cache folder', async () => {
    const { root, blob, cache } = ollamaFolder();
    const server = new EmbeddedServer(root, 1, { hashCache: cache });
    await server.warm('tiny', { num_ctx: 256 });
    expect((await server.ps()).map((m) => m.name)).toEqual(['tiny:latest']);
    expect(readCache(cache).files[blob]).toMatchObject({ size: model.length, sha256: sha });
  });

  it('refuses a blob with one byte changed, before loading it, naming the model, the file, both digests and the fix', async () => {
    const bad = oneByteChanged();
    const { root, blob, cache } = ollamaFolder(bad);
    const server = new EmbeddedServer(root, 1, { hashCache: cache });
    for (const attempt of [server.show('tiny'), server.warm('tiny', { num_ctx: 256 })]) {
      const err = await refusal(attempt);
      expect(err.code).toBe('BAD_REQUEST');
      expect(err.message).toBe(`Model \`tiny:latest\` is not the model its manifest names: the content of ${blob} has sha256 ${shaOf(bad)}, and its manifest and file name say ${sha}.`);
      expect(err.hint).toMatch(/copy the model again .*`ollama pull tiny:latest` on a connected machine/);
    }
  });

  it('trusts a check remembered for the same file version (size, mtime, ctime, inode) without reading the file again', async () => {
    const { root, blob, cache } = ollamaFolder();
    await new EmbeddedServer(root, 1, { hashCache: cache }).show('tiny');
    // The blob changes; the cache is made to say the new version was read and hashed to the right digest.
    writeFileSync(blob, oneByteChanged());
    const now = statSync(blob);
    const remembered = readCache(cache);
    remembered.files[blob] = { size: now.size, mtimeMs: now.mtimeMs, ctimeMs: now.ctimeMs, ino: now.ino, sha256: sha };
    writeFileSync(cache, JSON.stringify(remembered));
    // A later run takes the cache at its word: had it read the file, it would refuse it.
    await expect(new EmbeddedServer(root, 1, { hashCache: cache }).show('tiny')).resolves.toMatchObject({ family: 'llama' });
    // Another mtime is another version: read again, and refused.
    utimesSync(blob, now.atime, new Date(now.mtimeMs + 5000));
    const err = await refusal(new EmbeddedServer(root, 1, { hashCache: cache }).show('tiny'));
    expect(err.message).toContain(`has sha256 ${shaOf(oneByteChanged())}`);
  });

  it('reads again a blob changed in place whose size and mtime were set back as they were', async () => {
    const { root, blob, cache } = ollamaFolder();
    // A whole second, which utimes sets back exactly (as rsync or cp -p set a copy's mtime).
    const mtime = Math.floor(Date.now() / 1000) - 60;
    utimesSync(blob, mtime, mtime);
    await new EmbeddedServer(root, 1, { hashCache: cache }).show('tiny');
    // Past the file system's clock tick, so the change gets a ctime of its own.
    await new Promise((resolve) => setTimeout(resolve, 50));
    writeFileSync(blob, oneByteChanged());
    utimesSync(blob, mtime, mtime);
    expect(statSync(blob)).toMatchObject({ mtimeMs: mtime * 1000, size: model.length });
    const err = await refusal(new EmbeddedServer(root, 1, { hashCache: cache }).show('tiny'));
    expect(err.message).toContain(`has sha256 ${shaOf(oneByteChanged())}`);
  });

  it('ignores a cache file that is not JSON, checks the blob and writes the cache anew', async () => {
    const { root, blob, cache } = ollamaFolder();
    mkdirSync(join(cache, '..'), { recursive: true });
    writeFileSync(cache, '{"format":1,"files":{ not json');
    await expect(new EmbeddedServer(root, 1, { hashCache: cache }).show('tiny')).resolves.toMatchObject({ family: 'llama' });
    expect(readCache(cache)).toEqual({ format: 1, files: { [blob]: expect.objectContaining({ sha256: sha }) } });
  });

  it('ignores cache entries not of its shape, so a damaged entry cannot vouch for a blob', async () => {
    const bad = oneByteChanged();
    const { root, blob, cache } = ollamaFolder(bad);
    const now = statSync(blob);
    const key = { size: now.size, mtimeMs: now.mtimeMs, ctimeMs: now.ctimeMs, ino: now.ino };
    for (const content of ['null', '[]', JSON.stringify({ format: 1, files: { [blob]: { ...key, sha256: sha.toUpperCase() } } }), JSON.stringify({ format: 2, files: { [blob]: { ...key, sha256: sha } } })]) {
      mkdirSync(join(cache, '..'), { recursive: true });
      writeFileSync(cache, content);
      const err = await refusal(new EmbeddedServer(root, 1, { hashCache: cache }).show('tiny'));
      expect(err.message).toContain(`has sha256 ${shaOf(bad)}`);
    }
  });
});

describe("a .gguf file's sha256", () => {
  it('is read once across runs: a later run takes it from the cache for the same file version', async () => {
    const root = join(dir, 'gguf');
    mkdirSync(root);
    const file = join(root, 'tiny.gguf');
    writeFileSync(file, model);
    const cache = join(dir, 'gguf-cache', 'model-sha256.json');
    expect((await new EmbeddedServer(root, 1, { hashCache: cache }).tags()).map((t) => t.digest)).toEqual([sha]);
    const remembered = readCache(cache);
    expect(remembered.files[file]?.sha256).toBe(sha);
    // Proof that the next run does not read the file: it reports what the cache says of this version.
    remembered.files[file]!.sha256 = 'f'.repeat(64);
    writeFileSync(cache, JSON.stringify(remembered));
    expect((await new EmbeddedServer(root, 1, { hashCache: cache }).tags()).map((t) => t.digest)).toEqual(['f'.repeat(64)]);
    // Touched, it is read again, and the cache corrected.
    const now = statSync(file);
    utimesSync(file, now.atime, new Date(now.mtimeMs + 5000));
    expect((await new EmbeddedServer(root, 1, { hashCache: cache }).tags()).map((t) => t.digest)).toEqual([sha]);
    expect(readCache(cache).files[file]?.sha256).toBe(sha);
  });
});

describe('the cache folder', () => {
  it('is $XDG_CACHE_HOME/conclave when that is an absolute path, else ~/.cache/conclave', () => {
    expect(modelHashCacheFile({ XDG_CACHE_HOME: '/var/cache/me' })).toBe('/var/cache/me/conclave/model-sha256.json');
    expect(modelHashCacheFile({ XDG_CACHE_HOME: 'relative' })).toMatch(/\/\.cache\/conclave\/model-sha256\.json$/);
  });
});

// The built CLI, as a user meets a whole and a damaged copy of an Ollama models folder.
describe('a run on an Ollama models folder copied by hand', { timeout: 120_000 }, () => {
  const preset = (): string => {
    const file = join(dir, 'tiny.yaml');
    writeFileSync(file, ['name: tiny', 'agents:', '  - { id: a, model: tiny }', '  - { id: b, model: tiny }', 'judge: { model: tiny }', 'synthesizer: { model: tiny }', 'protocol: { maxRounds: 1, maxAnswerTokens: 120 }', ''].join('\n'));
    return file;
  };

  it('runs on a blob whose content hashes to its name, records that digest, and remembers the check', async () => {
    const { root, blob } = ollamaFolder();
    const cacheHome = join(dir, 'xdg-whole');
    const db = join(dir, 'whole.db');
    const r = await run(process.execPath, [BIN, 'run', 'Queue or topic?', '--preset', preset(), '--embedded', root, '--db', db, '--quiet'], { cwd: dir, env: { ...process.env, NO_COLOR: '1', XDG_CACHE_HOME: cacheHome } }).then(
      (x) => ({ code: 0, ...x }),
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    // A random model may leave too few usable answers or no synthesis (exit 5): its calls still ran.
    expect([0, 5], r.stderr).toContain(r.code);
    expect(readCache(join(cacheHome, 'conclave', 'model-sha256.json')).files[blob]?.sha256).toBe(sha);
    const store = new Database(db, { readonly: true });
    try {
      expect(store.prepare('select distinct digest from agents').all()).toEqual([{ digest: sha }]);
    } finally {
      store.close();
    }
  });

  it('is refused before anything runs (exit 3), with the model, the file, both digests and the fix, and no stack trace', async () => {
    const bad = oneByteChanged();
    const { root, blob } = ollamaFolder(bad);
    const copy = join(dir, 'copied');
    cpSync(root, copy, { recursive: true });
    const env = { ...process.env, NO_COLOR: '1', XDG_CACHE_HOME: join(dir, 'xdg-cache') };
    const r = await run(process.execPath, [BIN, 'run', 'Queue or topic?', '--preset', preset(), '--embedded', copy, '--db', join(dir, 'c.db'), '--quiet'], { cwd: dir, env }).then(
      (x) => ({ code: 0, ...x }),
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    expect(r.code, r.stderr).toBe(3);
    const copied = blob.replace(root, copy);
    const [message, hint] = r.stderr.trim().split('\n');
    expect(message).toBe(`conclave: Model \`tiny:latest\` is not the model its manifest names: the content of ${copied} has sha256 ${shaOf(bad)}, and its manifest and file name say ${sha}.`);
    expect(hint).toMatch(/`ollama pull tiny:latest`/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    // The check was remembered in XDG_CACHE_HOME; the listing stays quick and reads no blob.
    expect(readCache(join(dir, 'xdg-cache', 'conclave', 'model-sha256.json')).files[copied]?.sha256).toBe(shaOf(bad));
    const listed = await run(process.execPath, [BIN, 'models', '--embedded', copy, '--json'], { cwd: dir, env });
    expect((JSON.parse(listed.stdout) as { models: { digest: string }[] }).models.map((m) => m.digest)).toEqual([sha]);
  });
});
