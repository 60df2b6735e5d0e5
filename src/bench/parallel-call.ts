import type { CallRecord } from '../engine/events.js';
import { structuredCall } from '../engine/structured-call.js';
import type { Elsewhere } from '../schedule/failover.js';
import type { ModelServer } from '../backend/types.js';
import { renderTranscript, synthesisMessages } from '../protocol/prompts.js';
import { synthesisSchemaFor } from '../protocol/schemas.js';
import type { StoredDebate } from '../store/store.js';

/** The `parallel` condition's own call: a synthesis over the debate's round 0 alone. */
export interface ParallelCapture {
  recommendation: string | null;
  calls: CallRecord[];
  callIds: number[];
  note: string | null;
}

export interface ParallelCallSpec {
  debate: StoredDebate;
  question: string;
  /** The synthesizer the debate used (a rotating one is in its record), with the debate's num_ctx for it. */
  model: string;
  options: Record<string, unknown>;
  /** `think` as the debate's synthesizer sent it. */
  think?: boolean | 'low' | 'medium' | 'high' | undefined;
  timeoutMs: number;
  stallMs?: number;
  signal?: AbortSignal | undefined;
  now: () => number;
  /** Stores one call as soon as it ends and returns its row id. */
  onCall: (call: CallRecord) => number;
  /** Another server of the pool for a send whose host left (schedule/failover.ts). */
  elsewhere?: Elsewhere;
}

/**
 * What the parallel protocol would have answered on this item: the debate's independent
 * answers (already paid for) and one synthesis over them, made here for real and charged.
 */
export async function parallelSynthesis(gateway: ModelServer, spec: ParallelCallSpec): Promise<ParallelCapture> {
  const round0 = spec.debate.turns.filter((t) => t.round === 0);
  const calls: CallRecord[] = [];
  const callIds: number[] = [];
  if (!round0.some((t) => t.status === 'ok')) return { recommendation: null, calls, callIds, note: 'no usable round-0 answer' };
  const ids = spec.debate.agents.filter((a) => a.role === 'debater').map((a) => a.id);
  const failed = ids.filter((id) => round0.find((t) => t.agentId === id)?.status !== 'ok').map((id) => ({ agent: id, reason: round0.find((t) => t.agentId === id)?.error ?? 'no answer' }));
  const messages = synthesisMessages(spec.question, renderTranscript([{ round: 0, turns: round0, judgement: null }], 4000), ids, failed);
  const outcome = await structuredCall(
    gateway,
    {
      debateId: '',
      stage: 'synthesis',
      round: 0,
      agentId: 'synthesizer',
      model: spec.model,
      messages,
      options: spec.options,
      ...(spec.think === undefined ? {} : { think: spec.think }),
      // The panel's ids and round 0 bound it, as in a debate: agent ids an enum, counts by the panel size.
      schema: synthesisSchemaFor(ids, 0),
      timeoutMs: spec.timeoutMs,
      ...(spec.stallMs === undefined ? {} : { stallMs: spec.stallMs }),
      ...(spec.signal ? { signal: spec.signal } : {}),
    },
    {
      now: spec.now,
      onStart: () => {},
      onProgress: () => {},
      onCall: (call) => {
        calls.push(call);
        callIds.push(spec.onCall(call));
      },
      ...(spec.elsewhere ? { elsewhere: spec.elsewhere } : {}),
    },
  );
  if (outcome.status === 'ok') return { recommendation: outcome.value.recommendation, calls, callIds, note: null };
  return { recommendation: null, calls, callIds, note: `synthesis ${outcome.status}: ${outcome.error}` };
}
