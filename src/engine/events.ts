import type { Preset } from '../config/preset-schema.js';
import type { Attachment } from '../protocol/material.js';
import type { QualityAction, QualityIndicators } from '../protocol/quality.js';
import type { ChatMessage, ExitReason, RoundJudgement, TurnRecord } from '../protocol/records.js';
import type { Synthesis } from '../protocol/schemas.js';
import type { CallBudget, CallMetrics, CallRecord, Stage } from './call-record.js';
import type { ProtocolEvent } from './protocol-events.js';
import type { TensionEvent } from './tension-events.js';
import type { VotingEvent } from './vote-events.js';

// The records below the events, re-exported: most modules read every type of a debate from here.
export type { CallBudget, CallMetrics, CallRecord, ChatMessage, ExitReason, RoundJudgement, Stage, TurnRecord };

/** `unsynthesized`: every round ran and is kept, but no synthesis succeeded (see `conclave synthesize`). */
export type DebateStatus = 'running' | 'completed' | 'unsynthesized' | 'failed' | 'interrupted';

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
  /** Whether the result stated trade-offs, and how many constraints (openings, critiques, sub-answers). */
  indicators?: QualityIndicators;
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
  | { type: 'turn.progress'; stage: Stage; round: number; agentId: string; tokens: number; delta: string; /** A chunk of the model's thinking, when this token was one. */ thought?: string }
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
 * `together`, when a listener has it, receives events that happened at the same moment (a call
 * and its rating, the turns of a round) at once, in order: the recorder writes them in one
 * transaction. A listener without it gets them one by one.
 */
export type DebateListener = ((event: DebateEvent) => void) & { progress?: boolean; together?: (events: readonly DebateEvent[]) => void };
