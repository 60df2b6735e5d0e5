import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { generateFromSchema, schemaGrammarError } from './generate.js';
import {
  type Attachment,
  CanceledError,
  type ModelSpec,
  QueueFullError,
  type RunnerOptions,
  Scheduler,
} from './scheduler.js';
import { OpenAIRequestError, openAIError, openAIWire, toOllamaChat } from './openai.js';
import { type Wire, ollamaWire, sendJson } from './wire.js';

/** A model the simulator serves. */
export interface SimModel {
  name: string;
  /** Weights on disk, in bytes. Default 4.7e9. */
  sizeBytes?: number;
  /** Trained context length; requested num_ctx is capped at it. Default 8192. */
  contextLength?: number;
  family?: string;
  parameterSize?: string;
  quantization?: string;
  /** Default ['completion']; a model with 'thinking' thinks before it answers unless sent `think: false`. */
  capabilities?: string[];
  /** Tokens of thinking streamed before each answer of a thinking model (counted against num_predict). Default 1500. */
  thinkingTokens?: number;
  /** Default: sha256 hex of the name and the other fields above, so a model served differently has another digest, as a different file would. */
  digest?: string;
}

/** What a responder sees: one chat or generate call that asks for generation. */
export interface SimRequest {
  model: string;
  /** The messages the model sees: history that overflows num_ctx is already dropped, as Ollama does. */
  messages: { role: string; content: string }[];
  format: unknown;
  options: Record<string, unknown>;
  stream: boolean;
  keepAlive: unknown;
  /** `think` as the request sent it (absent: the model's default). */
  think?: unknown;
  /** 0-based across the server, counting only calls that reach the responder. */
  index: number;
  /** 0-based per model, counting only calls that reach the responder. */
  modelIndex: number;
}

/**
 * A reply: a plain string is the content. In the object form, an `error` with
 * `status` (or alone, then 500) fails before the first byte; with
 * `failAfterTokens` it arrives as a trailing `{"error"}` line under 200 after
 * that many content chunks. A missing `content` means the default reply.
 */
export type SimReply =
  | string
  | {
      content?: string;
      error?: string;
      status?: number;
      failAfterTokens?: number;
      silentStop?: boolean;
      delayMs?: number;
      doneReason?: string;
      /** The thinking streamed before the content (a thinking model only); default: generated words, thinkingTokens long. */
      thinking?: string;
      /** The answer lands at the end of the thinking and the content stays empty, as in Ollama's bug #12831. */
      answerInThinking?: boolean;
    };

export type Responder = (req: SimRequest) => SimReply | Promise<SimReply>;

export interface SimOptions {
  /** Default 0: an ephemeral port on 127.0.0.1. */
  port?: number;
  models: SimModel[];
  /** Default Infinity. */
  vramBytes?: number;
  /** Slots per loaded model (OLLAMA_NUM_PARALLEL). Default 1. */
  numParallel?: number;
  /** Default 3. */
  maxLoadedModels?: number;
  /** Requests that may wait for a load (OLLAMA_MAX_QUEUE). Default 512. */
  maxQueue?: number;
  loadMs?: number;
  promptMsPerToken?: number;
  tokenMs?: number;
  respond?: Responder;
  /** Reported by /api/version. Default '0.13.0'. */
  version?: string;
  /**
   * `ollama` (default): Ollama's API, with its OpenAI-compatible /v1 beside it, as Ollama serves.
   * `openai`: only /v1 (and llama-server's `/props` with the slot count), as vLLM or llama-server
   * serve: /v1/models gives each model's `max_model_len`, and /api answers 404.
   */
  api?: 'ollama' | 'openai';
  /** When set, every /v1 request must carry `Authorization: Bearer <apiKey>` (vLLM's --api-key); else 401. */
  apiKey?: string;
  /** Sees each /v1/chat/completions request as it arrived (body and Authorization header), before anything is checked. */
  observe?: (request: { path: string; body: Record<string, unknown>; authorization: string | undefined }) => void;
}

export interface SimModelCounters {
  requests: number;
  /** Every runner start, reloads included. */
  loads: number;
  /** Restarts of a loaded model because num_ctx, num_gpu, num_batch or num_thread changed. */
  reloads: number;
  /** Unloads forced by VRAM or maxLoadedModels; keep_alive expiry and reloads do not count. */
  evictions: number;
  inFlight: number;
  peakInFlight: number;
}

export interface SimCounters {
  requests: number;
  loads: number;
  reloads: number;
  evictions: number;
  perModel: Record<string, SimModelCounters>;
}

