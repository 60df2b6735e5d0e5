import type { z } from 'zod';
import type { ModelOptions, Preset } from '../config/preset-schema.js';
import type { CallPriority } from '../protocol/budget.js';
import type { TranscriptRound } from '../protocol/prompts.js';
import type { ClashBoard } from '../protocol/tensions.js';
import type { CallRecord, ChatMessage, DebateEvent, Stage } from './events.js';
import type { StructuredOutcome } from './structured-call.js';

/** One model call an optional stage asks the engine to make: scheduled, recorded, validated, normalised. */
export interface StageCallRequest<T> {
  stage: Stage;
  round: number;
  /** Agent id for debaters; a role name (e.g. `judge`) otherwise. */
  agentId: string;
  model: string;
  messages: ChatMessage[];
  options?: ModelOptions | undefined;
  /** Built for this call from what is known then (ids as enums, bounds): it is sent as `format`. */
  schema: z.ZodType<T>;
  /** Sent as `format` instead of `schema` when the grammar can hold more than `schema` reads with. */
  format?: z.ZodType;
  /** What the grammar cannot express, settled in place without a repair; a note per change. */
  normalize?: (value: T) => string[];
  /** A fault in a valid reply worth the one repair (see StructuredCallSpec.check). */
  check?: (value: T) => string | null;
  /** num_predict for this call (default: the preset's maxAnswerTokens). */
  maxTokens?: number;
  /** Under a token budget: `essential` calls always run (default: the agent's priority). */
  priority?: CallPriority;
  /** Sees each call's record right after the recorder stored it (to link stage rows to their calls). */
  onCall?: (call: CallRecord) => void;
}

export interface StageContext {
  debateId: string;
  question: string;
  preset: Preset;
  /** Every round so far, oldest first; the last one holds the final positions. */
  rounds: readonly TranscriptRound[];
  call<T>(request: StageCallRequest<T>): Promise<StructuredOutcome<T>>;
  emit(event: DebateEvent): void;
  now(): number;
  signal?: AbortSignal | undefined;
  /** The clashes a debate mapped on its round-0 answers and carried through its critique rounds; undefined when it mapped none early. */
  clashes?: ClashBoard | null;
}

export interface StageOutput {
  /** Sections appended to the synthesizer's prompt (e.g. the clash map, the vote tiers). */
  synthesisContext?: string[];
}

/**
 * An optional stage that runs after the last debate round and before synthesis.
 * The preset turns it on; its failures are recorded and never abort the debate.
 */
export interface ExtraStage {
  name: string;
  enabled(preset: Preset): boolean;
  /** Models this stage calls beyond the panel, judge and synthesizer, so preflight checks them. */
  models?(preset: Preset): string[];
  run(ctx: StageContext): Promise<StageOutput>;
}
