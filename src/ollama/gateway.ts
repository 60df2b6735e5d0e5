import { STATUS_CODES } from 'node:http';
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
import { brokenConnection, callAbort, cutMidReply, FACTS_TIMEOUT_MS, retryAfterMs, silentHost, stoppedError } from '../backend/call-control.js';
import { serverText } from '../backend/server-text.js';
import { inertLine } from '../render/inert.js';
import { ChatLines, refusedError, STREAM_ENDED_EARLY } from './chat-stream.js';

/**
 * Ollama sends no headers until the first token exists, after queueing, loading and prompt
 * evaluation, which can pass Node's default 300 s headers timeout for a large model on a slow
 * disk. Conclave's own per-call limit governs instead, so undici's timeouts are off.
 */
const AGENT_OPTIONS = { headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 30_000 };
const dispatcher = new Agent(AGENT_OPTIONS);

/** The headers ollama-js sends with a chat request, less its user agent. */
const CHAT_HEADERS = { 'content-type': 'application/json', accept: 'application/json' };

/**
 * The `fetch` the ollama client gets for the facts endpoints: undici's `request` under the few
 * parts of a Response the client reads (status, content type, JSON or text), skipping the WHATWG
 * fetch machinery (request cloning, body teeing, web streams). An error is handed over as JSON,
 * the server's text as `error` (an HTML page's words without its tags): given any other body,
 * ollama-js prints "Getting text from response" on stdout, in the middle of `--json` and `--events`.
 * A 2xx body that is not JSON is a CallError saying so, not a JSON parse error.
 */
function leanFetch(host: string, timeoutMs: number) {
  return async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const where = `${init.method ?? 'GET'} ${new URL(String(input)).pathname}`;
    // A server that takes the connection and never answers would hold `run` and `hosts` for good.
    const limit = AbortSignal.timeout(timeoutMs);
    let res: Dispatcher.ResponseData;
    let text: string;
    try {
      res = await undiciRequest(String(input), {
        method: (init.method ?? 'GET') as 'GET',
        headers: init.headers as Record<string, string>,
        body: (init.body as string | undefined) ?? null,
        signal: init.signal ? AbortSignal.any([init.signal, limit]) : limit,
        dispatcher,
      });
      text = await res.body.text();
    } catch (err) {
      if (limit.aborted) throw silentHost(host, where, timeoutMs, err);
      throw err;
    }
    const status = res.statusCode;
    const ok = status >= 200 && status < 300;
    const contentType = String(res.headers['content-type'] ?? '');
    const json = async (): Promise<unknown> => {
      if (!ok) return { error: refusedError({ status, contentType, text }).message };
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw notJson(host, where, status, text);
      }
    };
    return { ok, status, statusText: STATUS_CODES[status] ?? '', headers: { get: (name: string) => (name.toLowerCase() === 'content-type' ? 'application/json' : null) }, json, text: async () => text } as unknown as Response;
  };
}

