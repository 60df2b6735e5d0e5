import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { listEmbeddedModels } from '../../src/embedded/models-dir.js';
import { InputError } from '../../src/errors.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** An Ollama models folder whose manifests name the given digests, each as `library/NAME:latest`. */
function ollamaFolder(manifests: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'conclave-models-dir-'));
  made.push(root);
  mkdirSync(join(root, 'blobs'));
  for (const [name, digest] of Object.entries(manifests)) {
    mkdirSync(join(root, 'manifests', 'registry.ollama.ai', 'library', name), { recursive: true });
    const layers = [{ mediaType: 'application/vnd.ollama.image.model', digest: `sha256:${digest}` }];
    writeFileSync(join(root, 'manifests', 'registry.ollama.ai', 'library', name, 'latest'), JSON.stringify({ layers }));
  }
  return root;
}

describe('an Ollama models folder', () => {
  it('lists a model whose blob is a file of the folder', () => {
    const root = ollamaFolder({ plain: 'a'.repeat(64) });
    writeFileSync(join(root, 'blobs', `sha256-${'a'.repeat(64)}`), 'GGUF');
    expect(listEmbeddedModels(root).map((m) => m.name)).toEqual(['plain:latest']);
  });

  it('leaves out a model whose blob is a link to a file outside the folder, so that file is never read', () => {
    const outside = mkdtempSync(join(tmpdir(), 'conclave-outside-'));
    made.push(outside);
    writeFileSync(join(outside, 'secret'), 'root:x:0:0');
    const root = ollamaFolder({ linked: 'b'.repeat(64), plain: 'a'.repeat(64) });
    writeFileSync(join(root, 'blobs', `sha256-${'a'.repeat(64)}`), 'GGUF');
    symlinkSync(join(outside, 'secret'), join(root, 'blobs', `sha256-${'b'.repeat(64)}`));
    expect(listEmbeddedModels(root).map((m) => m.name)).toEqual(['plain:latest']);
  });

  it('leaves out a model whose blob is a named pipe, which reading would wait on for ever', () => {
    const root = ollamaFolder({ pipe: 'c'.repeat(64) });
    execFileSync('mkfifo', [join(root, 'blobs', `sha256-${'c'.repeat(64)}`)]);
    expect(listEmbeddedModels(root)).toEqual([]);
  });

  it('leaves out a manifest whose digest is not a sha256, such as a path out of the folder', () => {
    const root = ollamaFolder({ escape: '../../../etc/passwd' });
    expect(listEmbeddedModels(root)).toEqual([]);
  });
});

describe('a folder of .gguf files', () => {
  it('names each model by its file name', () => {
    const root = mkdtempSync(join(tmpdir(), 'conclave-models-dir-'));
    made.push(root);
    writeFileSync(join(root, 'qwen-small.gguf'), 'GGUF');
    writeFileSync(join(root, 'notes.txt'), 'not a model');
    expect(listEmbeddedModels(root).map((m) => m.name)).toEqual(['qwen-small']);
  });

  it('refuses two files whose names differ only in case, naming both, instead of running whichever is listed first', () => {
    const root = mkdtempSync(join(tmpdir(), 'conclave-models-dir-'));
    made.push(root);
    writeFileSync(join(root, 'tiny.gguf'), 'GGUF one');
    writeFileSync(join(root, 'Tiny.gguf'), 'GGUF two');
    const error = (() => {
      try {
        return listEmbeddedModels(root);
      } catch (err) {
        return err;
      }
    })();
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).message).toMatch(new RegExp(`holds two models named .*: ${root}/(tiny|Tiny)\\.gguf and ${root}/(Tiny|tiny)\\.gguf\\.$`));
  });
});
