import { existsSync, lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { InputError } from '../errors.js';

/** The layer of an Ollama manifest that is the model's GGUF file. */
export const OLLAMA_MODEL_LAYER = 'application/vnd.ollama.image.model';

/** One model of a models folder: its name as the user gives it and the GGUF file behind it. */
export interface EmbeddedModel {
  name: string;
  path: string;
  size: number;
  /**
   * The sha256 an Ollama blob is named by: what its content must hash to, checked before the model is loaded
   * (EmbeddedServer.show). Null for a `.gguf` file, whose sha256 is read from it.
   */
  sha256: string | null;
}

/**
 * The models in `dir`: a folder of `.gguf` files (named by file name without `.gguf`), or an
 * Ollama models folder (`~/.ollama/models`, or `~/.ollama` itself), named as Ollama names them,
 * from its manifests. Only reads: nothing in the folder is ever written.
 */
export function listEmbeddedModels(dir: string): EmbeddedModel[] {
  const root = resolve(dir);
  if (!existsSync(root) || !statSync(root).isDirectory()) {
    throw new InputError('MODELS_DIR_MISSING', `The models folder ${root} does not exist or is not a folder.`, {
      hint: 'Pass a folder of .gguf files, or an Ollama models folder such as ~/.ollama/models, to --embedded (or `models:` in the hosts file).',
    });
  }
  const ollamaRoot = existsSync(join(root, 'manifests')) ? root : existsSync(join(root, 'models', 'manifests')) ? join(root, 'models') : null;
  if (ollamaRoot) return oneModelEach(root, ollamaModels(ollamaRoot));
  const models = readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.toLowerCase().endsWith('.gguf'))
    .map((e) => {
      const path = join(root, e.name);
      return { name: e.name.slice(0, -'.gguf'.length), path, size: statSync(path).size, sha256: null };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
  return oneModelEach(root, models);
}

/**
 * Model names ignore case and a missing `:latest`, as Ollama's do: two files of one name would leave
 * which of them runs, and whose sha256 is recorded, to the order of a listing.
 */
function oneModelEach(root: string, models: EmbeddedModel[]): EmbeddedModel[] {
  const seen = new Map<string, EmbeddedModel>();
  for (const m of models) {
    const key = (m.name.includes(':') ? m.name : `${m.name}:latest`).toLowerCase();
    const other = seen.get(key);
    if (other) {
      throw new InputError('MODELS_DIR_AMBIGUOUS', `The models folder ${root} holds two models named \`${m.name}\` (names ignore case): ${other.path} and ${m.path}.`, {
        hint: 'Rename or remove one of them, so that each name picks one model file.',
      });
    }
    seen.set(key, m);
  }
  return models;
}

/** Ollama's names: `registry.ollama.ai/library/NAME/TAG` is `NAME:TAG`, another namespace `NS/NAME:TAG`, another registry its full path. */
function ollamaModels(root: string): EmbeddedModel[] {
  const models: EmbeddedModel[] = [];
  const manifests = join(root, 'manifests');
  const walk = (dir: string, parts: string[]): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name), [...parts, e.name]);
      else if (e.isFile() && parts.length >= 3) {
        const model = fromManifest(root, join(dir, e.name), [...parts, e.name]);
        if (model) models.push(model);
      }
    }
  };
  walk(manifests, []);
  return models.sort((a, b) => a.name.localeCompare(b.name));
}

function fromManifest(root: string, file: string, parts: string[]): EmbeddedModel | null {
  let manifest: { layers?: { mediaType?: unknown; digest?: unknown; size?: unknown }[] };
  try {
    manifest = JSON.parse(readFileSync(file, 'utf8')) as typeof manifest;
  } catch {
    return null;
  }
  const layer = manifest.layers?.find((l) => l.mediaType === OLLAMA_MODEL_LAYER);
  const digest = typeof layer?.digest === 'string' ? /^sha256:([0-9a-f]{64})$/.exec(layer.digest)?.[1] : undefined;
  if (!digest) return null;
  const path = join(root, 'blobs', `sha256-${digest}`);
  // Ollama writes its blobs as plain files: a link (perhaps to a file outside the folder) or a pipe is no model of this folder.
  const blob = lstatSync(path, { throwIfNoEntry: false });
  if (!blob?.isFile()) return null;
  const [registry, namespace, ...rest] = parts;
  const tag = rest.pop()!;
  const repo = rest.join('/');
  const prefix = registry === 'registry.ollama.ai' ? (namespace === 'library' ? '' : `${namespace}/`) : `${registry}/${namespace}/`;
  return { name: `${prefix}${repo}:${tag}`, path, size: blob.size, sha256: digest };
}

/** A name for messages: the folder's last part. */
export function dirLabel(dir: string): string {
  return basename(resolve(dir));
}
