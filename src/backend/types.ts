/** The types every backend shares: a model call's request, result and failure, and the server interface. */
import type { CallMetrics, ChatMessage } from '../engine/events.js';
import { ConclaveError } from '../errors.js';

/** A failed model call. `code` tells the engine (and the user) what kind of failure it was. */
export class CallError extends ConclaveError {
  readonly status: number | null;
  /** What arrived of the reply before the stream broke or ended without `done`; empty when nothing did. */
  partial = '';
  /** What arrived of the model's thinking before then. */
  partialThinking = '';
  /** How long a busy server asked to be left before the request is sent again (its `Retry-After`); null when it did not say. */
  readonly retryAfterMs: number | null;
  constructor(code: CallErrorCode, message: string, options: { hint?: string; cause?: unknown; status?: number | null; retryAfterMs?: number | null } = {}) {
    super(code, message, { ...options, exitCode: 3 });
    this.name = 'CallError';
    this.status = options.status ?? null;
    this.retryAfterMs = options.retryAfterMs ?? null;
  }
}

export type CallErrorCode =
  | 'HOST_UNREACHABLE'
  | 'KEY_REFUSED'
  /** The server refused Ollama's /api routes: another kind of server. */
  | 'NOT_OLLAMA'
  | 'MODEL_MISSING'
  | 'HOST_BUSY'
  | 'SERVER_ERROR'
  | 'BAD_REQUEST'
  | 'STREAM_ERROR'
  | 'STREAM_INCOMPLETE'
  | 'CALL_TIMEOUT'
  | 'CALL_ABORTED';

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  options?: Record<string, unknown>;
  format?: Record<string, unknown> | 'json';
  keepAlive?: string | number;
  /** Ollama's `think`; left out, the model's own default. Never sent to a model without the `thinking` capability. */
  think?: boolean | 'low' | 'medium' | 'high';
}

export interface ChatProgress {
  tokens: number;
  delta: string;
  /** The chunk of thinking this token carried; absent for answer tokens. */
  thought?: string;
}

export interface ChatResult {
  content: string;
  /** The model's thinking (`message.thinking`), streamed before the content; empty when it did not think. */
  thinking: string;
  /** Stream chunks of thinking: one token each, as Ollama streams them (eval_count counts them with the answer). */
  thinkingTokens: number;
  metrics: CallMetrics;
}

export interface CallControl {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** How long a reply may send nothing once its first token came before it is cut; default STALL_MS (call-control.ts). */
  stallMs?: number;
  onProgress?: (progress: ChatProgress) => void;
}

export interface TagModel {
  name: string;
  size: number;
  digest: string;
  parameterSize: string | null;
  quantization: string | null;
  /** The model's family as the server reports it (Ollama's `details.family`); absent or null when it does not. */
  family?: string | null;
  families?: string[] | null;
  /** The family is the hosts entry's `family:`, not the server's report. */
  familyFromHost?: boolean;
}

export interface LoadedModel {
  name: string;
  size: number;
  sizeVram: number;
  expiresAt: string;
  contextLength: number | null;
}

export interface ModelDetails {
  contextLength: number | null;
  capabilities: string[];
  /** KV-cache bytes per token of context at f16, from the model's geometry; null when /api/show does not say. */
  kvBytesPerToken: number | null;
  /** From /api/show `details` (Ollama), or /v1/models where the server says; absent when unknown. */
  family?: string | null;
  families?: string[] | null;
  parameterSize?: string | null;
  quantization?: string | null;
}

/** The wire protocol a model server speaks: Ollama's own API, the OpenAI-compatible `/v1` one, or none: `embedded` runs GGUF files in this process. */
export type Api = 'ollama' | 'openai' | 'embedded';

/**
 * What the engine needs from a model server: the one interface both backends implement
 * (src/ollama/gateway.ts for Ollama, src/openai/gateway.ts for OpenAI-compatible servers).
 */
export interface ModelServer {
  readonly host: string;
  readonly api: Api;
  chat(request: ChatRequest, control?: CallControl): Promise<ChatResult>;
  /** Loads a model ahead of its calls; a server that owns its memory does nothing. */
  warm(model: string, options: Record<string, unknown>, keepAlive?: string | number): Promise<void>;
  version(): Promise<string>;
  tags(): Promise<TagModel[]>;
  /** Models loaded now; empty for a server that owns its memory. */
  ps(): Promise<LoadedModel[]>;
  show(model: string): Promise<ModelDetails>;
}
