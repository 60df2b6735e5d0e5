import { existsSync, statSync } from 'node:fs';
import { freemem, totalmem } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { errorMessage, InputError } from '../errors.js';
import { packageRoot } from '../package-root.js';
import { readGgufInfo } from './gguf-info.js';
import type { Llama, LlamaContext, LlamaContextSequence, LlamaGrammar, LlamaModel, NodeLlamaCpp } from './llama-api.js';


/** The release of node-llama-cpp Conclave is built and tested with. */
export const NODE_LLAMA_CPP_VERSION = '3.21.1';

/** Models under this size gain nothing from more than one thread: the threads' hand-offs cost more than the arithmetic. */
const SMALL_MODEL_BYTES = 64 * 2 ** 20;

let library: Promise<NodeLlamaCpp> | undefined;

/**
 * The folder under Conclave's own where `npm run embedded:install` puts node-llama-cpp with only
 * the CPU build of llama.cpp. It sits outside node_modules: npm installs whole trees, and an
 * install there that left out node-llama-cpp's GPU builds would leave out every other optional
 * package too (esbuild's binary among them); `npm ci` would also remove it.
 */
export const ENGINE_FOLDER = 'embedded-engine';

/** node-llama-cpp's prebuilt llama.cpp for this platform, CPU only (its CUDA and Vulkan builds are left out). */
export function cpuBuildPackage(platform: string = process.platform, arch: string = process.arch): string {
  const os = platform === 'darwin' ? 'mac' : platform === 'win32' ? 'win' : platform;
  const cpu = arch === 'arm' ? 'armv7l' : arch;
  return `@node-llama-cpp/${os}-${cpu}${os === 'mac' && cpu === 'arm64' ? '-metal' : ''}`;
}

/** The command that installs node-llama-cpp where Conclave looks for it. */
export function installCommand(root: string = packageRoot()): string {
  const folder = `${root}${process.platform === 'win32' ? '\\' : '/'}${ENGINE_FOLDER}`;
  const quoted = /^[\w./:@\\-]+$/.test(folder) ? folder : JSON.stringify(folder);
  return `npm install --prefix ${quoted} --no-save --omit=optional --ignore-scripts node-llama-cpp@${NODE_LLAMA_CPP_VERSION} ${cpuBuildPackage()}@${NODE_LLAMA_CPP_VERSION}`;
}

/**
 * node-llama-cpp, imported the first time an embedded host is used: from wherever Node resolves it
 * (a release built --with-embedded, or an install beside Conclave), else from ENGINE_FOLDER.
 * A clear error, with the command that installs it, when it is in neither.
 */
export function loadLibrary(): Promise<NodeLlamaCpp> {
  library ??= importLibrary().catch((err: unknown) => {
    library = undefined;
    throw err;
  });
  return library;
}

async function importLibrary(): Promise<NodeLlamaCpp> {
  const specifier = 'node-llama-cpp';
  try {
    return (await import(specifier)) as NodeLlamaCpp;
  } catch (err) {
    if (!notFound(err)) throw unavailable(err);
  }
  const entry = join(packageRoot(), ENGINE_FOLDER, 'node_modules', 'node-llama-cpp', 'dist', 'index.js');
  if (!existsSync(entry)) {
    throw new InputError('EMBEDDED_UNAVAILABLE', `Embedded models need node-llama-cpp ${NODE_LLAMA_CPP_VERSION}, which is not installed.`, {
      hint: `Install it with its CPU build of llama.cpp (about 80 MB, from the npm registry or your mirror): \`${installCommand()}\` (in a clone: \`npm run embedded:install\`). Or use a release archive built with --with-embedded.`,
    });
  }
  try {
    return (await import(pathToFileURL(entry).href)) as NodeLlamaCpp;
  } catch (err) {
    throw unavailable(err);
  }
}

function notFound(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String((err as Error).message).includes("'node-llama-cpp'");
}

function unavailable(err: unknown): InputError {
  return new InputError('EMBEDDED_UNAVAILABLE', `node-llama-cpp could not be loaded: ${errorMessage(err).split('\n')[0]}`, {
    hint: `Reinstall it: \`${installCommand()}\` (in a clone: \`npm run embedded:install\`).`,
  });
}

