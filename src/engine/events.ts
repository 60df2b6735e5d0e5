import type { Preset } from '../config/preset-schema.js';
import type { CallPriority } from '../protocol/budget.js';
import type { Attachment, MaterialUse } from '../protocol/material.js';
import type { QualityAction } from '../protocol/quality.js';
import type { Critique, JudgeScore, Opening, Synthesis } from '../protocol/schemas.js';
import type { ProtocolEvent } from './protocol-events.js';
import type { TensionEvent } from './tension-events.js';
import type { VotingEvent } from './vote-events.js';

/**
 * The kinds of model call a debate makes. The first four are the core protocol;
 * the others belong to optional stages (clash map, targeted re-query, votes).
 */
export type Stage =
  | 'opening'
  | 'critique'
  | 'judge'
  | 'synthesis'
  | 'claims'
  | 'clash'
  | 'targeted'
  | 'vote'
  | 'refine'
  | 'verdict'
  | 'split'
  | 'subanswer'
  | 'reassembly'
  | 'plan'
  | 'observe'
  | 'review'
  | 'filter';

/** Why the run stopped: the debate's exits, then the other protocols' ends (docs/protocols.md). */
export type ExitReason =
  | 'converged'
  | 'max_rounds'
  | 'too_few_answers'
  | 'interrupted'
  | 'error'
  | 'answered'
  | 'champion'
  | 'reassembled'
  | 'budget'
  | 'filtered';

/** `unsynthesized`: every round ran and is kept, but no synthesis succeeded (see `conclave synthesize`). */
export type DebateStatus = 'running' | 'completed' | 'unsynthesized' | 'failed' | 'interrupted';

