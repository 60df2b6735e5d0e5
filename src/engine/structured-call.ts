import type { z } from 'zod';
import { formatIssues } from '../config/load-preset.js';
import { CallError, type ChatProgress, type ModelServer } from '../backend/types.js';
import { repairMessages } from '../protocol/prompts.js';
import { withTransientRetry } from './call/retry.js';
import { conformToSchema, formatSchemasOf } from '../protocol/grammar.js';
import type { CallRecord, ChatMessage, Stage } from './events.js';

export interface StructuredCallSpec<T> {
  debateId: string;
  stage: Stage;
  round: number;
  agentId: string;
  model: string;
  messages: ChatMessage[];
  options: Record<string, unknown>;
  /** Built for this call with everything known (peer ids, panel size, rounds held): it is sent as `format`. */
  schema: z.ZodType<T>;
  /**
   * The schema sent as `format` when the grammar can hold more than `schema` reads with (a clash's
   * claims from the two sides of a listed pair): a reply from a server that enforced it always reads;
   * one from a server that did not is read with `schema`, and `normalize`/`check` name what is wrong.
   */
  format?: z.ZodType;
  /**
   * What the grammar cannot express, settled without a repair: edits the value in place
   * (drops a reference to nothing, fills a gap) and returns a note per change.
   */
  normalize?: (value: T) => string[];
  /**
   * A fault in what a valid reply says that is worth the one repair (a hedged headline): the
   * problem, worded for the model, or null. A repaired reply is kept even if it still has it.
   */
  check?: (value: T) => string | null;
  truncation?: string | null;
  /** The number of the first request: 0, or 2 for a quality retry (its repair is then 3). */
  firstAttempt?: number;
  timeoutMs: number;
  /** How long a begun reply may send nothing before it is cut (`protocol.stallSeconds`); default STALL_MS. */
  stallMs?: number;
  signal?: AbortSignal;
  /** Pauses before each repeat of a request that failed for a passing reason (see call/retry.ts). */
  retryDelaysMs?: readonly number[];
  /** Ollama's `think`, as chosen for the role and model (call/thinking.ts); absent: not sent. */
  think?: boolean | 'low' | 'medium' | 'high';
}

export interface StructuredCallHooks {
  onStart(attempt: number): void;
  /** Each streamed token; leave it out when nothing reads them. */
  onProgress?: (tokens: number, delta: string, thought?: string) => void;
  /** Called once per model call, as soon as it ends. */
  onCall(call: CallRecord): void;
  now(): number;
  /**
   * Asked with a send that failed: another server to send it to at once, when its host has left a
   * pool that has another for the model (the failed send is recorded under the host that failed); else null.
   */
  elsewhere?: (from: string, err: unknown) => Promise<ModelServer | null>;
}

export type StructuredOutcome<T> =
  | { status: 'ok'; value: T }
  | { status: 'invalid'; error: string }
  /** `host`: where the last send went (the host that was not reached, for an outage). */
  | { status: 'failed'; error: string; code: string; host?: string }
  /** Not sent at all: the token budget ran out for an agent of this priority. */
  | { status: 'skipped'; error: string };

/**
 * One structured answer: a call with Ollama's `format` set to the schema, validated
 * with zod. Every reply the schema's grammar allows is usable (normalised where the
 * grammar could not say everything); one repair request, quoting the problem, only
 * for a reply that is not JSON or breaks the schema sent.
 */