function notJson(host: string, where: string, status: number, text: string): CallError {
  return new CallError('SERVER_ERROR', `${host} answered ${where} with HTTP ${status} but not with JSON: ${serverText(text, [], 200)}`, {
    hint: 'Check that the url is an Ollama server and not a proxy or another service in front of it.',
    status,
  });
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
  /** The connections chat calls go over: the shared ones, until a reply stalls. */
  #chats: Dispatcher = dispatcher;

  /** `factsTimeoutMs`: how long tags, ps, show and version may take (FACTS_TIMEOUT_MS). */
  constructor(host: string, options: { factsTimeoutMs?: number } = {}) {
    this.host = host;
    this.client = new Ollama({ host, fetch: leanFetch(host, options.factsTimeoutMs ?? FACTS_TIMEOUT_MS) });
  }

  async chat(request: ChatRequest, control: CallControl = {}): Promise<ChatResult> {
    const abort = callAbort(control);
    let content = '';
    let thinking = '';
    let thinkingTokens = 0;
    let tokens = 0;
    let result: ChatResult | null = null;
    let answered = false;
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
      await postStream(this.#chats, {
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
        onChunk: (bytes) => {
          answered = true;
          lines.push(bytes);
          abort.heard(tokens > 0);
        },
        refused: refusedError,
      });
      lines.end();
      if (result === null) throw new Error(STREAM_ENDED_EARLY);
      return result;
    } catch (err) {
      const mapped = this.mapError(err, request.model, { timedOut: abort.timedOut(), aborted: control.signal?.aborted ?? false, timeoutMs: abort.timeoutMs, answered, stalledMs: abort.stalledMs() });
      if (abort.stalledMs() !== null) this.#dropConnections();
      // The text received so far is kept for the record, marked partial.
      mapped.partial = content;
      mapped.partialThinking = thinking;
      throw mapped;
    } finally {
      abort.dispose();
    }
  }

  /**
   * A host that went silent mid-reply may have lost power: a kept-alive connection to it would take
   * the resend and never answer. The next calls open new connections; calls still running keep theirs.
   */
  #dropConnections(): void {
    const old = this.#chats;
    this.#chats = new Agent(AGENT_OPTIONS);
    if (old !== dispatcher) void old.close();
  }

  /** Loads a model without generating (Ollama treats an empty chat as a load request). */
  async warm(model: string, options: Record<string, unknown>, keepAlive?: string | number): Promise<void> {
    await this.chat({ model, messages: [], options, ...(keepAlive === undefined ? {} : { keepAlive }) }, { timeoutMs: 300_000 });
  }

  async version(): Promise<string> {
    const res = await this.#facts('GET /api/version', null, (c) => c.version());
    return oneLine(res.version) ?? 'unknown';
  }

  async tags(): Promise<TagModel[]> {
    const res = await this.#facts('GET /api/tags', null, (c) => c.list());
    return listOf(res.models).map((m) => {
      const details = record(m.details);
      return {
        name: nameOf(m),
        size: numberOr(m.size, 0),
        digest: typeof m.digest === 'string' ? m.digest : '',
        parameterSize: oneLine(details.parameter_size),
        quantization: oneLine(details.quantization_level),
        family: oneLine(details.family),
        families: linesOf(details.families),
      };
    });
  }

  async ps(): Promise<LoadedModel[]> {
    const res = await this.#facts('GET /api/ps', null, (c) => c.ps());
    return listOf(res.models).map((m) => ({
      name: nameOf(m),
      size: numberOr(m.size, 0),
      sizeVram: numberOr(m.size_vram, 0),
      expiresAt: String(m.expires_at),
      contextLength: typeof m.context_length === 'number' ? m.context_length : null,
    }));
  }

  async show(model: string): Promise<ModelDetails> {
    const res = await this.#facts('POST /api/show', model, (c) => c.show({ model }));
    const info = record(res.model_info);
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
    const capabilities = Array.isArray(res.capabilities) ? res.capabilities.filter((c): c is string => typeof c === 'string') : [];
    const details = record(res.details);
    return {
      contextLength,
      capabilities,
      kvBytesPerToken,
      family: oneLine(details.family),
      families: linesOf(details.families),
      parameterSize: oneLine(details.parameter_size),
      quantization: oneLine(details.quantization_level),
    };
  }

  /**
   * One of the facts endpoints (/api/version, /api/tags, /api/ps, /api/show), through the ollama
   * client over `leanFetch`, as a JSON object whatever the server sent: a status that is not 2xx,
   * or a body that is not a JSON object, is a CallError naming the host, the request and the status.
   */
  async #facts(where: string, model: string | null, ask: (client: Ollama) => Promise<unknown>): Promise<Record<string, unknown>> {
    try {
      const value = await ask(this.client);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw notJson(this.host, where, 200, JSON.stringify(value) ?? '');
      return value as Record<string, unknown>;
    } catch (err) {
      throw this.mapError(err, model, { timedOut: false, aborted: false, timeoutMs: 0 }, where);
    }
  }

  /**
   * The CallError for a failure. `where` (`GET /api/tags`) is set for the facts endpoints, whose
   * messages then name the request and its HTTP status. A model name may come from the server
   * (`hosts --probe` picks one from /api/tags), so it is put on one line wherever it is quoted.
   */
  private mapError(
    err: unknown,
    model: string | null,
    ctx: { timedOut: boolean; aborted: boolean; timeoutMs: number; answered?: boolean; stalledMs?: number | null },
    where?: string,
  ): CallError {
    if (err instanceof CallError) return err;
    const name = model === null ? null : inertLine(model);
    const stopped = stoppedError(err, name ?? this.host, { ...ctx, host: this.host });
    if (stopped) return stopped;
    if (ctx.answered && name !== null && brokenConnection(err)) return cutMidReply(this.host, name, err);
    const e = err as { name?: string; status_code?: number; message?: string; retryAfter?: string | null; cause?: { code?: string } };
    if (e?.name === 'ResponseError' && typeof e.status_code === 'number') {
      const status = e.status_code;
      const text = serverText(e.message ?? '');
      const answered = where === undefined ? '' : ` (HTTP ${statusLine(status)} to ${where})`;
      if (status === 404 && model === null) {
        // Ollama answers every /api route it has; a 404 on /api/tags or /api/ps means another kind of server.
        return new CallError('NOT_OLLAMA', `${this.host} answered 404 Not Found on Ollama's /api routes: it is not an Ollama server.`, {
          hint: notOllamaHint(this.host),
          status,
          cause: err,
        });
      }
      if (status === 404) {
        return new CallError('MODEL_MISSING', `Model \`${name}\` is not on ${this.host}.`, {
          hint: `Run \`ollama pull ${name}\` on that host.`,
          status,
          cause: err,
        });
      }
      if (status === 503 || status === 429) {
        return new CallError('HOST_BUSY', `${this.host} is busy${answered}: ${text}`, {
          // Ollama itself answers 503 when its load queue is full; a 429 comes from a proxy or a hosted service that limits the rate.
          hint:
            status === 503
              ? 'Too many requests are waiting for a model load; lower concurrency or raise OLLAMA_MAX_QUEUE.'
              : 'The server, or a proxy in front of it, limits how many requests it takes: lower the concurrency (`--num-parallel`, or `numParallel` in the hosts entry) or raise that limit.',
          status,
          retryAfterMs: retryAfterMs(e.retryAfter),
          cause: err,
        });
      }
      if (where !== undefined) {
        // An empty body leaves refusedError's `Error 502`, which the status already says.
        const said = text === `Error ${status}` ? '' : `: ${text}`;
        const message = `${this.host} answered HTTP ${statusLine(status)} to ${where}${name === null ? '' : ` for ${name}`}${said}`;
        if (status < 500) return new CallError('BAD_REQUEST', message, { status, cause: err });
        return new CallError('SERVER_ERROR', message, {
          hint: 'The server, or a proxy in front of it, failed: check that Ollama runs at that url and that the url reaches it directly.',
          status,
          cause: err,
        });
      }
      if (status >= 500) {
        return new CallError('SERVER_ERROR', `${this.host} failed on ${name ?? 'a request'}: ${text}`, {
          hint: "Check the Ollama server's log (`journalctl -u ollama`, or ~/.ollama/logs/server.log); with a proxy in front of it, check that the proxy reaches it.",
          status,
          cause: err,
        });
      }
      return new CallError('BAD_REQUEST', `${this.host} refused the request for ${name ?? 'a request'}: ${text}`, { status, cause: err });
    }
    const message = errorMessage(err);
    if (message === STREAM_ENDED_EARLY) {
      return new CallError('STREAM_INCOMPLETE', `${name} stopped its reply without finishing (the server ended the stream early).`, { cause: err });
    }
    if (e?.name === 'AbortError') return new CallError('CALL_ABORTED', `The call to ${name ?? this.host} was stopped.`, { cause: err });
    if (message === 'fetch failed' || /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|UND_ERR_CONNECT_TIMEOUT|ECONNRESET|socket/i.test(`${message} ${e?.cause?.code ?? ''} ${(e as { code?: string })?.code ?? ''}`)) {
      return new CallError('HOST_UNREACHABLE', `Cannot reach Ollama at ${this.host}.`, {
        hint: 'Start it with `ollama serve`, or point `--host` / OLLAMA_HOST at a running server.',
        cause: err,
      });
    }
    // A line `{"error": ...}` inside a 200 stream: the model failed mid-reply.
    return new CallError('STREAM_ERROR', `${name ?? this.host} failed mid-reply on ${this.host}: ${serverText(message)}`, {
      hint: "Check the Ollama server's log: a runner that stops mid-reply has often run out of memory (a smaller num_ctx or model, or fewer calls in parallel, helps).",
      cause: err,
    });
  }
}

