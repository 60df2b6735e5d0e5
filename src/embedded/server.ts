import { callAbort, stoppedError } from '../backend/call-control.js';
import {
  type CallControl,
  CallError,
  type ChatRequest,
  type ChatResult,
  type LoadedModel,
  type ModelDetails,
  type ModelServer,
  type TagModel,
} from '../backend/types.js';
import { embeddedUrl } from '../backend/url.js';
import { ConclaveError, errorMessage } from '../errors.js';
import { inertLine } from '../render/inert.js';
import { engine, loadLibrary, NODE_LLAMA_CPP_VERSION } from './engine.js';
import { schemaToGbnf } from './gbnf.js';
import { type GgufInfo, ggufGeometry, readGgufInfo } from './gguf-info.js';
import { decodeAsGrammar } from './grammar-text.js';
import type { ChatHistoryItem, LlamaChatResponseChunk } from './llama-api.js';
import { FileHashes, modelHashCacheFile } from './file-hashes.js';
import { type EmbeddedModel, listEmbeddedModels } from './models-dir.js';

/** The context size when the call names none: Ollama's default. */
const DEFAULT_NUM_CTX = 4096;

const sameName = (a: string, b: string): boolean => {
  const norm = (s: string): string => (s.includes(':') ? s : `${s}:latest`).toLowerCase();
  return norm(a) === norm(b);
};

/**
 * GGUF models run in this process by llama.cpp (node-llama-cpp), from a folder of .gguf files or an
 * Ollama models folder. Every call samples under a grammar built from its schema; the chat template is
 * the model's own; `num_ctx` is the context size of each of the host's `slots` sequences, and one model
 * is loaded at a time, for the whole process.
 */
export class EmbeddedServer implements ModelServer {
  readonly host: string;
  readonly api = 'embedded' as const;
  readonly dir: string;
  slots: number;
  #models: EmbeddedModel[] | null = null;
  readonly #thinking = new Map<string, boolean>();
  readonly #hashes: FileHashes;

  /** `hashCache`: the file that remembers model files' sha256 between runs (default none: this process only; `embeddedServer` gives the user's cache folder). */
  constructor(dir: string, slots = 1, options: { hashCache?: string | null } = {}) {
    this.dir = dir;
    this.host = embeddedUrl(dir);
    this.slots = slots;
    this.#hashes = new FileHashes(options.hashCache ?? null);
  }

  models(): EmbeddedModel[] {
    this.#models ??= listEmbeddedModels(this.dir);
    return this.#models;
  }

