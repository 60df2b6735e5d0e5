import type { z } from 'zod';
import type { Elsewhere } from '../schedule/failover.js';
import type { ChatMessage, CallRecord } from '../engine/events.js';
import { failedCall, parseReply } from '../engine/structured-call.js';
import type { ModelServer } from '../backend/types.js';
import { repairMessages } from '../protocol/prompts.js';
import { formatSchemaOf } from '../protocol/grammar.js';
import { type ExtractMethod, extractAnswer } from './extract.js';
import { answerMessages, benchAnswerSchemaFor } from './prompts.js';
import type { SuiteItem } from './suite.js';

export interface AnswerCallSpec {
  item: SuiteItem;
  /** Recorded on each call; the persona sets the system prompt. */
  agentId: string;
  persona: string | null | undefined;
  model: string;
  options: Record<string, unknown>;
  /** `think` as the agent's debate calls sent it, so a baseline thinks as the panel did. */
  think?: boolean | 'low' | 'medium' | 'high' | undefined;
  timeoutMs: number;
  stallMs?: number;
  signal?: AbortSignal | undefined;
  now: () => number;
  /** Stores one call as soon as it ends and returns its row id. */
  onCall: (call: CallRecord) => number;
  /** A revision of the self-correction control: its own messages, recorded as a critique of that round. Default: a stand-alone answer. */
  revision?: { round: number; messages: ChatMessage[] };
  /** Another server of the pool for a send whose host left (schedule/failover.ts); the failed send stays recorded. */
  elsewhere?: Elsewhere;
}

export interface AnswerOutcome {
  /** `ok`: an answer was read; `unparsed`: none, even after the repair; `error`: the call failed. */
  status: 'ok' | 'unparsed' | 'error';
  answer: string | null;
  method: ExtractMethod;
  callIds: number[];
  calls: CallRecord[];
  /** The failure of the last attempt, if any. */
  error: string | null;
  /** The gateway's code when the call failed (`HOST_UNREACHABLE`, `CALL_TIMEOUT`, …). */
  errorCode: string | null;
  /** The "reasoning" of the reply the answer was read from, when it had one. */
  reasoning?: string;
}

/**
 * One agent answers an item alone: the reply is asked for as JSON with an
 * `answer` field (Ollama `format`), read with the tolerant extractor (so a
 * reply that ignores the format but states its answer still counts), and
 * repaired once when nothing usable came back.
 */
export async function answerCall(server: ModelServer, spec: AnswerCallSpec): Promise<AnswerOutcome> {
  let gateway = server;
  const original = spec.revision?.messages ?? answerMessages(spec.item, spec.persona);
  const schema: z.ZodType<{ reasoning: string; answer: string | number }> = benchAnswerSchemaFor(spec.item.kind, spec.item.choices?.length ?? 0);
  const format = formatSchemaOf(schema);
  const outcome: AnswerOutcome = { status: 'unparsed', answer: null, method: 'none', callIds: [], calls: [], error: null, errorCode: null };
  let messages = original;
  const think = spec.think === undefined ? {} : { think: spec.think };
  for (let attempt = 0; attempt < 2; attempt++) {
    const startedAt = spec.now();
    const base = {
      debateId: '',
      stage: spec.revision ? ('critique' as const) : ('opening' as const),
      round: spec.revision?.round ?? 0,
      agentId: spec.agentId,
      attempt,
      host: gateway.host,
      ...(gateway.api === 'ollama' ? {} : { api: gateway.api }),
      model: spec.model,
      messages,
      options: spec.options,
      ...think,
      format,
      truncation: null,
      startedAt,
    };
    let content: string;
    let metrics: CallRecord['metrics'];
    let thought: Pick<CallRecord, 'thinking' | 'thinkingTokens'> = {};
    try {
      const result = await gateway.chat(
        { model: spec.model, messages, options: spec.options, format, ...think },
        { timeoutMs: spec.timeoutMs, ...(spec.stallMs === undefined ? {} : { stallMs: spec.stallMs }), ...(spec.signal ? { signal: spec.signal } : {}) },
      );
      content = result.content;
      metrics = result.metrics;
      if (result.thinking !== '') thought = { thinking: result.thinking, thinkingTokens: result.thinkingTokens };
    } catch (err) {
      const { call, error: callError } = failedCall(base, err, spec.now());
      outcome.calls.push(call);
      outcome.callIds.push(spec.onCall(call));
      // Its host left the pool: the same attempt goes at once to another host of the model.
      const other = spec.signal?.aborted ? null : await spec.elsewhere?.(base.host, err);
      if (other) {
        gateway = other;
        attempt -= 1;
        continue;
      }
      return { ...outcome, status: 'error', error: callError.message, errorCode: callError.code };
    }
    const parsed = parseReply(content, schema);
    const extracted = extractAnswer(content, spec.item.kind, spec.item.choices);
    const problem =
      extracted.value !== null
        ? null
        : parsed.ok
          ? `its "answer" ${JSON.stringify(parsed.value.answer)} is not ${describeKind(spec.item)}.`
          : parsed.problem;
    const call: CallRecord = {
      ...base,
      ...thought,
      raw: content,
      parsed: parsed.json,
      status: extracted.value !== null ? 'ok' : 'invalid',
      // A schema problem stays on record even when the tolerant reading found an answer.
      validationError: parsed.ok ? problem : parsed.problem,
      error: null,
      metrics,
      finishedAt: spec.now(),
    };
    outcome.calls.push(call);
    outcome.callIds.push(spec.onCall(call));
    if (extracted.value !== null) {
      const reasoning = parsed.ok ? parsed.value.reasoning : undefined;
      return { ...outcome, status: 'ok', answer: extracted.value, method: extracted.method, error: null, ...(reasoning === undefined ? {} : { reasoning }) };
    }
    outcome.error = problem;
    messages = repairMessages(original, content, problem ?? 'it has no final answer.');
  }
  return outcome;
}

function describeKind(item: SuiteItem): string {
  switch (item.kind) {
    case 'number':
      return 'a number';
    case 'choice':
      return `one of the letters ${'ABCDEFGHIJKLMNOPQRSTUVWXYZ'.slice(0, item.choices?.length ?? 4).split('').join(', ')}`;
    case 'text':
      return 'a short answer';
  }
}