export interface SimHandle {
  /** http://127.0.0.1:PORT */
  url: string;
  port: number;
  counters(): SimCounters;
  resetCounters(): void;
  /** Configured names of the models loaded now. */
  loaded(): string[];
  close(): Promise<void>;
}

const DEFAULT_NUM_CTX = 4096;
const DEFAULT_KEEP_ALIVE_MS = 5 * 60_000;
// Ollama's "forever" is time.Now().Add(math.MaxInt64): about 292 years ahead.
const FOREVER_MS = 292 * 365.25 * 24 * 3600_000;

type ReplyObject = Exclude<SimReply, string>;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Starts an HTTP server on 127.0.0.1 that speaks Ollama's API closely enough
 * for the real `ollama` client: streamed NDJSON, errors with Ollama's statuses
 * and texts, and a scheduler with slots, serialized loads, VRAM-driven
 * eviction and option-driven reloads.
 */
export async function startSimulator(options: SimOptions): Promise<SimHandle> {
  const sim = new Simulator(options);
  return sim.listen(options.port ?? 0);
}

class Simulator {
  private readonly models = new Map<string, ModelSpec>();
  private readonly scheduler: Scheduler;
  private readonly server = createServer((req, res) => void this.handle(req, res));
  private readonly live = new Set<AbortController>();
  private readonly modelCalls = new Map<string, number>();
  private readonly startedAt = new Date();
  private calls = 0;

  constructor(private readonly options: SimOptions) {
    for (const model of options.models) {
      const spec = toSpec(model);
      this.models.set(spec.canonical, spec);
    }
    // A vLLM or llama-server process holds its models from start to end: nothing loads or evicts.
    const resident = options.api === 'openai';
    this.scheduler = new Scheduler({
      vramBytes: resident ? Number.POSITIVE_INFINITY : (options.vramBytes ?? Number.POSITIVE_INFINITY),
      numParallel: Math.max(1, options.numParallel ?? 1),
      maxLoadedModels: resident ? Math.max(1, options.models.length) : (options.maxLoadedModels ?? 3),
      maxQueue: options.maxQueue ?? 512,
      loadMs: resident ? 0 : (options.loadMs ?? 0),
      defaultKeepAliveMs: DEFAULT_KEEP_ALIVE_MS,
    });
    for (const spec of this.models.values()) this.scheduler.stats(spec);
  }