/** One sequence of the loaded model's context, lent to one call. */
export interface Lease {
  model: LlamaModel;
  sequence: LlamaContextSequence;
  llama: Llama;
  /** Bytes of each token of the loaded model, for replies with byte-fallback tokens that do not decode on their own. */
  vocabulary: () => TokenBytes;
  release(): void;
}

export type TokenBytes = (token: number) => Uint8Array;

interface Loaded {
  key: string;
  path: string;
  model: LlamaModel;
  context: LlamaContext;
  free: LlamaContextSequence[];
  active: number;
  vocabulary?: TokenBytes;
}

interface Waiter {
  path: string;
  contextSize: number;
  slots: number;
  resolve: (lease: Lease) => void;
  reject: (err: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

/**
 * The process's one llama.cpp: one model loaded at a time, its context split into as many
 * sequences as the host has slots. A call for another model (or another context size) waits until
 * the loaded one has no call in flight, then replaces it; waiting calls are served in order.
 */
class Engine {
  #llama: Promise<Llama> | undefined;
  #loaded: Loaded | null = null;
  #loading = false;
  readonly #queue: Waiter[] = [];
  readonly #grammars = new Map<string, Promise<LlamaGrammar>>();
  /** Model loads in this process, for the bench and the tests. */
  loads = 0;

  llama(): Promise<Llama> {
    this.#llama ??= loadLibrary()
      .then((lib) => lib.getLlama({ build: 'never', gpu: 'auto', logLevel: lib.LlamaLogLevel.error, progressLogs: false }))
      .catch((err: unknown) => {
        this.#llama = undefined;
        throw err instanceof InputError
          ? err
          : new InputError('EMBEDDED_UNAVAILABLE', `node-llama-cpp found no llama.cpp build it can run here: ${(err as Error)?.message?.split('\n')[0]}`, {
              hint: `Install the CPU build of llama.cpp for this machine beside it: \`${installCommand()}\`.`,
            });
      });
    return this.#llama;
  }

  /** `CPU`, or the GPU llama.cpp found, with its memory. */
  async device(): Promise<{ name: string; memoryBytes: number }> {
    const llama = await this.llama();
    if (llama.gpu === false) return { name: 'CPU', memoryBytes: totalmem() };
    const names = await llama.getGpuDeviceNames().catch(() => [] as string[]);
    const vram = await llama.getVramState().catch(() => ({ total: 0 }));
    return { name: `${llama.gpu.toUpperCase()}${names.length ? ` (${names.join(', ')})` : ''}`, memoryBytes: vram.total || freemem() };
  }

  loadedPath(): string | null {
    return this.#loaded?.path ?? null;
  }

  grammar(text: string): Promise<LlamaGrammar> {
    let known = this.#grammars.get(text);
    if (!known) {
      known = this.llama().then((llama) => llama.createGrammar({ grammar: text }));
      known.catch(() => this.#grammars.delete(text));
      if (this.#grammars.size >= 256) this.#grammars.delete(this.#grammars.keys().next().value!);
      this.#grammars.set(text, known);
    }
    return known;
  }

  acquire(path: string, contextSize: number, slots: number, signal?: AbortSignal): Promise<Lease> {
    return new Promise<Lease>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const waiter: Waiter = { path, contextSize, slots, resolve, reject, ...(signal ? { signal } : {}) };
      if (signal) {
        waiter.onAbort = () => {
          const at = this.#queue.indexOf(waiter);
          if (at >= 0) this.#queue.splice(at, 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.#queue.push(waiter);
      this.#pump();
    });
  }

  /** Frees the loaded model (tests and the bench; a CLI process simply exits). */
  async unload(): Promise<void> {
    const loaded = this.#loaded;
    this.#loaded = null;
    if (loaded) {
      await loaded.context.dispose();
      await loaded.model.dispose();
    }
  }

  #pump(): void {
    while (this.#queue.length > 0 && !this.#loading) {
      const head = this.#queue[0]!;
      const key = `${head.path}\0${head.contextSize}`;
      const loaded = this.#loaded;
      if (loaded && loaded.key === key) {
        const sequence = loaded.free.pop();
        if (!sequence) return;
        this.#queue.shift();
        this.#lend(head, loaded, sequence);
        continue;
      }
      if (loaded && loaded.active > 0) return;
      this.#loading = true;
      void this.#swap(head, key).finally(() => {
        this.#loading = false;
        this.#pump();
      });
      return;
    }
  }

  async #swap(head: Waiter, key: string): Promise<void> {
    try {
      await this.unload();
      const llama = await this.llama();
      const small = readGgufSize(head.path) < SMALL_MODEL_BYTES;
      const model = await llama.loadModel({ modelPath: head.path });
      const context = await model.createContext({ contextSize: head.contextSize, sequences: head.slots, ...(small ? { threads: 1 } : {}) });
      const free: LlamaContextSequence[] = [];
      for (let i = 0; i < head.slots; i++) free.push(context.getSequence());
      this.#loaded = { key, path: head.path, model, context, free: free.reverse(), active: 0 };
      this.loads += 1;
    } catch (err) {
      // Every call waiting for this model fails the same way; calls for other models still get their turn.
      for (const w of this.#queue.filter((q) => q.path === head.path && q.contextSize === head.contextSize)) {
        this.#queue.splice(this.#queue.indexOf(w), 1);
        if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
        w.reject(err);
      }
    }
  }

