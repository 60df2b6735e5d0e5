/**
 * The part of node-llama-cpp's API Conclave uses, written out so that type checks and builds need
 * no node-llama-cpp (it is an explicit install: `npm run embedded:install`). Checked against 3.21.1.
 */
export interface LlamaGrammar {
  readonly grammar: string;
}

export interface TokenMeterState {
  usedInputTokens: number;
  usedOutputTokens: number;
}

export interface LlamaContextSequence {
  readonly tokenMeter: { getState(): TokenMeterState };
}

export interface LlamaContext {
  getSequence(): LlamaContextSequence;
  dispose(): Promise<void>;
}

export interface LlamaModel {
  createContext(options: { contextSize: number; sequences: number; threads?: number }): Promise<LlamaContext>;
  dispose(): Promise<void>;
}

export interface Llama {
  readonly gpu: false | string;
  getGpuDeviceNames(): Promise<string[]>;
  getVramState(): Promise<{ total: number }>;
  createGrammar(options: { grammar: string }): Promise<LlamaGrammar>;
  loadModel(options: { modelPath: string }): Promise<LlamaModel>;
}

export type ChatHistoryItem = { type: 'system'; text: string } | { type: 'user'; text: string } | { type: 'model'; response: string[] };

export type LlamaChatResponseChunk =
  | { type: undefined; text: string; tokens: number[] }
  | { type: 'segment'; segmentType: string; text: string; tokens: number[] };

export interface GenerateOptions {
  grammar?: LlamaGrammar;
  maxTokens?: number;
  temperature?: number;
  seed?: number;
  topP?: number;
  topK?: number;
  minP?: number;
  repeatPenalty?: { penalty: number };
  customStopTriggers?: string[];
  budgets?: { thoughtTokens?: number };
  signal?: AbortSignal;
  onResponseChunk?: (chunk: LlamaChatResponseChunk) => void;
}

export interface LlamaChat {
  generateResponse(history: ChatHistoryItem[], options: GenerateOptions): Promise<{ response: string; metadata: { stopReason: string } }>;
  dispose(options?: { disposeSequence?: boolean }): void;
}

export interface NodeLlamaCpp {
  getLlama(options: { build: 'never'; gpu: 'auto' | false; logLevel: unknown; progressLogs: boolean }): Promise<Llama>;
  LlamaLogLevel: { error: unknown };
  LlamaChat: new (options: { contextSequence: LlamaContextSequence }) => LlamaChat;
}