  listen(port: number): Promise<SimHandle> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        const { port: bound } = this.server.address() as AddressInfo;
        resolve({
          url: `http://127.0.0.1:${bound}`,
          port: bound,
          counters: () => this.counters(),
          resetCounters: () => this.scheduler.resetCounters(),
          loaded: () => this.scheduler.loadedNames(),
          close: () => this.close(),
        });
      });
    });
  }

  private counters(): SimCounters {
    const { requests, perModel } = this.scheduler.counters();
    let loads = 0;
    let reloads = 0;
    let evictions = 0;
    for (const stats of Object.values(perModel)) {
      loads += stats.loads;
      reloads += stats.reloads;
      evictions += stats.evictions;
    }
    return { requests, loads, reloads, evictions, perModel };
  }

  private close(): Promise<void> {
    this.scheduler.close();
    for (const controller of this.live) controller.abort();
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const controller = new AbortController();
    this.live.add(controller);
    // 'close' before the response ended means the client went away.
    res.on('close', () => {
      this.live.delete(controller);
      if (!res.writableEnded) controller.abort();
    });
    try {
      await this.route(req, res, controller.signal);
    } catch (error) {
      if (res.destroyed) return;
      if (res.headersSent) {
        res.end();
        return;
      }
      const status = error instanceof HttpError || error instanceof OpenAIRequestError ? error.status : 500;
      const message = error instanceof Error ? error.message : String(error);
      if ((req.url ?? '').startsWith('/v1/')) openAIError(res, status, message);
      else sendJson(res, status, { error: message });
    }
  }

  private async route(req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://sim').pathname;
    const method = req.method ?? 'GET';
    const read = method === 'GET' || method === 'HEAD';
    if (path.startsWith('/v1/')) return this.routeOpenAI(req, res, path, method, signal);
    if (this.options.api === 'openai') {
      if (path === '/props' && method === 'GET') return sendJson(res, 200, { total_slots: Math.max(1, this.options.numParallel ?? 1), model_path: [...this.models.keys()][0] ?? '' });
      return openAIError(res, 404, `route ${method} ${path} not found`);
    }
    if (path === '/' && read) {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(method === 'HEAD' ? undefined : 'Ollama is running');
      return;
    }
    if (path === '/api/version' && read) return sendJson(res, 200, { version: this.options.version ?? '0.13.0' });
    if (path === '/api/tags' && read) return sendJson(res, 200, this.tags());
    if (path === '/api/ps' && method === 'GET') return sendJson(res, 200, this.ps());
    if (method === 'POST' && path === '/api/show') return sendJson(res, 200, this.show(await readBody(req, 'ShowRequest')));
    if (method === 'POST' && path === '/api/chat') {
      return this.complete('chat', await readBody(req, 'ChatRequest'), ollamaWire(res), signal);
    }
    if (method === 'POST' && path === '/api/generate') {
      return this.complete('generate', await readBody(req, 'GenerateRequest'), ollamaWire(res), signal);
    }
    // Gin's answer for unknown routes and methods.
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('404 page not found');
  }

  private async routeOpenAI(req: IncomingMessage, res: ServerResponse, path: string, method: string, signal: AbortSignal): Promise<void> {
    const body = method === 'POST' ? await readBody(req, 'ChatCompletionRequest') : {};
    if (path === '/v1/chat/completions') this.options.observe?.({ path, body, authorization: req.headers.authorization });
    if (this.options.apiKey !== undefined && req.headers.authorization !== `Bearer ${this.options.apiKey}`) {
      return openAIError(res, 401, 'Incorrect API key provided.', 'invalid_api_key');
    }
    if (path === '/v1/models' && method === 'GET') {
      const created = Math.floor(this.startedAt.getTime() / 1000);
      return sendJson(res, 200, {
        object: 'list',
        data: [...this.models.values()].map((spec) => ({
          id: spec.canonical,
          object: 'model',
          created,
          owned_by: this.options.api === 'openai' ? 'vllm' : 'library',
          ...(this.options.api === 'openai' ? { max_model_len: spec.contextLength } : {}),
        })),
      });
    }
    if (path === '/v1/chat/completions' && method === 'POST') {
      const { chat, includeUsage } = toOllamaChat(body);
      if (typeof chat.model === 'string' && !this.models.has(canonicalName(chat.model))) {
        return openAIError(res, 404, `The model \`${chat.model}\` does not exist.`, 'model_not_found');
      }
      return this.complete('chat', chat, openAIWire(res, { includeUsage }), signal);
    }
    return openAIError(res, 404, `route ${method} ${path} not found`);
  }

  private lookup(name: string): ModelSpec {
    const spec = this.models.get(canonicalName(name));
    if (!spec) throw new HttpError(404, `model '${name}' not found`);
    return spec;
  }

  private tags(): unknown {
    return {
      models: [...this.models.values()].map((spec) => ({
        name: spec.canonical,
        model: spec.canonical,
        modified_at: this.startedAt.toISOString(),
        size: spec.sizeBytes,
        digest: spec.digest,
        details: details(spec),
      })),
    };
  }

  private ps(): unknown {
    const now = Date.now();
    const rows = this.scheduler.loadedInfo().map((info) => ({
      remaining: info.expiresAt - now,
      row: {
        name: info.model.canonical,
        model: info.model.canonical,
        size: info.sizeBytes,
        digest: info.model.digest,
        details: details(info.model),
        expires_at: rfc3339(Number.isFinite(info.expiresAt) ? info.expiresAt : now + FOREVER_MS),
        size_vram: info.vramBytes,
        context_length: info.options.numCtx,
      },
    }));
    rows.sort((a, b) => b.remaining - a.remaining);
    return { models: rows.map((r) => r.row) };
  }

  private show(body: Record<string, unknown>): unknown {
    checkTypes(body, 'ShowRequest', { model: 'string', name: 'string', verbose: 'bool' });
    const name = (body.model as string | undefined) || (body.name as string | undefined) || '';
    if (name === '') throw new HttpError(400, 'model is required');
    const spec = this.lookup(name);
    const parameters: [string, string][] = [
      ['stop', '"<|im_end|>"'],
      ['temperature', '0.7'],
    ];
    const template = '{{ if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}{{ .Prompt }}';
    return {
      modelfile: [
        '# Modelfile generated by "ollama show"',
        `FROM /root/.ollama/models/blobs/sha256-${spec.digest}`,
        `TEMPLATE """${template}"""`,
        ...parameters.map(([key, value]) => `PARAMETER ${key} ${value}`),
        '',
      ].join('\n'),
      parameters: parameters.map(([key, value]) => `${key.padEnd(30)} ${value}`).join('\n'),
      template,
      details: details(spec),
      model_info: {
        'general.architecture': spec.family,
        'general.file_type': 15,
        'general.parameter_count': parameterCount(spec.parameterSize),
        'general.quantization_version': 2,
        [`${spec.family}.attention.head_count`]: 32,
        // 32 blocks × 4 KV heads × key length 4 × (K and V) × 2 bytes = the simulator's 2048 KV bytes per token.
        [`${spec.family}.attention.head_count_kv`]: 4,
        [`${spec.family}.attention.key_length`]: 4,
        [`${spec.family}.block_count`]: 32,
        [`${spec.family}.context_length`]: spec.contextLength,
        [`${spec.family}.embedding_length`]: 4096,
      },
      capabilities: spec.capabilities,
      modified_at: this.startedAt.toISOString(),
    };
  }

  private async complete(
    kind: 'chat' | 'generate',
    body: Record<string, unknown>,
    wire: Wire,
    signal: AbortSignal,
  ): Promise<void> {
    const started = process.hrtime.bigint();
    const struct = kind === 'chat' ? 'ChatRequest' : 'GenerateRequest';
    checkTypes(body, struct, {
      model: 'string',
      stream: 'bool',
      options: 'object',
      ...(kind === 'chat' ? { messages: 'array', tools: 'array' } : { prompt: 'string', system: 'string', raw: 'bool' }),
    });
    const keepAliveMs = parseKeepAlive(body.keep_alive);
    const messages = kind === 'chat' ? parseMessages(body.messages) : promptMessages(body);
    const name = typeof body.model === 'string' ? body.model : '';
    if (name === '' && kind === 'chat') throw new HttpError(400, 'model is required');
    const stream = body.stream !== false;
    const loadOnly = kind === 'chat' ? messages.length === 0 : typeof body.prompt !== 'string' || body.prompt === '';

    if (loadOnly && keepAliveMs === 0) {
      const spec = this.lookup(name);
      this.scheduler.countRequest(spec);
      this.scheduler.expire(spec);
      return wire.json(200, this.finalShape(kind, name, '', { done_reason: 'unload' }));
    }

    const spec = this.lookup(name);
    this.scheduler.countRequest(spec);
    checkCapabilities(kind, spec, body);
    const options = isRecord(body.options) ? body.options : {};
    checkOptions(options);
    const runnerOptions = toRunnerOptions(options, spec);
    const formatError = validateFormat(body.format);

    let visible = messages;
    let reply: ReplyObject = {};
    let index = -1;
    if (!loadOnly && formatError === undefined) {
      visible = truncateToContext(messages, runnerOptions.numCtx);
      index = this.calls++;
      const modelIndex = this.modelCalls.get(spec.name) ?? 0;
      this.modelCalls.set(spec.name, modelIndex + 1);
      const responded = this.options.respond
        ? await this.options.respond({
            model: name,
            messages: visible.map((m) => ({ ...m })),
            format: body.format,
            options: { ...options },
            stream,
            keepAlive: body.keep_alive,
            ...(body.think === undefined ? {} : { think: body.think }),
            index,
            modelIndex,
          })
        : {};
      reply = typeof responded === 'string' ? { content: responded } : (responded ?? {});
    }

    let attachment: Attachment;
    try {
      attachment = await this.scheduler.attach(spec, runnerOptions, keepAliveMs, signal);
    } catch (error) {
      if (error instanceof QueueFullError) throw new HttpError(503, error.message);
      if (error instanceof CanceledError) throw new HttpError(499, error.message);
      throw error;
    }
    const scheduled = process.hrtime.bigint();
    try {
      const loadNs = attachment.queued ? Math.max(1, Number(scheduled - started)) : 0;
      if (loadOnly) {
        return wire.json(200, this.finalShape(kind, name, '', { done_reason: 'load' }));
      }
      // Ollama checks format inside the runner's Completion, after the model is loaded.
      if (formatError !== undefined) throw new HttpError(500, formatError);
      try {
        await attachment.acquireSlot(signal);
      } catch {
        throw new HttpError(499, 'request canceled');
      }
      if (reply.delayMs && !(await sleep(reply.delayMs, signal))) return;
      if (reply.error !== undefined && reply.failAfterTokens === undefined) {
        throw new HttpError(reply.status ?? 500, reply.error);
      }
      const promptTokens = Math.max(1, Math.ceil(visible.reduce((n, m) => n + m.content.length, 0) / 4));
      const promptStart = process.hrtime.bigint();
      if (!(await sleep((this.options.promptMsPerToken ?? 0) * promptTokens, signal))) return;
      const promptNs = Math.max(1, Number(process.hrtime.bigint() - promptStart));

      const content = reply.content ?? this.defaultContent(body.format, spec, index, requestSeed(name, visible, body.format, options));
      // A thinking model thinks first unless sent `think: false`; num_predict bounds thinking and answer together.
      const thinks = (spec.thinkingTokens ?? 0) > 0 && body.think !== false;
      let thought = thinks ? (reply.thinking ?? thinkingText(spec.thinkingTokens ?? 0, index)) : '';
      let answer = content;
      if (thinks && reply.answerInThinking) {
        thought += answer;
        answer = '';
      }
      let thinkingChunks = splitIntoChunks(thought);
      let chunks = splitIntoChunks(answer);
      let doneReason = reply.doneReason ?? 'stop';
      const numPredict = typeof options.num_predict === 'number' ? options.num_predict : -1;
      if (numPredict > 0 && thinkingChunks.length + chunks.length > numPredict) {
        thinkingChunks = thinkingChunks.slice(0, numPredict);
        chunks = chunks.slice(0, numPredict - thinkingChunks.length);
        doneReason = reply.doneReason ?? 'length';
      }
      const failAt = reply.error !== undefined ? Math.min(reply.failAfterTokens ?? 0, chunks.length) : undefined;
      const metrics = (evalCount: number, evalNs: number) => ({
        done_reason: doneReason,
        context: kind === 'generate' && body.raw !== true ? contextTokens(promptTokens + evalCount) : undefined,
        total_duration: Number(process.hrtime.bigint() - started),
        load_duration: loadNs,
        prompt_eval_count: promptTokens,
        prompt_eval_duration: promptNs,
        eval_count: evalCount,
        eval_duration: evalCount > 0 ? Math.max(1, evalNs) : 0,
      });

      const tokenMs = this.options.tokenMs ?? 0;
      const evalStart = process.hrtime.bigint();
      const limit = failAt ?? chunks.length;
      let sent = '';
      for (const piece of thinkingChunks) {
        if (!(await sleep(tokenMs, signal))) return;
        if (stream) await wire.line(this.chunkShape(kind, name, '', piece));
      }
      for (let i = 0; i < limit; i++) {
        if (!(await sleep(tokenMs, signal))) return;
        const piece = chunks[i]!;
        sent += piece;
        if (stream) await wire.line(this.chunkShape(kind, name, piece));
      }
      if (signal.aborted) return;
      const evalNs = Number(process.hrtime.bigint() - evalStart);

      if (failAt !== undefined) {
        // After the first byte the status is already 200: the error becomes the last line.
        if (!stream) throw new HttpError(500, reply.error ?? 'error');
        await wire.line({ error: reply.error });
        wire.end();
        return;
      }
      if (reply.silentStop) {
        if (!stream) return wire.json(200, this.chunkShape(kind, name, sent));
        wire.cut();
        return;
      }
      const final = this.finalShape(kind, name, stream ? '' : sent, metrics(thinkingChunks.length + chunks.length, evalNs));
      if (!stream) {
        if (thinks) {
          if (kind === 'chat') (final.message as Record<string, unknown>).thinking = thinkingChunks.join('');
          else final.thinking = thinkingChunks.join('');
        }
        return wire.json(200, final);
      }
      await wire.line(final);
      wire.end();
    } finally {
      attachment.release();
    }
  }

  private defaultContent(format: unknown, spec: ModelSpec, index: number, seed: number): string {
    // Seeded by the request, not by how many came before: the same request gets the same reply.
    if (isRecord(format)) return JSON.stringify(generateFromSchema(format, seed));
    if (format === 'json') return '{}';
    const n = index + 1;
    return `Reply ${n} from ${spec.name}: on balance the evidence favours a cautious, staged approach.`;
  }

  private chunkShape(kind: 'chat' | 'generate', model: string, piece: string, thinking?: string): Record<string, unknown> {
    const base = { model, created_at: createdAt() };
    const thought = thinking === undefined ? {} : { thinking };
    return kind === 'chat'
      ? { ...base, message: { role: 'assistant', content: piece, ...thought }, done: false }
      : { ...base, response: piece, ...thought, done: false };
  }

  private finalShape(
    kind: 'chat' | 'generate',
    model: string,
    content: string,
    extra: Record<string, unknown>,
  ): Record<string, unknown> {
    const out: Record<string, unknown> = { ...this.chunkShape(kind, model, content), done: true };
    // Go's omitempty: zero metrics and absent fields are left out.
    for (const [key, value] of Object.entries(extra)) {
      if (value === undefined || value === 0 || value === '') continue;
      out[key] = value;
    }
    return out;
  }
}