  #model(name: string): EmbeddedModel {
    const found = this.models().find((m) => sameName(m.name, name));
    if (!found) {
      throw new CallError('MODEL_MISSING', `Model \`${name}\` is not in ${this.dir}.`, {
        hint: 'Put its .gguf file in that folder (or pull it with Ollama into it), or use a name from `conclave models --embedded DIR`.',
        status: 404,
      });
    }
    return found;
  }

  /** The model file's sha256: an Ollama blob's as its name says it (checked by `#checked` before a load), a `.gguf` file's read from it. */
  async #sha256(model: EmbeddedModel): Promise<string> {
    return model.sha256 ?? (await this.#hashes.sha256(model.path));
  }

  /**
   * The model, once its file is the one its name claims: an Ollama blob's content must hash to the digest it
   * is named by, or a damaged or replaced copy would run and be recorded under a sha256 it does not have.
   * Read once per file version (see FileHashes).
   */
  async #checked(model: EmbeddedModel): Promise<EmbeddedModel> {
    if (!model.sha256) return model;
    const actual = await this.#hashes.sha256(model.path);
    if (actual === model.sha256) return model;
    throw new CallError(
      'BAD_REQUEST',
      `Model \`${model.name}\` is not the model its manifest names: the content of ${model.path} has sha256 ${actual}, and its manifest and file name say ${model.sha256}.`,
      {
        hint: `The copy is damaged or was replaced: copy the model again from a machine where it is whole (or run \`ollama pull ${model.name}\` on a connected machine and copy its models folder), or take it out of the folder.`,
      },
    );
  }

  async chat(request: ChatRequest, control: CallControl = {}): Promise<ChatResult> {
    const abort = callAbort(control);
    const started = process.hrtime.bigint();
    let content = '';
    let thinking = '';
    let thinkingTokens = 0;
    let tokens = 0;
    let lease: Awaited<ReturnType<typeof engine.acquire>> | null = null;
    // Whether a `<think>` opening the reply is this model's thought even when the token limit or a stop cut it before `</think>`.
    let thinks = false;
    try {
      const model = await this.#checked(this.#model(request.model));
      thinks = request.think !== false && this.#thinks(model);
      const options = request.options ?? {};
      const contextSize = positiveInt(options.num_ctx) ?? DEFAULT_NUM_CTX;
      const schemaText = request.format === undefined ? null : request.format === 'json' ? schemaToGbnf({}) : schemaToGbnf(request.format);
      // A thinking model thinks before the reply the schema binds, as on Ollama: the grammar lets a `<think>` block open the reply.
      const grammarText = schemaText !== null && thinks ? withThinking(schemaText) : schemaText;
      const grammar = grammarText === null ? undefined : await engine.grammar(grammarText);
      const queued = process.hrtime.bigint();
      lease = await engine.acquire(model.path, contextSize, this.slots, abort.controller.signal);
      const loadNs = Number(process.hrtime.bigint() - queued);
      const { LlamaChat } = await loadLibrary();
      const chat = new LlamaChat({ contextSequence: lease.sequence });
      const meter = lease.sequence.tokenMeter.getState();
      const answerTokens: number[] = [];
      const evalStarted = process.hrtime.bigint();
      try {
        const maxTokens = positiveInt(options.num_predict);
        const result = await chat.generateResponse(history(request.messages), {
          ...(grammar ? { grammar } : {}),
          ...(maxTokens ? { maxTokens } : {}),
          temperature: typeof options.temperature === 'number' ? options.temperature : 0.8,
          ...(typeof options.seed === 'number' ? { seed: options.seed } : {}),
          ...(typeof options.top_p === 'number' ? { topP: options.top_p } : {}),
          ...(typeof options.top_k === 'number' ? { topK: options.top_k } : {}),
          ...(typeof options.min_p === 'number' ? { minP: options.min_p } : {}),
          ...(typeof options.repeat_penalty === 'number' ? { repeatPenalty: { penalty: options.repeat_penalty } } : {}),
          ...(Array.isArray(options.stop) ? { customStopTriggers: options.stop.filter((s): s is string => typeof s === 'string') } : {}),
          ...(request.think === false ? { budgets: { thoughtTokens: 0 } } : {}),
          signal: abort.controller.signal,
          onResponseChunk: (chunk: LlamaChatResponseChunk) => {
            if (chunk.type === 'segment') {
              if (chunk.segmentType === 'thought') {
                thinking += chunk.text;
                thinkingTokens += chunk.tokens.length;
                tokens += chunk.tokens.length;
                control.onProgress?.({ tokens, delta: '' });
              }
              return;
            }
            answerTokens.push(...chunk.tokens);
            content += chunk.text;
            tokens += chunk.tokens.length;
            control.onProgress?.({ tokens, delta: chunk.text });
          },
        });
        const evalNs = Number(process.hrtime.bigint() - evalStarted);
        // A reply holding bytes that are not UTF-8 is read back as the grammar read it, so it keeps the shape the grammar allowed.
        if (grammar && content.includes('\uFFFD')) content = decodeAsGrammar(concatBytes(answerTokens.map(lease.vocabulary())));
        // A thought node-llama-cpp's chat wrapper did not recognise is still a thought: it is recorded as such, not as the reply.
        const split = splitThought(content, thinks);
        if (split) {
          thinking += split.thinking;
          content = split.content;
          const thoughtTokens = leadingTokens(answerTokens.map(lease.vocabulary()), Buffer.byteLength(split.raw));
          thinkingTokens += thoughtTokens;
        }
        const used = lease.sequence.tokenMeter.getState();
        const stop = result.metadata.stopReason;
        return {
          content,
          thinking,
          thinkingTokens,
          metrics: {
            promptTokens: used.usedInputTokens - meter.usedInputTokens,
            completionTokens: used.usedOutputTokens - meter.usedOutputTokens,
            totalDurationNs: Number(process.hrtime.bigint() - started),
            loadDurationNs: loadNs,
            promptEvalDurationNs: null,
            evalDurationNs: evalNs,
            doneReason: stop === 'maxTokens' ? 'length' : stop === 'abort' ? 'abort' : 'stop',
          },
        };
      } finally {
        chat.dispose({ disposeSequence: false });
      }
    } catch (err) {
      const mapped = this.#mapError(err, request.model, { timedOut: abort.timedOut(), aborted: control.signal?.aborted ?? false, timeoutMs: abort.timeoutMs });
      const split = splitThought(content, thinks);
      mapped.partial = split ? split.content : content;
      mapped.partialThinking = split ? thinking + split.thinking : thinking;
      throw mapped;
    } finally {
      lease?.release();
      abort.dispose();
    }
  }

  #thinks(model: EmbeddedModel): boolean {
    let known = this.#thinking.get(model.path);
    if (known === undefined) {
      const template = header(model).metadata['tokenizer.chat_template'];
      known = typeof template === 'string' && template.includes('</think>');
      this.#thinking.set(model.path, known);
    }
    return known;
  }

  /** Loads the model with the context its calls will use, so the first call does not pay for it. */
  async warm(model: string, options: Record<string, unknown>): Promise<void> {
    const lease = await this.#checked(this.#model(model))
      .then((m) => engine.acquire(m.path, positiveInt(options.num_ctx) ?? DEFAULT_NUM_CTX, this.slots))
      .catch((err: unknown) => {
        throw this.#mapError(err, model, { timedOut: false, aborted: false, timeoutMs: 0 });
      });
    lease.release();
  }

  async version(): Promise<string> {
    const device = await this.device();
    return `node-llama-cpp ${NODE_LLAMA_CPP_VERSION} on ${device.name}`;
  }

  device(): Promise<{ name: string; memoryBytes: number }> {
    return engine.device().catch((err: unknown) => {
      throw this.#mapError(err, null, { timedOut: false, aborted: false, timeoutMs: 0 });
    });
  }

  /**
   * The folder's models; `digests` names those whose `.gguf` file's sha256 is worth reading now (default: all).
   * An Ollama blob's digest is its name, not read here: a listing stays quick, and `show` checks it before a run.
   */
  async tags(digests?: (name: string) => boolean): Promise<TagModel[]> {
    const models = this.#listed();
    return Promise.all(
      models.map(async (m) => ({
        name: m.name,
        size: m.size,
        digest: !digests || digests(m.name) ? await this.#sha256(m) : (m.sha256 ?? ''),
        parameterSize: null,
        ...listedFacts(m.path),
      })),
    );
  }

  async ps(): Promise<LoadedModel[]> {
    const path = engine.loadedPath();
    const m = path ? this.#listed().find((x) => x.path === path) : undefined;
    return m ? [{ name: m.name, size: m.size, sizeVram: 0, expiresAt: '', contextLength: null }] : [];
  }

  async show(model: string): Promise<ModelDetails> {
    const m = this.#model(model);
    const info = header(m);
    // A copy cut short (a transfer that stopped) keeps its header whole: llama.cpp would refuse it at every call.
    if (info.bytesNeeded > m.size) {
      throw new CallError('BAD_REQUEST', `Model \`${m.name}\` is cut short: ${m.path} holds ${m.size} bytes, and its header describes ${info.bytesNeeded}.`, {
        hint: 'Copy the whole model file again (or `ollama pull` it again), or take it out of the folder.',
      });
    }
    await this.#checked(m);
    const geometry = ggufGeometry(info);
    const capabilities = ['completion', ...(this.#thinks(m) ? ['thinking'] : [])];
    return { contextLength: geometry.contextLength, capabilities, kvBytesPerToken: geometry.kvBytesPerToken, family: familyOf(info) };
  }

  #listed(): EmbeddedModel[] {
    try {
      return this.models();
    } catch (err) {
      throw this.#mapError(err, null, { timedOut: false, aborted: false, timeoutMs: 0 });
    }
  }

  #mapError(err: unknown, model: string | null, ctx: { timedOut: boolean; aborted: boolean; timeoutMs: number }): CallError {
    if (err instanceof CallError) return err;
    const stopped = stoppedError(err, model ?? this.host, ctx);
    if (stopped) return stopped;
    if (err instanceof ConclaveError) {
      // Not installed, no folder: the user's to fix, said as such; a hosts check reports it instead of a host that is down.
      return new CallError('HOST_UNREACHABLE', err.message, { ...(err.hint ? { hint: err.hint } : {}), cause: err });
    }
    return new CallError('SERVER_ERROR', `llama.cpp failed on ${model ?? 'a model'} from ${this.dir}: ${errorMessage(err)}`, {
      hint: 'Check that the file is a GGUF model that this llama.cpp supports (node-llama-cpp ' + NODE_LLAMA_CPP_VERSION + ').',
      cause: err,
    });
  }
}

