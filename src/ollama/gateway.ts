import { Ollama } from 'ollama';
import { Agent, type Dispatcher, request as undiciRequest } from 'undici';
import { postStream } from '../backend/post-stream.js';
import type { CallMetrics } from '../engine/events.js';
import { HostError, errorMessage } from '../errors.js';
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
import { callAbort, stoppedError } from '../backend/call-control.js';
import { serverText } from '../backend/server-text.js';
import { ChatLines, refusedError, STREAM_ENDED_EARLY } from './chat-stream.js';

/**
 * Ollama sends no headers until the first token exists, after queueing, loading and prompt
 * evaluation, which can pass Node's default 300 s headers timeout for a large model on a slow
 * disk. Conclave's own per-call limit governs instead, so undici's timeouts are off.
 */
const dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 30_000 });

/** The headers ollama-js sends with a chat request, less its user agent. */
const CHAT_HEADERS = { 'content-type': 'application/json', accept: 'application/json' };

/**
 * The `fetch` the ollama client gets: undici's `request` under the few parts of a Response the
 * client reads (status, content type, JSON or text, and a body reader). It skips the WHATWG fetch
 * machinery (request cloning, body teeing, web streams), which cost more CPU per call than the rest
 * of the engine, and reads the stream as Node chunks.
 */
const fetchWithoutTimeouts = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
  const res = await undiciRequest(String(input), {
    method: (init.method ?? 'GET') as 'GET',
    headers: init.headers as Record<string, string>,
    body: (init.body as string | undefined) ?? null,
    signal: init.signal ?? undefined,
    dispatcher,
  });
  return leanResponse(res.statusCode, res.headers, res.body) as unknown as Response;
};