function toSpec(model: SimModel): ModelSpec {
  const sizeBytes = model.sizeBytes ?? 4.7e9;
  return {
    name: model.name,
    canonical: canonicalName(model.name),
    sizeBytes,
    contextLength: model.contextLength ?? 8192,
    family: model.family ?? familyByName(model.name),
    // A Q4_K_M file holds roughly 0.6 bytes per parameter.
    parameterSize: model.parameterSize ?? `${(sizeBytes / 0.6e9).toFixed(1)}B`,
    quantization: model.quantization ?? 'Q4_K_M',
    capabilities: model.capabilities ?? ['completion'],
    thinkingTokens: model.capabilities?.includes('thinking') ? (model.thinkingTokens ?? 1500) : 0,
    digest: model.digest ?? createHash('sha256').update(JSON.stringify([model.name, sizeBytes, model.contextLength ?? 8192, model.family, model.parameterSize, model.quantization, model.capabilities])).digest('hex'),
  };
}

/** Ollama names are case-insensitive and an untagged name means `:latest`. */
export function canonicalName(name: string): string {
  const lower = name.trim().toLowerCase();
  const last = lower.slice(lower.lastIndexOf('/') + 1);
  return last.includes(':') ? lower : `${lower}:latest`;
}

/**
 * The family the simulator reports for a model whose script names none, read from its name
 * as Ollama reports families (`qwen2.5:7b` → qwen2, `llama3.1:8b` → llama, `gemma2:9b` → gemma2).
 */