export async function structuredCall<T>(server: ModelServer, spec: StructuredCallSpec<T>, hooks: StructuredCallHooks): Promise<StructuredOutcome<T>> {
  let gateway = server;
  const schemas = formatSchemasOf(spec.schema);
  const format = formatSchemasOf(spec.format ?? spec.schema).sent;
  let messages = spec.messages;
  let options = spec.options;
  let lastProblem = '';
  /** A valid first reply sent back for a `check` fault, kept if the repair brings nothing usable. */
  let fallback: { value: T } | null = null;
  const onProgress = hooks.onProgress;
  const first = spec.firstAttempt ?? 0;
  const think = spec.think === undefined ? {} : { think: spec.think };
  for (let attempt = first; attempt < first + 2; attempt++) {
    hooks.onStart(attempt);
    let startedAt = hooks.now();
    const sentOptions = options;
    const baseAt = (at: number) => ({
      debateId: spec.debateId,
      stage: spec.stage,
      round: spec.round,
      agentId: spec.agentId,
      attempt,
      host: gateway.host,
      ...(gateway.api === 'ollama' ? {} : { api: gateway.api }),
      model: spec.model,
      messages,
      options: sentOptions,
      ...think,
      format,
      truncation: attempt === first ? (spec.truncation ?? null) : null,
      startedAt: at,
    });
    const sent = messages;
    let result: Awaited<ReturnType<ModelServer['chat']>>;
    try {
      // A request that failed for a passing reason is sent again as it was; each send is its own recorded call.
      const send = () =>
        gateway.chat(
          { model: spec.model, messages: sent, options: sentOptions, format, ...think },
          { timeoutMs: spec.timeoutMs, ...(spec.stallMs === undefined ? {} : { stallMs: spec.stallMs }), ...(spec.signal ? { signal: spec.signal } : {}), ...(onProgress ? { onProgress: (p: ChatProgress) => onProgress(p.tokens, p.delta, p.thought) } : {}) },
        );
      result = await withTransientRetry(
        // A host that left the pool is not waited for: the send goes at once to another that serves the model, uncounted as a resend.
        async () => {
          for (;;) {
            try {
              return await send();
            } catch (err) {
              const other = spec.signal?.aborted ? null : await hooks.elsewhere?.(gateway.host, err);
              if (!other) throw err;
              hooks.onCall(failedCall(baseAt(startedAt), err, hooks.now()).call);
              gateway = other;
              hooks.onStart(attempt);
              startedAt = hooks.now();
            }
          }
        },
        (err) => hooks.onCall(failedCall(baseAt(startedAt), err, hooks.now()).call),
        spec.retryDelaysMs,
        spec.signal,
        () => {
          hooks.onStart(attempt);
          startedAt = hooks.now();
        },
      );
    } catch (err) {
      const { call, error } = failedCall(baseAt(startedAt), err, hooks.now());
      // Outside the try: a failure to record it is the record's, never the call's.
      hooks.onCall(call);
      if (fallback) return { status: 'ok', value: fallback.value };
      return { status: 'failed', error: error.message, code: error.code, host: gateway.host };
    }
    const content = result.content;
    const parsed = readReply(content, result.thinking, spec.schema, spec.normalize, schemas.full);
    // A reply that stopped at num_predict is unreadable because it was cut, whatever the server enforces.
    const cut = !parsed.ok && result.metrics.doneReason === 'length';
    // Only the first reply is checked: the repair's reply is kept whatever it says.
    const fault = parsed.ok && attempt === first && spec.check ? spec.check(parsed.value) : null;
    if (parsed.ok && fault) fallback = { value: parsed.value };
    const call: CallRecord = {
      ...baseAt(startedAt),
      raw: content,
      ...(result.thinking === '' ? {} : { thinking: result.thinking, thinkingTokens: result.thinkingTokens }),
      parsed: parsed.json,
      status: parsed.ok && !fault ? 'ok' : 'invalid',
      validationError: !parsed.ok ? (cut ? `${CUT_OFF} ${cutProblem(sentOptions)}` : `${UNENFORCED} ${parsed.problem}`) : fault ? `${UNMET} ${fault}` : null,
      ...(parsed.ok && parsed.notes.length ? { normalized: parsed.notes } : {}),
      error: null,
      metrics: result.metrics,
      finishedAt: hooks.now(),
    };
    hooks.onCall(call);
    if (parsed.ok && !fault) return { status: 'ok', value: parsed.value };
    lastProblem = parsed.ok ? fault! : cut ? `${CUT_OFF} ${cutProblem(sentOptions)}` : parsed.problem;
    messages = repairMessages(spec.messages, content, cut ? 'it was cut off at the length limit before the JSON object was complete: write every field shorter.' : lastProblem);
    // A reply cut off at num_predict would be cut again by the same request: the repair gets twice the room.
    if (result.metrics.doneReason === 'length') options = { ...options, num_predict: 2 * Number(options.num_predict ?? 1024) };
  }
  // A repair that went wrong leaves the first reply, valid but for the fault its call names.
  if (fallback) return { status: 'ok', value: fallback.value };
  return { status: 'invalid', error: `invalid after one repair: ${lastProblem}` };
}

/** The note on a reply read from the model's thinking because its content was empty (Ollama's bug #12831). */
export const FROM_THINKING = 'recovered from thinking: the content was empty and the JSON was at the end of the model\'s thinking';

/**
 * A reply's content, or, when the content is empty, the last JSON object of the model's thinking,
 * validated against the same schema and marked with a note saying where it came from.
 */
function readReply<T>(content: string, thinking: string, schema: z.ZodType<T>, normalize: ((value: T) => string[]) | undefined, full: Record<string, unknown>): Parsed<T> {
  const parsed = parseReply(content, schema, normalize, full);
  if (parsed.ok || content.trim() !== '' || thinking.trim() === '') return parsed;
  const tail = lastJsonObject(thinking);
  if (tail === null) return parsed;
  const recovered = parseReply(tail, schema, normalize, full);
  return recovered.ok ? { ...recovered, notes: [FROM_THINKING, ...recovered.notes] } : parsed;
}