/** Ollama's own counters from the final stream chunk (durations in nanoseconds). */
export interface CallMetrics {
  promptTokens: number | null;
  completionTokens: number | null;
  totalDurationNs: number | null;
  loadDurationNs: number | null;
  promptEvalDurationNs: number | null;
  evalDurationNs: number | null;
  doneReason: string | null;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/**
 * One model call, complete: what was sent, what came back, how it parsed.
 * This is what the record stores, one row per call.
 */
export interface CallRecord {
  debateId: string;
  stage: Stage;
  round: number;
  /** Agent id for debaters; `judge` or `synthesizer` for those roles. */
  agentId: string;
  /** 0 for the first request, 1 for the repair request that quotes the validation error. */
  attempt: number;
  host: string;
  model: string;
  messages: ChatMessage[];
  options: Record<string, unknown>;
  format: Record<string, unknown> | null;
  raw: string;
  /** True when `raw` is only what arrived before the stream broke or ended without `done`. */
  partial?: boolean;
  /** `think` as sent with the request; absent when none was sent (the model's default). */
  think?: boolean | 'low' | 'medium' | 'high';
  /** The model's thinking, streamed before its reply; absent when it did not think. */
  thinking?: string;
  /** Tokens of that thinking (Ollama counts them in eval_count with the reply's). */
  thinkingTokens?: number;
  parsed: unknown;
  status: 'ok' | 'invalid' | 'error' | 'aborted';
  /** Why the reply was not usable: not JSON, or outside the schema sent (so the server did not enforce `format`). */
  validationError: string | null;
  /**
   * What the engine changed in a reply the schema allowed but the debate could not take as it
   * was (a number clamped into range, a reference to no peer dropped), one note per change.
   */
  normalized?: string[];
  error: string | null;
  /** Set when peers' text was shortened to fit the context window. */
  truncation: string | null;
  /** What the call was given of the attached material, per attachment; absent when none was. */
  material?: MaterialUse[];
  /** The token budget at this call: its estimate beforehand, its real count, and the run's total after it; absent without a budget. */
  budget?: CallBudget;
  metrics: CallMetrics;
  startedAt: number;
  finishedAt: number;
}

export interface CallBudget {
  limit: number;
  priority: CallPriority;
  /** Prompt tokens estimated plus the reply expected, before the call. */
  estimate: number;
  /** prompt_eval_count + eval_count as Ollama reported them (the prompt estimate when it reported none). */
  actual: number;
  /** The run's tokens after this call (calls still in flight count their estimate). */
  used: number;
}

/** One decision the token budget made: material cut, an agent's call skipped, a protocol stopping early. */
export interface BudgetDecision {
  kind: 'truncate' | 'skip' | 'stop';
  stage: Stage | null;
  round: number;
  agentId: string | null;
  detail: string;
  used: number;
  limit: number;
}

/** An agent's outcome for one round, after any repair. */
export interface TurnRecord {
  round: number;
  agentId: string;
  model: string;
  status: 'ok' | 'invalid' | 'failed';
  /** The position the agent holds after this turn (opening position or updated position). */
  position: string | null;
  confidence: number | null;
  opening: Opening | null;
  critique: Critique | null;
  error: string | null;
}

/**
 * The quality rating of one agent result (docs/quality.md). `try` 0 rates the first answer,
 * 1 the answer to its retry; the rating that counts is the last one for the result.
 */
export interface QualityRecord {
  stage: Stage;
  round: number;
  agentId: string;
  try: number;
  score: number;
  action: QualityAction;
  reasons: string[];
}

export interface RoundJudgement {
  round: number;
  status: 'ok' | 'failed';
  score: JudgeScore | null;
  /** Mean of the three axes; null when the judge failed. */
  convergence: number | null;
  error: string | null;
}

export interface SynthesisRecord {
  status: 'ok' | 'failed';
  /** The synthesizer's model; absent in records written before attempts were kept. */
  model?: string;
  synthesis: Synthesis | null;
  error: string | null;
}

export interface AgentInfo {
  id: string;
  model: string;
  persona: string | null;
  cluster: string | null;
  role: 'debater' | 'judge' | 'synthesizer';
  digest: string | null;
}

/** Events the engine emits, in order. The recorder, the renderer and --json listen. */
export type DebateEvent =
  | {
      type: 'debate.started';
      debateId: string;
      question: string;
      preset: Preset;
      agents: AgentInfo[];
      host: string;
      warnings: string[];
      /** The schedule plan (limits, groups, num_ctx per model), recorded with the debate. */
      plan?: unknown;
      /** Files attached to the question, in the order given; absent or empty when none were. */
      attachments?: Attachment[];
      at: number;
    }
  | { type: 'budget.decision'; decision: BudgetDecision; at: number }
  | { type: 'round.started'; round: number; at: number }
  | { type: 'turn.started'; stage: Stage; round: number; agentId: string; model: string; attempt: number; at: number }
  | { type: 'turn.progress'; stage: Stage; round: number; agentId: string; tokens: number; delta: string }
  | { type: 'call.finished'; call: CallRecord }
  | { type: 'turn.finished'; turn: TurnRecord; at: number }
  | { type: 'quality.rated'; rating: QualityRecord; at: number }
  /** A resumed run read an agent's turn from a call that had finished before the interruption, instead of asking it again. */
  | { type: 'turn.reused'; round: number; agentId: string; callNumber: number; at: number }
  | { type: 'round.judged'; judgement: RoundJudgement; at: number }
  | { type: 'debate.exit'; reason: ExitReason; round: number; detail: string; at: number }
  | { type: 'synthesis.finished'; result: SynthesisRecord; at: number }
  | VotingEvent
  | TensionEvent
  | ProtocolEvent
  | { type: 'warning'; message: string; at: number }
  | {
      type: 'debate.finished';
      debateId: string;
      status: DebateStatus;
      exitReason: ExitReason;
      error: string | null;
      at: number;
    };

/**
 * Receives every event. A listener with `progress: false` (the recorder) never reads
 * `turn.progress`, so a run whose listeners all say so emits none: no event per streamed token.
 */
export type DebateListener = ((event: DebateEvent) => void) & { progress?: boolean };