export function familyByName(name: string): string {
  const base = (name.split('/').at(-1) ?? name).split(':')[0]!.toLowerCase();
  const m = /^([a-z]+)(\d+)?/.exec(base);
  if (!m) return 'llama';
  return m[1] === 'llama' || !m[2] ? m[1]! : `${m[1]}${m[2]}`;
}

function details(spec: ModelSpec): Record<string, unknown> {
  return {
    parent_model: '',
    format: 'gguf',
    family: spec.family,
    families: [spec.family],
    parameter_size: spec.parameterSize,
    quantization_level: spec.quantization,
  };
}

function parameterCount(size: string): number {
  const match = /^([\d.]+)\s*([KMBT]?)/i.exec(size);
  if (!match) return 0;
  const scale: Record<string, number> = { K: 1e3, M: 1e6, B: 1e9, T: 1e12 };
  return Math.round(Number(match[1]) * (scale[match[2]!.toUpperCase()] ?? 1));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function goKind(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'boolean') return 'bool';
  return typeof value;
}

const GO_TYPES: Record<string, string> = {
  string: 'string',
  bool: 'bool',
  array: '[]api.Message',
  object: 'map[string]interface {}',
};

/** Mimics encoding/json's type errors for the fields the simulator reads. */
function checkTypes(body: Record<string, unknown>, struct: string, fields: Record<string, string>): void {
  for (const [field, expected] of Object.entries(fields)) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    const actual = goKind(value);
    if (actual === expected) continue;
    const goType = field === 'tools' ? 'api.Tools' : (GO_TYPES[expected] ?? expected);
    throw new HttpError(400, `json: cannot unmarshal ${actual} into Go struct field ${struct}.${field} of type ${goType}`);
  }
}

