import type { CallPriority } from '../../protocol/budget.js';
import type { ResultFacts } from '../../protocol/quality.js';
import type { ChatMessage } from '../../protocol/records.js';
import type { Opening } from '../../protocol/schemas.js';
import type { CallRecord, Stage } from '../call-record.js';
import type { DebateEvent } from '../events.js';
import type { StructuredCallSpec } from '../structured-call.js';

/**
 * One structured model call, as a primitive or a protocol asks for it: what the call sends
 * (its fields are documented on StructuredCallSpec), and what the path around it does.
 */
export interface CallRequest<T> extends Pick<StructuredCallSpec<T>, 'stage' | 'round' | 'agentId' | 'model' | 'messages' | 'options' | 'schema' | 'format' | 'normalize' | 'check' | 'truncation'> {
  onRecord?: (record: CallRecord) => void;
  /** Where the call path puts the `call.finished` event of its usable reply instead of reporting it, for the caller to report with the rating; failed tries are reported at once. */
  held?: DebateEvent[];
  /**
   * Set on an agent's call to give it the attached material and the constraints: the call path
   * inserts them, whole or as excerpts chosen for `focus` (its sub-question, its own position),
   * within the call's share of num_ctx, and records what it inserted. Judges and the synthesizer get none.
   */
  material?: { focus: string } | null;
  /** Who is skipped first when the token budget runs out; default: the agent's priority, `essential` for a run's result. */
  priority?: CallPriority;
  /** Cuts the budget made to this prompt (peers' reasoning left out), recorded only if the call runs. */
  budgetCuts?: string[];
  /** Rates the result as an agent's answer (docs/quality.md): retried once, or rejected, as the rating says. */
  quality?: QualityHook<T>;
}

/**
 * How the call path rates one kind of agent result. A retry asks the opening's shape (position,
 * reasoning, confidence) with `retry` as the prompt; `fromRetry` turns that answer into the
 * result's own shape.
 */
export interface QualityHook<T> {
  facts(value: T): ResultFacts;
  /** The simplified request: the question and the agent's role only (see `retryMessages`). */
  retry: ChatMessage[];
  fromRetry(answer: Opening): T;
}

/** The error code of a result the quality check rejected: protocols treat it as a failed turn. */
export const QUALITY_REJECTED = 'QUALITY_REJECTED';

/** How a budget decision names a call: `beta's critique in round 2`, `the judge's score in round 1`. */
export function callLabel(agentId: string, stage: Stage, round: number): string {
  const what = agentId === 'judge' ? `the judge's ${stage === 'judge' ? 'score' : stage}` : agentId === 'synthesizer' ? 'the synthesis' : `${agentId}'s ${stage}`;
  // A pipeline's phases and a decomposition's parts are not rounds: their stage names them.
  const inRounds = !['plan', 'observe', 'review', 'filter', 'subanswer', 'split', 'reassembly'].includes(stage);
  return `${what}${inRounds && round > 0 ? ` in round ${round}` : ''}`;
}