/** The model file's GGUF header. A file that is not one (cut short, another kind of file) is the user's to replace: said with its name and path, and never sent again. */
function header(model: EmbeddedModel): GgufInfo {
  try {
    return readGgufInfo(model.path);
  } catch (err) {
    throw new CallError('BAD_REQUEST', `Model \`${model.name}\` cannot be read as a GGUF model from ${model.path}: ${errorMessage(err)}.`, {
      hint: 'Copy the whole model file again (or `ollama pull` it again), or take it out of the folder.',
      cause: err,
    });
  }
}

/** The schema's grammar, with an optional `<think>…</think>` block before the reply (a thought holds no `<`). */
export function withThinking(gbnf: string): string {
  return `${gbnf.replace(/^root ::= /m, 'root ::= think-block? ')}think-block ::= "<think>" [^<]* "</think>"\n`;
}

/**
 * A reply that opens with `<think>…</think>`: the thought and the reply after it. With `unfinished`
 * (a thinking model's reply), a thought cut off before `</think>` is all thought, and the reply is empty.
 */
export function splitThought(text: string, unfinished = false): { thinking: string; content: string; raw: string } | null {
  const match = (unfinished ? /^\s*<think>([\s\S]*?)(?:<\/think>|$)/ : /^\s*<think>([\s\S]*?)<\/think>/).exec(text);
  return match ? { thinking: match[1]!.trim(), content: text.slice(match[0].length).trimStart(), raw: match[0] } : null;
}