/** The last complete JSON object in a text (its closing brace nearest the end), or null when there is none. */
export function lastJsonObject(text: string): string | null {
  const end = text.lastIndexOf('}');
  if (end < 0) return null;
  for (let start = text.lastIndexOf('{', end); start >= 0; start = start === 0 ? -1 : text.lastIndexOf('{', start - 1)) {
    const candidate = text.slice(start, end + 1);
    try {
      const value: unknown = JSON.parse(candidate);
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) return candidate;
    } catch {
      // Not an object that starts here; try the brace before it.
    }
  }
  return null;
}

/** Why a repair happens at all: a server that enforces `format` cannot send a reply that needs one. */
export const UNENFORCED = 'The server did not enforce the JSON Schema sent as format:';
/** Why a reply that stopped at its token limit (done_reason `length`) could not be read. */
export const CUT_OFF = 'The reply reached its token limit before its JSON was complete:';

/** The limit the reply met, and where a preset raises it. */
function cutProblem(options: Record<string, unknown>): string {
  const limit = typeof options.num_predict === 'number' ? `num_predict ${options.num_predict}` : 'the server\'s own limit';
  return `it stopped at ${limit}. If it recurs, raise \`protocol.maxAnswerTokens\` in the preset (or the agent's \`options.num_predict\`).`;
}

/** Why a valid reply was sent back once: what it says breaks a rule the grammar cannot state. */
export const UNMET = 'The reply is valid JSON but breaks a rule of the prompt:';

type Parsed<T> = { ok: true; value: T; json: unknown; notes: string[] } | { ok: false; problem: string; json: unknown };

/** Small models wrap JSON in prose or code fences; take the outermost object. */
export function extractJson(text: string): unknown {
  // JSON.parse skips the whitespace JSON allows around a value, so a plain reply needs no trimmed copy.
  try {
    return JSON.parse(text);
  } catch {
    // Padded with other whitespace (a BOM, a no-break space), or wrapped: read as before.
  }
  const trimmed = text.trim();
  try {
    return JSON.parse(trimmed);
  } catch {
    // A server that does not constrain from the first token may put the reasoning in the content, in
    // <think> tags, where a draft's braces would be taken for the reply's: read what follows it first.
    const thought = trimmed.lastIndexOf('</think>');
    if (thought >= 0) {
      try {
        return extractJson(trimmed.slice(thought + '</think>'.length));
      } catch {
        // Nothing usable after it: read the whole text as before.
      }
    }
    const start = trimmed.indexOf('{');
    const end = trimmed.lastIndexOf('}');
    if (start >= 0 && end > start) return JSON.parse(trimmed.slice(start, end + 1));
    throw new Error('no JSON object found');
  }
}

/**
 * Reads a reply: JSON, checked for numbers the grammar could not bound (`full`, the whole
 * generated JSON Schema), validated with zod, then normalised.
 * A problem (worded for the repair request) means the server did not hold the model to the schema sent.
 */
export function parseReply<T>(content: string, schema: z.ZodType<T>, normalize?: (value: T) => string[], full?: Record<string, unknown>): Parsed<T> {
  let json: unknown;
  try {
    json = extractJson(content);
  } catch (err) {
    return { ok: false, problem: `it is not valid JSON (${(err as Error).message}).`, json: null };
  }
  // A number out of range or not finite is named as such, never brought into range (a 0-100 judge is not "1").
  const { problems } = conformToSchema(json, full ?? formatSchemasOf(schema).full);
  if (problems.length) return { ok: false, problem: `it has numbers outside what the schema allows:\n${problems.map((p) => `  - ${p}`).join('\n')}`, json };
  const result = schema.safeParse(json);
  if (!result.success) {
    return { ok: false, problem: `it does not match the required fields:\n${formatIssues(result.error)}`, json };
  }
  const notes = normalize?.(result.data) ?? [];
  return { ok: true, value: result.data, json, notes };
}

/** The record of a call that failed (HTTP error, timeout, abort, broken stream), and the error as a CallError. */
export function failedCall(
  base: Omit<CallRecord, 'raw' | 'parsed' | 'status' | 'validationError' | 'error' | 'metrics' | 'finishedAt'>,
  err: unknown,
  finishedAt: number,
): { call: CallRecord; error: CallError } {
  const error = err instanceof CallError ? err : new CallError('STREAM_ERROR', String(err));
  return {
    error,
    call: {
      ...base,
      raw: error.partial,
      ...(error.partial !== '' || error.partialThinking !== '' ? { partial: true } : {}),
      ...(error.partialThinking === '' ? {} : { thinking: error.partialThinking }),
      parsed: null,
      status: error.code === 'CALL_ABORTED' ? 'aborted' : 'error',
      validationError: null,
      error: `${error.code}: ${error.message}`,
      metrics: emptyMetrics(),
      finishedAt,
    },
  };
}

export function emptyMetrics(): CallRecord['metrics'] {
  return {
    promptTokens: null,
    completionTokens: null,
    totalDurationNs: null,
    loadDurationNs: null,
    promptEvalDurationNs: null,
    evalDurationNs: null,
    doneReason: null,
  };
}
