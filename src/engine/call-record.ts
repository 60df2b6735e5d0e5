import type { CallPriority } from '../protocol/budget.js';
import type { MaterialUse } from '../protocol/material.js';
import type { ChatMessage } from '../protocol/records.js';

// One model call as the record keeps it. Below the event types (events.ts re-exports these),
// so a module of events can name a call without importing the events that include it.

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
  | 'filter'
  | 'advice'
  | 'fallback';

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
  /** The API of the server that answered: `openai` for an OpenAI-compatible one; absent for Ollama. */
  api?: 'openai' | 'embedded';
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
   * was (a reference to no peer dropped, a clash between two claims of one panelist), one note per change.
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
  /**
   * Of `used`, the tokens calls that ended really spent; the rest are estimates held for calls
   * still in flight. Absent in records made before it was kept.
   */
  spent?: number;
}