/** How many of the reply's first tokens it takes to cover `bytes` bytes. */
function leadingTokens(pieces: Uint8Array[], bytes: number): number {
  let seen = 0;
  for (let i = 0; i < pieces.length; i++) {
    seen += pieces[i]!.length;
    if (seen >= bytes) return i + 1;
  }
  return pieces.length;
}

/** The chat as node-llama-cpp takes it, ending with the model's turn to fill. */
function history(messages: ChatRequest['messages']): ChatHistoryItem[] {
  const items: ChatHistoryItem[] = messages.map((m) =>
    m.role === 'system' ? { type: 'system', text: m.content } : m.role === 'user' ? { type: 'user', text: m.content } : { type: 'model', response: [m.content] },
  );
  items.push({ type: 'model', response: [] });
  return items;
}

function positiveInt(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : null;
}

function concatBytes(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const FILE_TYPES: Readonly<Record<number, string>> = { 0: 'F32', 1: 'F16', 2: 'Q4_0', 3: 'Q4_1', 7: 'Q8_0', 8: 'Q5_0', 9: 'Q5_1', 10: 'Q2_K', 11: 'Q3_K_S', 12: 'Q3_K_M', 13: 'Q3_K_L', 14: 'Q4_K_S', 15: 'Q4_K_M', 16: 'Q5_K_S', 17: 'Q5_K_M', 18: 'Q6_K', 32: 'BF16' };

/** What a listing says of a model file: its quantization and family, from its header (none for a file that is not GGUF). */
function listedFacts(path: string): { quantization: string | null; family: string | null } {
  try {
    const info = readGgufInfo(path);
    const t = info.metadata['general.file_type'];
    return { quantization: typeof t === 'number' ? (FILE_TYPES[t] ?? `type ${t}`) : null, family: familyOf(info) };
  } catch {
    return { quantization: null, family: null };
  }
}

/** The family Ollama reports for the same file (`details.family`): its architecture, as one inert line. */
function familyOf(info: GgufInfo): string | null {
  const arch = ggufGeometry(info).architecture;
  return arch === null ? null : inertLine(arch).trim().slice(0, 200) || null;
}

const servers = new Map<string, EmbeddedServer>();

/** The server for a models folder: one per folder in a process, so every caller shares its engine and slots. */
export function embeddedServer(dir: string, slots?: number, env: NodeJS.ProcessEnv = process.env): EmbeddedServer {
  let server = servers.get(dir);
  if (!server) {
    server = new EmbeddedServer(dir, slots ?? 1, { hashCache: modelHashCacheFile(env) });
    servers.set(dir, server);
  } else if (slots !== undefined) server.slots = slots;
  return server;
}
