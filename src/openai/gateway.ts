import { Agent, type Dispatcher, request as undiciRequest } from 'undici';
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
import type { CallMetrics } from '../engine/events.js';
import { errorMessage } from '../errors.js';
import { bodyText, serverText, withoutSecrets } from '../backend/server-text.js';
import { brokenConnection, callAbort, cutMidReply, FACTS_TIMEOUT_MS, retryAfterMs, silentHost, stoppedError } from '../backend/call-control.js';
import { postStream } from '../backend/post-stream.js';
import { ServerSentData } from './sse.js';
import { inertLine } from '../render/inert.js';

/** As for Ollama: a server may hold the headers until prompt evaluation ends; the per-call limit governs. */
const AGENT_OPTIONS = { headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 30_000 };
const dispatcher = new Agent(AGENT_OPTIONS);

const MID_REPLY_HINT = "Check the server's log: a server that fails mid-reply has often run out of memory (a shorter context, fewer parallel slots, or a smaller model helps).";

/** How much of a 200 body that is not an event stream is kept to be read as one JSON reply. */
const WHOLE_BODY_MAX = 8 * 1024 * 1024;

/** Ollama options that have an OpenAI-compatible field of their own; the rest (num_ctx, keep_alive, …) belong to the server's launch flags. */
const OPTION_FIELDS: Readonly<Record<string, string>> = {
  num_predict: 'max_tokens',
  temperature: 'temperature',
  top_p: 'top_p',
  seed: 'seed',
  stop: 'stop',
  presence_penalty: 'presence_penalty',
  frequency_penalty: 'frequency_penalty',
};

export interface OpenAIServerOptions {
  /** The bearer key, read from the environment by the caller; never stored, logged or put in a message. */
  apiKey?: string;
  /** The environment variable the key came from, named in a refused key's message. */
  apiKeyEnv?: string;
  /** How long GET /models may take (FACTS_TIMEOUT_MS). */
  factsTimeoutMs?: number;
}

/**
 * The only code that talks to an OpenAI-compatible server (llama.cpp's llama-server, vLLM,
 * LM Studio, Ollama's own /v1): `host` is its base URL, ending in /v1. Every chat call streams
 * with `stream_options.include_usage`, so tokens are counted as for Ollama; structured output is
 * `response_format: {type: "json_schema"}`, the one shape all of them accept. The server owns its
 * memory: there is nothing to load, evict or plan.
 */
export class OpenAIGateway implements ModelServer {
  readonly host: string;
  readonly api = 'openai' as const;
  readonly #headers: Record<string, string>;
  readonly #keyEnv: string | undefined;
  /** Removed from every text the server sends back before it reaches a message or the record. */
  readonly #secrets: string[];
  readonly #factsTimeoutMs: number;
  #chatUrl: URL | null = null;
  /** The connections chat calls go over: the shared ones, until a reply stalls. */
  #chats: Dispatcher = dispatcher;

  constructor(host: string, options: OpenAIServerOptions = {}) {
    this.host = host.replace(/\/+$/, '');
    this.#headers = { 'content-type': 'application/json', ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) };
    this.#keyEnv = options.apiKeyEnv;
    this.#secrets = options.apiKey ? [options.apiKey] : [];
    this.#factsTimeoutMs = options.factsTimeoutMs ?? FACTS_TIMEOUT_MS;
  }

  /** Server text for a message: the key removed, on one line, clipped. */
  #said(error: unknown): string {
    return serverText(describeError(error), this.#secrets);
  }

