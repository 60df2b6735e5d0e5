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
      /** With `error`: the HTTP status it is sent with, before the first byte. 200 sends the error body under 200, as some proxies do. */
      status?: number;
      /** With `error` and a status (a 503, a 429): the `Retry-After` header sent with it, in seconds. */
      retryAfter?: number;
      failAfterTokens?: number;
      silentStop?: boolean;
      /** The connection closes after this many content chunks, its body unfinished, with no final chunk and no error line: the server died or a proxy cut it. */
      dropAfterTokens?: number;
      /**
       * The server process dies after this many content chunks: it stops listening (a new connection
       * is refused) and resets every open connection, this reply's included, as a crashed or switched-off host does.
       */
      crashAfterTokens?: number;
      /**
       * After this many content chunks the server sends nothing more, and neither ends nor resets the
       * connection, until the client goes away: a host that lost power or its network mid-reply, or a server that hangs.
       */
      stallAfterTokens?: number;
      /**
       * With `stallAfterTokens`: the host also loses power then: it stops listening, so a new
       * connection is refused, and a request on a connection it had already taken is never answered.
       */
      powerOff?: boolean;
      /** The server ignores `stream: true` and sends the whole reply as one JSON body, as some proxies in front of an OpenAI-compatible server do. */
      ignoresStream?: boolean;
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
  /** false: /v1 streams send no `usage` chunk even when `stream_options.include_usage` asks, as servers without that option do. Default true. */
  sendsUsage?: boolean;
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
  /**
   * The server dies as a crashed process or a switched-off machine does: it stops listening, so a
   * new connection is refused, and every open connection is reset once what was written to it has gone out.
   * Start another simulator on the same `port` to bring the host back.
   */
  kill(): Promise<void>;
  close(): Promise<void>;
}