async function readBody(req: IncomingMessage, struct: string): Promise<Record<string, unknown>> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  const text = Buffer.concat(parts).toString('utf8');
  if (text.trim() === '') throw new HttpError(400, 'missing request body');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new HttpError(400, goSyntaxError(text));
  }
  if (!isRecord(parsed)) {
    throw new HttpError(400, `json: cannot unmarshal ${goKind(parsed)} into Go value of type api.${struct}`);
  }
  return parsed;
}

function goSyntaxError(text: string): string {
  // A best effort at encoding/json's wording; clients only show it.
  const first = text.trimStart()[0] ?? '';
  if (!'{["-0123456789tfn'.includes(first)) return `invalid character '${first}' looking for beginning of value`;
  return 'unexpected EOF';
}

function parseMessages(raw: unknown): { role: string; content: string }[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((item) => {
    if (!isRecord(item)) {
      throw new HttpError(400, `json: cannot unmarshal ${goKind(item)} into Go struct field ChatRequest.messages of type api.Message`);
    }
    for (const field of ['role', 'content']) {
      const value = item[field];
      if (value !== undefined && value !== null && typeof value !== 'string') {
        throw new HttpError(
          400,
          `json: cannot unmarshal ${goKind(value)} into Go struct field ChatRequest.messages.${field} of type string`,
        );
      }
    }
    return { role: String(item.role ?? '').toLowerCase(), content: String(item.content ?? '') };
  });
}