function leanResponse(status: number, headers: Record<string, string | string[] | undefined>, body: Dispatcher.ResponseData['body']) {
  return {
    ok: status >= 200 && status < 300,
    status,
    headers: {
      get: (name: string): string | null => {
        const v = headers[name.toLowerCase()];
        return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
      },
    },
    json: () => body.json(),
    text: () => body.text(),
    body: {
      getReader: () => {
        const chunks = body[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
        return { read: () => chunks.next(), releaseLock: () => undefined, cancel: () => chunks.return?.() };
      },
    },
  };
}

/**
 * The only code that talks to Ollama: one gateway per host. Every chat call streams
 * (non-streaming calls die on Node's 300 s headers timeout), has its own time limit,
 * and can be aborted before or after the first byte.
 */
export class Gateway implements ModelServer {
  readonly host: string;
  readonly api = 'ollama' as const;
  private readonly client: Ollama;

  #chatUrl: URL | null = null;

  constructor(host: string) {
    this.host = host;
    this.client = new Ollama({ host, fetch: fetchWithoutTimeouts });
  }

  async chat(request: ChatRequest, control: CallControl = {}): Promise<ChatResult> {
    const abort = callAbort(control);
    let content = '';
    let thinking = '';
    let thinkingTokens = 0;
    let tokens = 0;
    let result: ChatResult | null = null;
    try {
      const lines = new ChatLines((chunk) => {
        if (result !== null) return;
        const message = chunk.message as { content?: unknown; thinking?: unknown } | undefined;
        const thought = typeof message?.thinking === 'string' ? message.thinking : '';
        if (thought !== '') {
          thinking += thought;
          thinkingTokens += 1;
          tokens += 1;
          // Progress counts thinking tokens too, so a model that thinks for minutes is seen working; the answer's text is `delta`.
          control.onProgress?.({ tokens, delta: '', thought });
        }
        const delta = typeof message?.content === 'string' ? message.content : '';
        if (delta !== '') {
          content += delta;
          tokens += 1;
          control.onProgress?.({ tokens, delta });
        }
        if (chunk.done) result = { content, thinking, thinkingTokens, metrics: metricsOf(chunk) };
      });
      // Streamed from undici's callbacks, not through ollama-js (three promises per token) or a response stream.
      // The body is read to its end even after the `done` line, so the connection goes back to the pool.
      await postStream(dispatcher, {
        url: (this.#chatUrl ??= new URL(`${this.host.replace(/\/+$/, '')}/api/chat`)),
        headers: CHAT_HEADERS,
        body: JSON.stringify({
          model: request.model,
          messages: request.messages,
          options: request.options ?? {},
          ...(request.format === undefined ? {} : { format: request.format }),
          ...(request.keepAlive === undefined ? {} : { keep_alive: request.keepAlive }),
          ...(request.think === undefined ? {} : { think: request.think }),
          stream: true,
        }),
        signal: abort.controller.signal,
        onChunk: (bytes) => lines.push(bytes),
        refused: refusedError,
      });
      lines.end();
      if (result === null) throw new Error(STREAM_ENDED_EARLY);
      return result;
    } catch (err) {
      const mapped = this.mapError(err, request.model, { timedOut: abort.timedOut(), aborted: control.signal?.aborted ?? false, timeoutMs: abort.timeoutMs });
      // The text received so far is kept for the record, marked partial.
      mapped.partial = content;
      mapped.partialThinking = thinking;
      throw mapped;
    } finally {
      abort.dispose();
    }
  }

  /** Loads a model without generating (Ollama treats an empty chat as a load request). */
  async warm(model: string, options: Record<string, unknown>, keepAlive?: string | number): Promise<void> {
    await this.chat({ model, messages: [], options, ...(keepAlive === undefined ? {} : { keepAlive }) }, { timeoutMs: 300_000 });
  }

  async version(): Promise<string> {
    try {
      return (await this.client.version()).version;
    } catch (err) {
      throw this.mapError(err, null, { timedOut: false, aborted: false, timeoutMs: 0 });
    }
  }

  async tags(): Promise<TagModel[]> {
    try {
      const res = await this.client.list();
      return res.models.map((m) => ({
        name: m.name,
        size: m.size,
        digest: m.digest,
        parameterSize: m.details?.parameter_size ?? null,
        quantization: m.details?.quantization_level ?? null,
        family: m.details?.family || null,
        families: m.details?.families?.length ? m.details.families : null,
      }));
    } catch (err) {
      throw this.mapError(err, null, { timedOut: false, aborted: false, timeoutMs: 0 });
    }
  }

  async ps(): Promise<LoadedModel[]> {
    try {
      const res = await this.client.ps();
      return res.models.map((m) => {
        const extra = m as unknown as { context_length?: number };
        return {
          name: m.name,
          size: m.size,
          sizeVram: m.size_vram,
          expiresAt: String(m.expires_at),
          contextLength: typeof extra.context_length === 'number' ? extra.context_length : null,
        };
      });
    } catch (err) {
      throw this.mapError(err, null, { timedOut: false, aborted: false, timeoutMs: 0 });
    }
  }

  async show(model: string): Promise<ModelDetails> {
    try {
      const res = await this.client.show({ model });
      const info = (res.model_info ?? {}) as unknown as Record<string, unknown>;
      const field = (suffix: string): number | null => {
        for (const [key, value] of Object.entries(info)) if (key.endsWith(suffix) && typeof value === 'number') return value;
        return null;
      };
      const contextLength = field('.context_length');
      const blocks = field('.block_count');
      const kvHeads = field('.attention.head_count_kv') ?? field('.attention.head_count');
      const heads = field('.attention.head_count');
      const embedding = field('.embedding_length');
      const keyLength = field('.attention.key_length') ?? (embedding && heads ? embedding / heads : null);
      // K and V, two bytes each (f16 cache, Ollama's default).
      const kvBytesPerToken = blocks && kvHeads && keyLength ? blocks * kvHeads * keyLength * 2 * 2 : null;
      const capabilities = (res as unknown as { capabilities?: string[] }).capabilities ?? [];
      const details = res.details as Partial<typeof res.details> | undefined;
      return {
        contextLength,
        capabilities,
        kvBytesPerToken,
        family: details?.family || null,
        families: details?.families?.length ? details.families : null,
        parameterSize: details?.parameter_size || null,
        quantization: details?.quantization_level || null,
      };
    } catch (err) {
      throw this.mapError(err, model, { timedOut: false, aborted: false, timeoutMs: 0 });
    }
  }

  private mapError(
    err: unknown,
    model: string | null,
    ctx: { timedOut: boolean; aborted: boolean; timeoutMs: number },
  ): CallError {
    if (err instanceof CallError) return err;
    const stopped = stoppedError(err, model ?? this.host, ctx);
    if (stopped) return stopped;
    const e = err as { name?: string; status_code?: number; message?: string; cause?: { code?: string } };
    if (e?.name === 'ResponseError' && typeof e.status_code === 'number') {
      const status = e.status_code;
      const text = serverText(e.message ?? '');
      if (status === 404 && model === null) {
        // Ollama answers every /api route it has; a 404 on /api/tags or /api/ps means another kind of server.
        return new CallError('NOT_OLLAMA', `${this.host} answered 404 Not Found on Ollama's /api routes: it is not an Ollama server.`, {
          hint: `If it is an OpenAI-compatible server (llama-server, vLLM, LM Studio), pass \`--host ${this.host.replace(/\/+$/, '')}/v1 --api openai\`.`,
          status,
          cause: err,
        });
      }
      if (status === 404) {
        return new CallError('MODEL_MISSING', `Model \`${model}\` is not on ${this.host}.`, {
          hint: `Run \`ollama pull ${model}\` on that host.`,
          status,
          cause: err,
        });
      }
      if (status === 503) {
        return new CallError('HOST_BUSY', `${this.host} is busy: ${text}`, {
          hint: 'Too many requests are waiting for a model load; lower concurrency or raise OLLAMA_MAX_QUEUE.',
          status,
          cause: err,
        });
      }
      if (status >= 500) return new CallError('SERVER_ERROR', `${this.host} failed on ${model ?? 'a request'}: ${text}`, { status, cause: err });
      return new CallError('BAD_REQUEST', `${this.host} refused the request for ${model ?? 'a request'}: ${text}`, { status, cause: err });
    }
    const message = errorMessage(err);
    if (message === STREAM_ENDED_EARLY) {
      return new CallError('STREAM_INCOMPLETE', `${model} stopped its reply without finishing (the server ended the stream early).`, { cause: err });
    }
    if (e?.name === 'AbortError') return new CallError('CALL_ABORTED', `The call to ${model ?? this.host} was stopped.`, { cause: err });
    if (message === 'fetch failed' || /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ECONNRESET|socket/i.test(`${message} ${e?.cause?.code ?? ''} ${(e as { code?: string })?.code ?? ''}`)) {
      return new CallError('HOST_UNREACHABLE', `Cannot reach Ollama at ${this.host}.`, {
        hint: 'Start it with `ollama serve`, or point `--host` / OLLAMA_HOST at a running server.',
        cause: err,
      });
    }
    // A line `{"error": ...}` inside a 200 stream: the model failed mid-reply.
    return new CallError('STREAM_ERROR', `${model ?? this.host} failed mid-reply: ${serverText(message)}`, { cause: err });
  }
}

function metricsOf(chunk: Record<string, unknown>): CallMetrics {
  const num = (key: string): number | null => (typeof chunk[key] === 'number' ? (chunk[key] as number) : null);
  return {
    promptTokens: num('prompt_eval_count'),
    completionTokens: num('eval_count'),
    totalDurationNs: num('total_duration'),
    loadDurationNs: num('load_duration'),
    promptEvalDurationNs: num('prompt_eval_duration'),
    evalDurationNs: num('eval_duration'),
    doneReason: typeof chunk.done_reason === 'string' ? chunk.done_reason : null,
  };
}

export function unreachable(host: string, cause?: unknown): HostError {
  return new HostError('HOST_UNREACHABLE', `Cannot reach Ollama at ${host}.`, {
    hint: 'Start it with `ollama serve`, or point `--host` / OLLAMA_HOST at a running server.',
    cause,
  });
}