  #lend(waiter: Waiter, loaded: Loaded, sequence: LlamaContextSequence): void {
    if (waiter.onAbort) waiter.signal?.removeEventListener('abort', waiter.onAbort);
    loaded.active += 1;
    let released = false;
    void this.llama().then((llama) =>
      waiter.resolve({
        model: loaded.model,
        sequence,
        llama,
        vocabulary: () => (loaded.vocabulary ??= tokenBytesOf(loaded.path)),
        release: () => {
          if (released) return;
          released = true;
          loaded.active -= 1;
          loaded.free.push(sequence);
          this.#pump();
        },
      }),
    );
  }
}

function readGgufSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** The one engine of this process. */
export const engine = new Engine();

/** GPT-2's byte-level BPE writes each byte as one printable character: the inverse of that table. */
function gpt2ByteDecoder(): Map<string, number> {
  const bytes: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) bytes.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bytes.push(b);
  for (let b = 0xae; b <= 0xff; b++) bytes.push(b);
  const chars = [...bytes];
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    if (!bytes.includes(b)) {
      bytes.push(b);
      chars.push(256 + extra++);
    }
  }
  return new Map(bytes.map((b, i) => [String.fromCodePoint(chars[i]!), b]));
}

/** Each token's bytes, from the GGUF vocabulary: SentencePiece byte tokens (`<0xE2>`) and `▁`, or GPT-2 byte-level pieces. */
export function tokenBytesOf(path: string): TokenBytes {
  const info = readGgufInfo(path, ['tokenizer.ggml.tokens', 'tokenizer.ggml.token_type']);
  const tokens = (info.arrays['tokenizer.ggml.tokens'] ?? []) as string[];
  const types = (info.arrays['tokenizer.ggml.token_type'] ?? []) as number[];
  const kind = info.metadata['tokenizer.ggml.model'];
  const decoder = kind === 'gpt2' ? gpt2ByteDecoder() : null;
  const cache = new Map<number, Uint8Array>();
  const empty = new Uint8Array(0);
  return (token) => {
    const known = cache.get(token);
    if (known) return known;
    const text = tokens[token];
    let bytes: Uint8Array;
    if (text === undefined || types[token] === 3) bytes = empty;
    else if (types[token] === 6 && /^<0x[0-9A-Fa-f]{2}>$/.test(text)) bytes = Uint8Array.of(Number.parseInt(text.slice(3, 5), 16));
    else if (decoder) bytes = Uint8Array.from([...text].map((c) => decoder.get(c) ?? 0x3f));
    else bytes = new TextEncoder().encode(kind === 'llama' ? text.replace(/\u2581/g, ' ') : text);
    cache.set(token, bytes);
    return bytes;
  };
}
