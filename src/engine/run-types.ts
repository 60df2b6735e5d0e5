import type { HostEntry, Preset } from '../config/preset-schema.js';
import type { Attachment } from '../protocol/material.js';
import type { TranscriptRound } from '../protocol/prompts.js';
import type { SlotPool } from '../schedule/pool.js';
import type { DebateScheduler, Strategy } from '../schedule/scheduler.js';
import type { StoredCall } from '../store/store.js';
import type { DebateListener, DebateStatus, ExitReason, SynthesisRecord } from './events.js';
import type { ProtocolStep } from './protocol-events.js';
import type { ExtraStage } from './stage.js';

export interface RunDebateOptions {
  question: string;
  preset: Preset;
  /** Normalised Ollama base URL; ignored when `hosts` or the preset's `hosts` list a pool. */
  host: string;
  /** Several Ollama servers to spread the panel over, with their GPU memory and parallel slots. */
  hosts?: HostEntry[];
  /** Consent to send a preset's own `hosts:` the API keys they name (`run --trust-preset-hosts`); without it such a preset is refused. */
  trustPresetHosts?: boolean;
  /** Where the hosts' API keys are read from (their apiKeyEnv); default process.env. */
  env?: NodeJS.ProcessEnv;
  /** GPU memory of `host` in GiB, when known (else nvidia-smi for a local host, else an assumption). */
  vramGiB?: number;
  /** Listeners that must not fail silently (the recorder): an error here stops the debate. */
  recorder?: DebateListener;
  /** Best-effort listeners (renderers): an error is reported once and ignored. */
  listeners?: DebateListener[];
  /**
   * Told when a host of the pool leaves mid-run or comes back, besides the `warning` event the
   * listeners get: the CLI prints it on stderr even with --quiet, which shows no events.
   */
  notice?: (message: string) => void;
  signal?: AbortSignal;
  /** Warnings gathered before the run (e.g. from preset validation), shown and stored with it. */
  warnings?: string[];
  /** Parallel slots per model on the server (OLLAMA_NUM_PARALLEL); default 1. */
  numParallel?: number;
  now?: () => number;
  id?: string;
  /** Optional stages between the last round and synthesis; defaults to the built-in ones. */
  stages?: ExtraStage[];
  /** How calls are dispatched; `planned` unless benchmarking the baselines. */
  strategy?: Strategy;
  /** Call slots shared with other work on the same hosts (debates run side by side); default: the debate's own. */
  pool?: SlotPool;
  /**
   * This debate's turn in the synthesizer rotation (`synthesizer.rotate`): the number of
   * debates already recorded with the preset. Ignored for a fixed synthesizer; default 0.
   */
  synthesizerTurn?: number;
  /** Files attached to the question (read with `readAttachments`): inlined or excerpted into every agent's prompt, and recorded. */
  attachments?: Attachment[];
  /** Tokens the debate's recorded calls already spent: a resumed run counts them against its budget. */
  tokensSpent?: number;
  /** Pauses before resending a request that failed for a passing reason; default call/retry.ts's. */
  retryDelaysMs?: readonly number[];
}

export interface DebateResult {
  id: string;
  status: DebateStatus;
  exitReason: ExitReason;
  exitDetail: string;
  rounds: TranscriptRound[];
  synthesis: SynthesisRecord | null;
  numCtx: Record<string, number>;
  error: string | null;
  /** The scheduler that ran it: its plan, and peak calls in flight per model. */
  scheduler: DebateScheduler;
}

/** How a protocol ended, before the runner reports it. */
export interface ProtocolOutcome {
  exitReason: ExitReason;
  exitDetail: string;
  rounds: TranscriptRound[];
  synthesis: SynthesisRecord | null;
}

/** What the runner needs to know of a protocol before its first call. */
export interface RunShape {
  /** Judge, synthesizer and stage models the protocol calls (scheduled as support models). */
  support: string[];
  /** Models that write a synthesis-sized answer (their num_ctx is sized for the whole transcript). */
  synthesisModels: string[];
  /** Whether the judge reads the panel's positions (its num_ctx is sized for them). */
  usesJudge: boolean;
  /** Optional stages the protocol runs; their models are scheduled too. */
  stages: ExtraStage[];
  /** The record of how the synthesizer was chosen, reported first. */
  synthesizer: ProtocolStep | null;
  /** Refuses the run, by throwing, once each model's digest is known and before anything is recorded (a resume on models changed since). */
  checkModels?: (digestOf: (model: string) => string | null) => void;
}

/**
 * Calls of one round that finished before an interruption, by agent id: a resumed run reads
 * these agents' turns from them instead of asking again (see `Runner.answerAll`).
 */
export type RecordedCalls = ReadonlyMap<string, StoredCall>;