  async chat(request: ChatRequest, control: CallControl = {}): Promise<ChatResult> {
    const abort = callAbort(control);
    const call = abort.controller;
    const started = process.hrtime.bigint();
    let content = '';
    let thinking = '';
    let thinkingTokens = 0;
    let tokens = 0;
    let answered = false;
    try {
      // Set by the event handler: typed wide, or the compiler takes them for null and false after it.
      let finish = null as string | null;
      let usage = null as { prompt_tokens?: unknown; completion_tokens?: unknown } | null;
      let done = false as boolean;
      let seen = 0;
      // The body as it came, kept until a first event shows it is a stream: a server or proxy that ignores
      // `stream` sends one JSON body (a whole completion, or an error under 200) that holds no event.
      let body: Buffer[] | null = [];
      let bodyBytes = 0;
      const events = new ServerSentData((data) => {
        seen++;
        body = null;
        // What follows [DONE] is read (the connection goes back to the pool) but is not the reply.
        if (done) return;
        if (data === '[DONE]') {
          done = true;
          return;
        }
        const event = parseEvent(data, this.#secrets, `${request.model} on ${this.host}`);
        if (event.error !== undefined && event.error !== null) {
          // vLLM refuses a request it cannot serve (a prompt past its context) as the stream's first event, under 200: a refusal, not a failure to resend.
          const status = errorStatus(event.error);
          if (status < 500 && content === '' && thinking === '') throw this.#statusError(status, JSON.stringify({ error: event.error }), request.model);
          throw new CallError('STREAM_ERROR', `${request.model} failed mid-reply on ${this.host}: ${this.#said(event.error)}`, { hint: MID_REPLY_HINT });
        }
        if (event.usage) usage = event.usage;
        for (const choice of event.choices ?? []) {
          const delta = choice.delta ?? {};
          // vLLM and llama-server send a reasoning model's thinking as `reasoning_content`; Ollama's /v1 as `reasoning`.
          const thought = typeof delta.reasoning_content === 'string' ? delta.reasoning_content : typeof delta.reasoning === 'string' ? delta.reasoning : '';
          if (thought !== '') {
            thinking += thought;
            thinkingTokens += 1;
            tokens += 1;
            control.onProgress?.({ tokens, delta: '', thought: withoutSecrets(thought, this.#secrets) });
          }
          if (typeof delta.content === 'string' && delta.content !== '') {
            content += delta.content;
            tokens += 1;
            control.onProgress?.({ tokens, delta: withoutSecrets(delta.content, this.#secrets) });
          }
          if (typeof choice.finish_reason === 'string') finish = choice.finish_reason;
        }
      });
      // Read from undici's callbacks (src/backend/post-stream.ts): no response stream, no promise per event.
      await postStream(this.#chats, {
        url: (this.#chatUrl ??= new URL(`${this.host}/chat/completions`)),
        headers: this.#headers,
        body: JSON.stringify(chatBody(request)),
        signal: call.signal,
        onChunk: (bytes) => {
          answered = true;
          if (body !== null && bodyBytes < WHOLE_BODY_MAX) {
            body.push(Buffer.from(bytes));
            bodyBytes += bytes.length;
          }
          events.push(bytes);
          abort.heard(tokens > 0);
        },
        refused: (response) => this.#statusError(response.status, response.text, request.model, response.retryAfter),
      });
      events.end();
      const whole = seen === 0 && body !== null ? this.#wholeReply(Buffer.concat(body).toString('utf8'), request.model) : null;
      if (whole !== null) {
        content = whole.content;
        thinking = whole.thinking;
        thinkingTokens = thinking === '' ? 0 : 1;
        finish = whole.finish;
        usage = whole.usage;
        if (thinking !== '') control.onProgress?.({ tokens: 1, delta: '', thought: withoutSecrets(thinking, this.#secrets) });
        if (content !== '') control.onProgress?.({ tokens: thinkingTokens + 1, delta: withoutSecrets(content, this.#secrets) });
      } else if (!done && finish === null) throw new CallError('STREAM_INCOMPLETE', `${request.model} stopped its reply without finishing (the server ended the stream early).`);
      const count = (v: unknown): number | null => (typeof v === 'number' ? v : null);
      const metrics: CallMetrics = {
        promptTokens: count(usage?.prompt_tokens),
        completionTokens: count(usage?.completion_tokens),
        totalDurationNs: Number(process.hrtime.bigint() - started),
        loadDurationNs: null,
        promptEvalDurationNs: null,
        evalDurationNs: null,
        doneReason: finish,
      };
      // A server that echoes its key in a reply does not get it into the record either.
      return { content: withoutSecrets(content, this.#secrets), thinking: withoutSecrets(thinking, this.#secrets), thinkingTokens, metrics };
    } catch (err) {
      const mapped = this.#mapError(err, request.model, { timedOut: abort.timedOut(), aborted: control.signal?.aborted ?? false, timeoutMs: abort.timeoutMs, answered, stalledMs: abort.stalledMs() });
      if (abort.stalledMs() !== null) this.#dropConnections();
      mapped.partial = withoutSecrets(content, this.#secrets);
      mapped.partialThinking = withoutSecrets(thinking, this.#secrets);
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

  /**
   * A 200 answer to a streamed request that held no event: a whole `chat.completion` from a server
   * or proxy that ignores `stream`, read as the reply; an error body under 200, named as the error
   * it says; anything else, named with the start of what it was.
   */
  #wholeReply(text: string, model: string): { content: string; thinking: string; finish: string | null; usage: { prompt_tokens?: unknown; completion_tokens?: unknown } | null } | null {
    // Comments or fields and no event: a stream that ended before its first event.
    if (/^\s*(:|event:|id:|retry:)/.test(text)) return null;
    const value = safeJson(text);
    if (value !== null && value.error !== undefined && value.error !== null) throw this.#statusError(errorStatus(value.error), JSON.stringify({ error: value.error }), model);
    const choice = Array.isArray(value?.choices) ? (value.choices[0] as { message?: Record<string, unknown>; finish_reason?: unknown } | undefined) : undefined;
    if (choice === undefined || choice === null || typeof choice !== 'object') {
      const what = text.trim() === '' ? 'an empty body' : serverText(bodyText(text), this.#secrets, 200);
      throw new CallError('SERVER_ERROR', `${this.host} answered the chat request for ${model} with HTTP 200 but sent no reply, neither an event stream nor a chat completion: ${what}`, {
        hint: 'Check that the url is the base of an OpenAI-compatible API, ending in /v1, and not a web page or a proxy that rewrites replies.',
        status: 200,
      });
    }
    const message = choice.message ?? {};
    const str = (v: unknown): string => (typeof v === 'string' ? v : '');
    const usage = value?.usage;
    return {
      content: str(message.content),
      thinking: str(message.reasoning_content) || str(message.reasoning),
      finish: typeof choice.finish_reason === 'string' ? choice.finish_reason : 'stop',
      usage: usage !== null && typeof usage === 'object' ? (usage as { prompt_tokens?: unknown; completion_tokens?: unknown }) : null,
    };
  }

  /** Nothing to load: the server loaded its models when it started. */
  async warm(): Promise<void> {}

  async version(): Promise<string> {
    return 'OpenAI-compatible';
  }

  async tags(): Promise<TagModel[]> {
    return (await this.catalog()).map((m) => servedModel(m.name));
  }

  /** What /v1/models lists, with the context length where the server gives it (vLLM's `max_model_len`). */
  async catalog(): Promise<{ name: string; contextLength: number | null; family: string | null }[]> {
    return (await this.#models()).map((m) => ({ name: m.id, contextLength: typeof m.max_model_len === 'number' ? m.max_model_len : null, family: reportedFamily(m) }));
  }

  async ps(): Promise<LoadedModel[]> {
    return [];
  }

  /** The context length where the server says it (vLLM's `max_model_len`); nothing else is known. */
  async show(model: string): Promise<ModelDetails> {
    const entry = (await this.#models()).find((m) => m.id === model);
    if (!entry) throw this.#missing(model, 404);
    return { contextLength: typeof entry.max_model_len === 'number' ? entry.max_model_len : null, capabilities: [], kvBytesPerToken: null, family: reportedFamily(entry) };
  }

  /** llama-server's slot count (`GET /props` beside /v1); null where the server does not say. */
  async slots(): Promise<number | null> {
    try {
      const res = await undiciRequest(`${this.host.replace(/\/v1$/, '')}/props`, { method: 'GET', headers: this.#headers, dispatcher, signal: AbortSignal.timeout(5000) });
      if (res.statusCode !== 200) {
        await res.body.dump();
        return null;
      }
      const props = (await res.body.json()) as { total_slots?: unknown };
      return typeof props.total_slots === 'number' && Number.isInteger(props.total_slots) && props.total_slots > 0 ? props.total_slots : null;
    } catch {
      return null;
    }
  }

  async #models(): Promise<{ id: string; max_model_len?: unknown; family?: unknown; arch?: unknown }[]> {
    const limit = AbortSignal.timeout(this.#factsTimeoutMs);
    try {
      const res = await this.#send('GET', '/models', undefined, limit);
      const text = await res.body.text();
      if (res.statusCode >= 400) throw this.#statusError(res.statusCode, text, null);
      const list = safeJson(text);
      if (list === null) {
        throw new CallError('SERVER_ERROR', `${this.host} answered GET /models with HTTP ${res.statusCode} but not with JSON: ${serverText(bodyText(text), this.#secrets, 200)}`, {
          hint: 'Check that the url is the base of an OpenAI-compatible API, ending in /v1, and not a web page or a proxy in front of it.',
          status: res.statusCode,
        });
      }
      if (!Array.isArray(list.data)) throw new CallError('BAD_REQUEST', `${this.host}/models did not return a model list.`, { hint: 'Check that the url is the base of an OpenAI-compatible API, ending in /v1.' });
      const models = list.data.filter((m): m is { id: string } => typeof (m as { id?: unknown } | null)?.id === 'string');
      // Entries without the id the API names each model by: every model would read as not served.
      if (models.length === 0 && list.data.length > 0) {
        throw new CallError('BAD_REQUEST', `${this.host}/models listed ${list.data.length} ${list.data.length === 1 ? 'entry' : 'entries'} but none with an \`id\`, the name an OpenAI-compatible API gives each model, so no model can be asked for by name.`, {
          hint: 'Check that the url is the base of an OpenAI-compatible API, ending in /v1, and not another API or a proxy that rewrites its answers.',
        });
      }
      return models;
    } catch (err) {
      if (limit.aborted && !(err instanceof CallError)) throw silentHost(this.host, 'GET /models', this.#factsTimeoutMs, err);
      throw this.#mapError(err, null, { timedOut: false, aborted: false, timeoutMs: 0 });
    }
  }

  #send(method: 'GET' | 'POST', path: string, body: unknown, signal: AbortSignal) {
    return undiciRequest(`${this.host}${path}`, {
      method,
      headers: this.#headers,
      body: body === undefined ? null : JSON.stringify(body),
      signal,
      dispatcher,
    });
  }

  #statusError(status: number, text: string, model: string | null, retryAfter: string | null = null): CallError {
    const message = this.#said(safeJson(text)?.error ?? bodyText(text));
    const what = model === null ? 'GET /models' : model;
    if (status === 401 || status === 403) {
      return new CallError('KEY_REFUSED', `${this.host} refused the API key (HTTP ${status}): ${message}`, {
        hint: this.#keyEnv
          ? `Set ${this.#keyEnv} to a key this server accepts (the hosts entry's apiKeyEnv names it).`
          : 'This server wants a key: name the environment variable that holds it with `apiKeyEnv` in the hosts entry, or `--api-key-env NAME`.',
        status,
      });
    }
    if (status === 404 && model !== null) return this.#missing(model, status);
    if (status === 404) {
      return new CallError('BAD_REQUEST', `${this.host} answered HTTP 404 to GET /models: it is not the base of an OpenAI-compatible API (${message}).`, {
        hint: 'Give the base of its API, ending in /v1; behind a proxy that serves it under a path, keep that path (http://host/llm/v1).',
        status,
      });
    }
    if (status === 429 || status === 503) {
      // llama-server answers 503 "Loading model" until its model is in memory.
      const loading = /loading model/i.test(message);
      return new CallError('HOST_BUSY', `${this.host} is busy${loading ? ' loading its model' : ''}, HTTP ${status} to ${what}: ${message}`, {
        hint: loading ? 'Wait until the server has loaded its model (llama-server: until GET /health answers ok), then run again.' : 'Lower the concurrency, or give the server more slots.',
        status,
        retryAfterMs: retryAfterMs(retryAfter),
      });
    }
    if (status >= 500) {
      return new CallError('SERVER_ERROR', `${this.host} failed on ${what} with HTTP ${status}: ${message}`, {
        hint: "Check the server's log; with a proxy in front of it (HTTP 502, 504), check that the proxy reaches the server and that its timeout outlasts a reply.",
        status,
      });
    }
    return new CallError('BAD_REQUEST', `${this.host} refused ${model === null ? 'GET /models' : `the request for ${model}`} with HTTP ${status}: ${message}`, {
      hint: "The server's message says what it refused: a prompt longer than its context (--ctx-size, --max-model-len), an option or response_format it does not take.",
      status,
    });
  }

  #missing(model: string, status: number): CallError {
    return new CallError('MODEL_MISSING', `Model \`${model}\` is not served by ${this.host}.`, {
      hint: 'Start the server with that model, or use a name from `conclave models --hosts FILE` (the ids its /v1/models lists).',
      status,
    });
  }

  #mapError(err: unknown, model: string | null, ctx: { timedOut: boolean; aborted: boolean; timeoutMs: number; answered?: boolean; stalledMs?: number | null }): CallError {
    if (err instanceof CallError) return err;
    const stopped = stoppedError(err, model ?? this.host, { ...ctx, host: this.host });
    if (stopped) return stopped;
    if (ctx.answered && model !== null && brokenConnection(err)) return cutMidReply(this.host, model, err);
    const e = err as { code?: string; name?: string; cause?: { code?: string } };
    const message = serverText(errorMessage(err), this.#secrets);
    if (e?.name === 'AbortError' || e?.code === 'UND_ERR_ABORTED') return new CallError('CALL_ABORTED', `The call to ${model ?? this.host} was stopped.`, { cause: err });
    if (/ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|UND_ERR_CONNECT_TIMEOUT|ECONNRESET|EAI_AGAIN|UND_ERR_SOCKET|socket|other side closed/i.test(`${message} ${e?.code ?? ''} ${e?.cause?.code ?? ''}`)) {
      return new CallError('HOST_UNREACHABLE', `Cannot reach the OpenAI-compatible server at ${this.host}.`, {
        hint: 'Start it (llama-server, vllm serve, LM Studio), or correct the url in the hosts entry: the base of its API, ending in /v1.',
        cause: err,
      });
    }
    return new CallError('STREAM_ERROR', model === null ? `${this.host} failed: ${message}` : `${model} failed mid-reply on ${this.host}: ${message}`, { hint: MID_REPLY_HINT, cause: err });
  }
}

/** A model an OpenAI-compatible server lists: its id alone; size, digest and quantization are the server's own business. */
/** A family where the server's /v1/models entry says one (`family`, or LM Studio's `arch`); null otherwise. */
function reportedFamily(entry: { family?: unknown; arch?: unknown }): string | null {
  const f = typeof entry.family === 'string' ? entry.family : typeof entry.arch === 'string' ? entry.arch : '';
  // Shown on one line (the card's PANEL block, a Markdown table row), as the Ollama gateway's facts are.
  return inertLine(f).replace(/ {2,}/g, ' ').trim().slice(0, 200) || null;
}

export function servedModel(name: string): TagModel {
  return { name, size: 0, digest: '', parameterSize: null, quantization: null };
}

/** The request body: Ollama's options mapped to their OpenAI fields, the schema as `response_format`. */
export function chatBody(request: ChatRequest): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: request.model,
    messages: request.messages.map((m) => ({ role: m.role, content: m.content })),
    stream: true,
    stream_options: { include_usage: true },
  };
  for (const [option, value] of Object.entries(request.options ?? {})) {
    const field = OPTION_FIELDS[option];
    // num_predict -1 (no limit) has no OpenAI form: leave max_tokens out.
    if (field && value !== undefined && !(option === 'num_predict' && typeof value === 'number' && value < 0)) body[field] = value;
  }
  if (request.format === 'json') body.response_format = { type: 'json_object' };
  else if (request.format) body.response_format = { type: 'json_schema', json_schema: { name: 'reply', schema: request.format } };
  // A thinking level is the one part of `think` these servers share (reasoning_effort); on or off has no common form.
  if (request.think === 'low' || request.think === 'medium' || request.think === 'high') body.reasoning_effort = request.think;
  return body;
}

interface StreamEvent {
  choices?: { delta?: { content?: unknown; reasoning_content?: unknown; reasoning?: unknown }; finish_reason?: unknown }[];
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } | null;
  error?: unknown;
}

function parseEvent(data: string, secrets: readonly string[], who: string): StreamEvent {
  const value = safeJson(data);
  if (value === null) {
    throw new CallError('STREAM_ERROR', `${who} sent an event that is not JSON in the middle of its reply: ${serverText(data, secrets, 120)}`, {
      hint: 'Check that the url reaches the OpenAI-compatible server directly: a proxy that rewrites or buffers event streams can break their events.',
    });
  }
  return value as StreamEvent;
}

/** The HTTP status an error body sent under 200 stands for: its numeric `code` (llama-server), else 400 for a refused request, else 500. */
function errorStatus(error: unknown): number {
  const e = (error !== null && typeof error === 'object' ? error : {}) as { code?: unknown; type?: unknown };
  if (typeof e.code === 'number' && Number.isInteger(e.code) && e.code >= 400 && e.code <= 599) return e.code;
  return e.type === 'invalid_request_error' ? 400 : 500;
}

function safeJson(text: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function describeError(error: unknown): string {
  if (typeof error === 'string') return error;
  if (error && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') return (error as { message: string }).message;
  return JSON.stringify(error) ?? 'no message';
}