function promptMessages(body: Record<string, unknown>): { role: string; content: string }[] {
  const out: { role: string; content: string }[] = [];
  if (typeof body.system === 'string' && body.system !== '') out.push({ role: 'system', content: body.system });
  if (typeof body.prompt === 'string' && body.prompt !== '') out.push({ role: 'user', content: body.prompt });
  return out;
}

const GO_UNITS_NS: Record<string, number> = { ns: 1, us: 1e3, 'µs': 1e3, 'μs': 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** Go's time.ParseDuration, returning nanoseconds or throwing Go's error text. */
export function parseGoDuration(text: string): number {
  const invalid = () => new Error(`time: invalid duration ${JSON.stringify(text)}`);
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    sign = rest.startsWith('-') ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') throw invalid();
  let total = 0;
  while (rest !== '') {
    const number = /^(\d*)(\.\d*)?/.exec(rest)!;
    const [whole, int = '', frac = ''] = number;
    if (int === '' && frac.length <= 1) throw invalid();
    rest = rest.slice(whole.length);
    const unit = /^[^\d.]+/.exec(rest)?.[0];
    if (unit === undefined) throw new Error(`time: missing unit in duration ${JSON.stringify(text)}`);
    const scale = GO_UNITS_NS[unit];
    if (scale === undefined) throw new Error(`time: unknown unit ${JSON.stringify(unit)} in duration ${JSON.stringify(text)}`);
    total += Number(`${int || '0'}${frac}`) * scale;
    rest = rest.slice(unit.length);
  }
  return sign * total;
}

/** keep_alive as Ollama's api.Duration decodes it: ms, Infinity for negative, undefined when absent. */
function parseKeepAlive(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  let ns: number;
  if (typeof value === 'number') {
    ns = value * 1e9;
  } else if (typeof value === 'string') {
    try {
      ns = parseGoDuration(value);
    } catch (error) {
      throw new HttpError(400, (error as Error).message);
    }
  } else {
    const goType = typeof value === 'boolean' ? 'bool' : Array.isArray(value) ? '[]interface {}' : 'map[string]interface {}';
    throw new HttpError(400, `Unsupported type: '${goType}'`);
  }
  return ns < 0 ? Number.POSITIVE_INFINITY : ns / 1e6;
}

const INT_OPTIONS = ['num_ctx', 'num_batch', 'num_gpu', 'main_gpu', 'num_thread', 'num_keep', 'seed', 'num_predict', 'top_k', 'repeat_last_n'];
const FLOAT_OPTIONS = ['temperature', 'top_p', 'min_p', 'typical_p', 'repeat_penalty', 'presence_penalty', 'frequency_penalty'];

/** Options.FromMap: known keys must have the right JSON type; unknown keys are ignored. */
function checkOptions(options: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(options)) {
    if (value === null || value === undefined) continue;
    if (INT_OPTIONS.includes(key) && typeof value !== 'number') {
      throw new HttpError(500, `option "${key}" must be of type integer`);
    }
    if (FLOAT_OPTIONS.includes(key) && typeof value !== 'number') {
      throw new HttpError(500, `option "${key}" must be of type float32`);
    }
    if ((key === 'use_mmap' || key === 'numa') && typeof value !== 'boolean') {
      throw new HttpError(500, `option "${key}" must be of type boolean`);
    }
    if (key === 'stop' && !(Array.isArray(value) && value.every((s) => typeof s === 'string'))) {
      throw new HttpError(500, `option "${key}" must be of type array of strings`);
    }
  }
}

function toRunnerOptions(options: Record<string, unknown>, spec: ModelSpec): RunnerOptions {
  const int = (key: string, fallback: number) =>
    typeof options[key] === 'number' ? Math.trunc(options[key] as number) : fallback;
  const requested = int('num_ctx', DEFAULT_NUM_CTX);
  return {
    numCtx: Math.max(1, Math.min(requested, spec.contextLength)),
    numGpu: int('num_gpu', -1),
    numBatch: int('num_batch', 512),
    numThread: int('num_thread', 0),
  };
}

