import { formatNumber } from '../plural.js';
import type { MaterialKeep } from './material.js';

/**
 * The token budget of a run (seed 002, "Token Budget Management"): prompt plus reply tokens
 * over every call. Below 80% nothing changes. From 80% lower-priority material goes first:
 * secondary excerpts (80%), then peers' reasoning, the closest thing the prompts have to
 * trade-off analysis (90%; the prompts carry no examples to drop), then primary excerpts
 * down to one key section (95%). The question, personas and constraints are never cut.
 * At 100%, or when a call's estimate would pass it, lower-priority agents are skipped.
 */

/** How much an agent's call matters when the budget runs out; `essential` is the run's own result. */
export type CallPriority = 'essential' | 'high' | 'normal' | 'low';
export type AgentPriority = Exclude<CallPriority, 'essential'>;

export const agentPriorities = ['high', 'normal', 'low'] as const;

/**
 * An agent's priority: its own `priority`, else one from its `role` when it has one
 * (a lead or a filter is high, an analyst low), else normal.
 */
export function defaultPriority(agent: { priority?: AgentPriority | undefined; role?: string | undefined }): AgentPriority {
  if (agent.priority) return agent.priority;
  switch (agent.role) {
    case 'lead':
    case 'filter':
      return 'high';
    case 'analyst':
      return 'low';
    default:
      return 'normal';
  }
}

export interface BudgetPressure {
  /** Used share of the budget, 0 when there is none. */
  share: number;
  keep: MaterialKeep;
  /** Whether peers' reasoning is left out of critique prompts. */
  dropReasoning: boolean;
}

export const TRUNCATE_AT = 0.8;
const REASONING_AT = 0.9;
const PRIMARY_AT = 0.95;

export function pressureAt(used: number, limit: number | null): BudgetPressure {
  if (limit === null || limit <= 0) return { share: 0, keep: 'all', dropReasoning: false };
  const share = used / limit;
  return {
    share,
    keep: share >= PRIMARY_AT ? 'key' : share >= TRUNCATE_AT ? 'primary' : 'all',
    dropReasoning: share >= REASONING_AT,
  };
}

/**
 * Whether a call may run: essential and high-priority calls always run; a normal one is
 * skipped once the budget is spent; a low one already when its own estimate would pass it.
 */
export function admits(priority: CallPriority, used: number, estimate: number, limit: number | null): { ok: true } | { ok: false; reason: string } {
  if (limit === null || priority === 'essential' || priority === 'high') return { ok: true };
  if (used >= limit) return { ok: false, reason: `the token budget is used up (${formatNumber(used)} of ${formatNumber(limit)} tokens, calls in flight counted at their estimate)` };
  if (priority === 'low' && used + estimate > limit) {
    return { ok: false, reason: `its estimate of ${formatNumber(estimate)} tokens would pass the token budget (${formatNumber(used)} of ${formatNumber(limit)} used)` };
  }
  return { ok: true };
}

/** Reply tokens a call is expected to use before it runs: half its num_predict, the usual fill of a structured answer. */
export function expectedReply(options: Record<string, unknown>): number {
  return Math.round(Number(options.num_predict ?? 0) / 2);
}

/**
 * The run's tally: Ollama's real counts for calls that ended, estimates for calls in flight.
 * Without a limit it still counts, so a run shows what it spent.
 */
export class TokenTally {
  readonly limit: number | null;
  #spent = 0;
  #reserved = 0;

  constructor(limit: number | null) {
    this.limit = limit ?? null;
  }

  /** Tokens counted so far: spent, plus the estimates of calls still running. */
  get used(): number {
    return this.#spent + this.#reserved;
  }

  get spent(): number {
    return this.#spent;
  }

  pressure(): BudgetPressure {
    return pressureAt(this.used, this.limit);
  }

  exhausted(): boolean {
    return this.limit !== null && this.used >= this.limit;
  }

  reserve(estimate: number): void {
    this.#reserved += estimate;
  }

  release(estimate: number): void {
    this.#reserved = Math.max(0, this.#reserved - estimate);
  }

  /** Adds one finished call's real tokens (or, without counts, the estimate of its prompt). */
  add(tokens: number): void {
    this.#spent += tokens;
  }
}

