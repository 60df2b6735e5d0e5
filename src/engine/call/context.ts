import type { Preset } from '../../config/preset-schema.js';
import type { CallPriority, TokenTally } from '../../protocol/budget.js';
import type { Attachment } from '../../protocol/material.js';
import type { DebateScheduler } from '../../schedule/scheduler.js';
import type { BudgetDecision, DebateEvent } from '../events.js';
import type { ThinkingChoice } from './thinking.js';

/** What the path of a call reads of the run it belongs to. The runner provides it. */
export interface CallContext {
  readonly id: string;
  readonly question: string;
  readonly preset: Preset;
  readonly attachments: Attachment[];
  /** Tokens counted against `protocol.tokenBudget` (and counted without one). */
  readonly tally: TokenTally;
  readonly scheduler: DebateScheduler;
  readonly signal: AbortSignal | undefined;
  readonly retryDelaysMs: readonly number[] | undefined;
  readonly now: () => number;
  /** Whether any listener reads `turn.progress`: no event per streamed token otherwise. */
  readonly streamsProgress: boolean;
  emit(event: DebateEvent): void;
  /** Events that happened at once (a call and its rating), in order: recorded in one transaction. */
  emitTogether(events: readonly DebateEvent[]): void;
  warn(message: string): void;
  budgetDecision(decision: Omit<BudgetDecision, 'used' | 'limit'>): void;
  interrupted(): boolean;
  promptBudget(model: string, options: Record<string, unknown>): number;
  priorityOf(agentId: string): CallPriority;
  thinkingOf(agentId: string, model: string): ThinkingChoice;
}