function checkCapabilities(kind: 'chat' | 'generate', spec: ModelSpec, body: Record<string, unknown>): void {
  const has = (capability: string) => spec.capabilities.includes(capability);
  const model = String(body.model);
  if (!has('completion')) throw new HttpError(400, `"${model}" does not support ${kind}`);
  if (Array.isArray(body.tools) && body.tools.length > 0 && !has('tools')) {
    throw new HttpError(400, `registry.ollama.ai/library/${spec.canonical} does not support tools`);
  }
  const think = body.think;
  if ((think === true || (typeof think === 'string' && think !== '')) && !has('thinking')) {
    throw new HttpError(400, `"${model}" does not support thinking`);
  }
}

/** A seed fixed by what a request asks: model, messages, schema and sampling seed. */
function requestSeed(model: string, messages: readonly { role: string; content: string }[], format: unknown, options: Record<string, unknown>): number {
  const hash = createHash('sha256').update(JSON.stringify([model, messages, format ?? null, options.seed ?? null]));
  return hash.digest().readUInt32BE(0);
}

/** The error Ollama's runner gives for `format`, or undefined when it is acceptable. */
function validateFormat(format: unknown): string | undefined {
  if (format === undefined || format === null || format === '' || format === 'json') return undefined;
  if (!isRecord(format)) {
    const raw = JSON.stringify(format);
    return `invalid format: ${JSON.stringify(raw)}; expected "json" or a valid JSON Schema object`;
  }
  return schemaGrammarError(format) === undefined ? undefined : 'invalid JSON schema in format';
}

/** Drops the oldest non-system messages until the prompt fits num_ctx, always keeping the last one. */
function truncateToContext(
  messages: { role: string; content: string }[],
  numCtx: number,
): { role: string; content: string }[] {
  const tokens = (list: { content: string }[]) => Math.ceil(list.reduce((n, m) => n + m.content.length, 0) / 4);
  let kept = messages;
  let start = 0;
  while (tokens(kept) > numCtx && start < messages.length - 1) {
    if (messages[start]!.role !== 'system') {
      const dropped = messages[start];
      kept = kept.filter((m) => m !== dropped);
    }
    start++;
  }
  return kept;
}

/**
 * Splits content into token-like pieces whose concatenation is exactly the
 * content: each word with its leading whitespace, long runs cut into six
 * characters at a time (so compact JSON still streams in several chunks).
 */
export function splitIntoChunks(content: string): string[] {
  const out: string[] = [];
  for (const piece of content.match(/\s*\S+|\s+$/g) ?? []) {
    const chars = Array.from(piece);
    if (chars.length <= 10) {
      out.push(piece);
      continue;
    }
    for (let i = 0; i < chars.length; i += 6) out.push(chars.slice(i, i + 6).join(''));
  }
  return out;
}

function contextTokens(count: number): number[] {
  return Array.from({ length: count }, (_, i) => ((i * 7919) % 32000) + 1);
}

/** Resolves true after ms, or false as soon as the signal fires. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (ms <= 0) {
    // A zero wait still yields to I/O, so a disconnect between chunks is noticed.
    return new Promise((resolve) => setImmediate(() => resolve(!signal.aborted)));
  }
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function createdAt(): string {
  // performance.now() carries sub-millisecond digits that Date lacks.
  const now = performance.timeOrigin + performance.now();
  const ms = Math.floor(now);
  const nanos = (ms % 1000) * 1e6 + Math.floor((now - ms) * 1e6);
  return formatTime(ms, nanos);
}

function rfc3339(epochMs: number): string {
  const ms = Math.floor(epochMs);
  return formatTime(ms, (ms % 1000) * 1e6);
}

/** RFC3339Nano as Go writes it: UTC, trailing zeros of the fraction trimmed, no fraction when zero. */
function formatTime(epochMs: number, nanosOfSecond: number): string {
  const seconds = new Date(epochMs).toISOString().slice(0, 19);
  const fraction = String(nanosOfSecond).padStart(9, '0').replace(/0+$/, '');
  return `${seconds}${fraction ? `.${fraction}` : ''}Z`;
}

const THINKING_WORDS = ['first', 'the', 'question', 'asks', 'which', 'option', 'holds', 'so', 'weigh', 'cost', 'risk', 'and', 'time', 'then', 'check', 'each', 'claim'];

/** Words a simulated thinking model streams before answering: about `tokens` tokens, varied by the request number. */
export function thinkingText(tokens: number, index: number): string {
  const words: string[] = [];
  for (let i = 0; i < tokens; i++) words.push(THINKING_WORDS[(i * 7 + index) % THINKING_WORDS.length]!);
  return words.join(' ');
}