/** `502 Bad Gateway`: the status with its reason phrase, where Node knows one. */
function statusLine(status: number): string {
  const phrase = STATUS_CODES[status];
  return phrase ? `${status} ${phrase}` : String(status);
}

function parsedObject(text: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** The objects of a JSON list (`models`), skipping anything else; empty when it is not a list. */
function listOf(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.filter((v): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)) : [];
}

/** A listed model's name as the server spells it (it is what later requests send back): `name`, else `model`. */
function nameOf(m: Record<string, unknown>): string {
  return typeof m.name === 'string' ? m.name : typeof m.model === 'string' ? m.model : '';
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

/**
 * A short fact the server reports (a family, a version, a quantization) as one line of inert text,
 * clipped: it goes into one-line contexts (the card's PANEL line, a Markdown table row, `hosts`).
 * Null when absent or blank.
 */
function oneLine(value: unknown, max = 200): string | null {
  if (typeof value !== 'string') return null;
  const text = inertLine(value).replace(/ {2,}/g, ' ').trim();
  if (text === '') return null;
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** A list of such facts (`families`); null when it has none. */
function linesOf(value: unknown): string[] | null {
  const lines = Array.isArray(value) ? value.map((v) => oneLine(v)).filter((v): v is string => v !== null) : [];
  return lines.length ? lines : null;
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

/** What to pass instead when a host answers 404 on /api: its /api part dropped, or the OpenAI API it serves under /v1. */
function notOllamaHint(host: string): string {
  const base = host.replace(/\/+$/, '');
  if (/\/api$/i.test(base)) return `Give Ollama's base URL, without /api (Conclave adds it): \`--host ${base.replace(/\/api$/i, '')}\`.`;
  const v1 = /\/v1$/i.test(base) ? base : `${base}/v1`;
  return `If it is an OpenAI-compatible server (llama-server, vLLM, LM Studio), pass \`--host ${v1} --api openai\` (in a hosts file, \`api: openai\`).`;
}
