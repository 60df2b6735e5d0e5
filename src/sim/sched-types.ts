/** A model as the simulator knows it: the caller's SimModel with every default filled in. */
export interface ModelSpec {
  /** Tokens of thinking before each answer when thinking is on; 0 for a model without the `thinking` capability. */
  thinkingTokens?: number;
  /** The name as configured; counters and `loaded()` use it. */
  name: string;
  /** The wire name: lower-cased, with `:latest` added when there is no tag (what Ollama lists). */
  canonical: string;
  sizeBytes: number;
  contextLength: number;
  family: string;
  parameterSize: string;
  quantization: string;
  capabilities: string[];
  digest: string;
}

/** Options that belong to the runner process; a change in any of them means a reload. */
export interface RunnerOptions {
  numCtx: number;
  numGpu: number;
  numBatch: number;
  numThread: number;
}

export interface SchedulerConfig {
  vramBytes: number;
  numParallel: number;
  maxLoadedModels: number;
  maxQueue: number;
  loadMs: number;
  defaultKeepAliveMs: number;
}

export interface ModelCounters {
  requests: number;
  loads: number;
  reloads: number;
  evictions: number;
  inFlight: number;
  peakInFlight: number;
}

export interface LoadedRunnerInfo {
  model: ModelSpec;
  options: RunnerOptions;
  sizeBytes: number;
  vramBytes: number;
  /** Epoch milliseconds; Infinity when keep_alive is negative (forever). */
  expiresAt: number;
}

/** The load queue is full: Ollama's ErrMaxQueue, answered with 503. */
export class QueueFullError extends Error {
  constructor() {
    super('server busy, please try again.  maximum pending requests exceeded');
    this.name = 'QueueFullError';
  }
}

/** The request went away (client disconnect or server shutdown) while it waited. */
export class CanceledError extends Error {
  constructor() {
    super('request canceled');
    this.name = 'CanceledError';
  }
}

/** Bytes of KV cache per context token per slot; a round figure for a 7-8B model at f16. */
export const KV_BYTES_PER_TOKEN = 2048;
