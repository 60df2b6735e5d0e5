import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { schemaGrammarError } from './generate.js';
import type { ModelSpec, RunnerOptions } from './scheduler.js';

/**
 * Reading a request as Ollama's Go server does: the body decoded into its struct with Go's
 * messages for wrong types, keep_alive and options checked, the capability and the format
 * checked, and the prompt cut to the context window the way the runner cuts it.
 */

export const DEFAULT_NUM_CTX = 4096;

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Sent as the `Retry-After` header, in seconds. */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function goKind(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'boolean') return 'bool';
  return typeof value;
}

const GO_TYPES: Record<string, string> = {
  string: 'string',
  bool: 'bool',
  array: '[]api.Message',
  object: 'map[string]interface {}',
};

/** Mimics encoding/json's type errors for the fields the simulator reads. */
export function checkTypes(body: Record<string, unknown>, struct: string, fields: Record<string, string>): void {
  for (const [field, expected] of Object.entries(fields)) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    const actual = goKind(value);
    if (actual === expected) continue;
    const goType = field === 'tools' ? 'api.Tools' : (GO_TYPES[expected] ?? expected);
    throw new HttpError(400, `json: cannot unmarshal ${actual} into Go struct field ${struct}.${field} of type ${goType}`);
  }
}

export async function readBody(req: IncomingMessage, struct: string): Promise<Record<string, unknown>> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  const text = Buffer.concat(parts).toString('utf8');
  if (text.trim() === '') throw new HttpError(400, 'missing request body');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new HttpError(400, goSyntaxError(text));
  }
  if (!isRecord(parsed)) {
    throw new HttpError(400, `json: cannot unmarshal ${goKind(parsed)} into Go value of type api.${struct}`);
  }
  return parsed;
}

export function goSyntaxError(text: string): string {
  // A best effort at encoding/json's wording; clients only show it.
  const first = text.trimStart()[0] ?? '';
  if (!'{["-0123456789tfn'.includes(first)) return `invalid character '${first}' looking for beginning of value`;
  return 'unexpected EOF';
}

export function parseMessages(raw: unknown): { role: string; content: string }[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((item) => {
    if (!isRecord(item)) {
      throw new HttpError(400, `json: cannot unmarshal ${goKind(item)} into Go struct field ChatRequest.messages of type api.Message`);
    }
    for (const field of ['role', 'content']) {
      const value = item[field];
      if (value !== undefined && value !== null && typeof value !== 'string') {
        throw new HttpError(
          400,
          `json: cannot unmarshal ${goKind(value)} into Go struct field ChatRequest.messages.${field} of type string`,
        );
      }
    }
    return { role: String(item.role ?? '').toLowerCase(), content: String(item.content ?? '') };
  });
}

export function promptMessages(body: Record<string, unknown>): { role: string; content: string }[] {
  const out: { role: string; content: string }[] = [];
  if (typeof body.system === 'string' && body.system !== '') out.push({ role: 'system', content: body.system });
  if (typeof body.prompt === 'string' && body.prompt !== '') out.push({ role: 'user', content: body.prompt });
  return out;
}

const GO_UNITS_NS: Record<string, number> = { ns: 1, us: 1e3, 'µs': 1e3, 'μs': 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** Go's time.ParseDuration, returning nanoseconds or throwing Go's error text. */
export function parseGoDuration(text: string): number {
  const invalid = () => new Error(`time: invalid duration ${JSON.stringify(text)}`);
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    sign = rest.startsWith('-') ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') throw invalid();
  let total = 0;
  while (rest !== '') {
    const number = /^(\d*)(\.\d*)?/.exec(rest)!;
    const [whole, int = '', frac = ''] = number;
    if (int === '' && frac.length <= 1) throw invalid();
    rest = rest.slice(whole.length);
    const unit = /^[^\d.]+/.exec(rest)?.[0];
    if (unit === undefined) throw new Error(`time: missing unit in duration ${JSON.stringify(text)}`);
    const scale = GO_UNITS_NS[unit];
    if (scale === undefined) throw new Error(`time: unknown unit ${JSON.stringify(unit)} in duration ${JSON.stringify(text)}`);
    total += Number(`${int || '0'}${frac}`) * scale;
    rest = rest.slice(unit.length);
  }
  return sign * total;
}

/** keep_alive as Ollama's api.Duration decodes it: ms, Infinity for negative, undefined when absent. */
export function parseKeepAlive(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  let ns: number;
  if (typeof value === 'number') {
    ns = value * 1e9;
  } else if (typeof value === 'string') {
    try {
      ns = parseGoDuration(value);
    } catch (error) {
      throw new HttpError(400, (error as Error).message);
    }
  } else {
    const goType = typeof value === 'boolean' ? 'bool' : Array.isArray(value) ? '[]interface {}' : 'map[string]interface {}';
    throw new HttpError(400, `Unsupported type: '${goType}'`);
  }
  return ns < 0 ? Number.POSITIVE_INFINITY : ns / 1e6;
}

const INT_OPTIONS = ['num_ctx', 'num_batch', 'num_gpu', 'main_gpu', 'num_thread', 'num_keep', 'seed', 'num_predict', 'top_k', 'repeat_last_n'];

const FLOAT_OPTIONS = ['temperature', 'top_p', 'min_p', 'typical_p', 'repeat_penalty', 'presence_penalty', 'frequency_penalty'];

/** Options.FromMap: known keys must have the right JSON type; unknown keys are ignored. */
export function checkOptions(options: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(options)) {
    if (value === null || value === undefined) continue;
    if (INT_OPTIONS.includes(key) && typeof value !== 'number') {
      throw new HttpError(500, `option "${key}" must be of type integer`);
    }
    if (FLOAT_OPTIONS.includes(key) && typeof value !== 'number') {
      throw new HttpError(500, `option "${key}" must be of type float32`);
    }
    if ((key === 'use_mmap' || key === 'numa') && typeof value !== 'boolean') {
      throw new HttpError(500, `option "${key}" must be of type boolean`);
    }
    if (key === 'stop' && !(Array.isArray(value) && value.every((s) => typeof s === 'string'))) {
      throw new HttpError(500, `option "${key}" must be of type array of strings`);
    }
  }
}

export function toRunnerOptions(options: Record<string, unknown>, spec: ModelSpec): RunnerOptions {
  const int = (key: string, fallback: number) =>
    typeof options[key] === 'number' ? Math.trunc(options[key] as number) : fallback;
  const requested = int('num_ctx', DEFAULT_NUM_CTX);
  return {
    numCtx: Math.max(1, Math.min(requested, spec.contextLength)),
    numGpu: int('num_gpu', -1),
    numBatch: int('num_batch', 512),
    numThread: int('num_thread', 0),
  };
}

export function checkCapabilities(kind: 'chat' | 'generate', spec: ModelSpec, body: Record<string, unknown>): void {
  const has = (capability: string) => spec.capabilities.includes(capability);
  const model = String(body.model);
  if (!has('completion')) throw new HttpError(400, `"${model}" does not support ${kind}`);
  if (Array.isArray(body.tools) && body.tools.length > 0 && !has('tools')) {
    throw new HttpError(400, `registry.ollama.ai/library/${spec.canonical} does not support tools`);
  }
  const think = body.think;
  if ((think === true || (typeof think === 'string' && think !== '')) && !has('thinking')) {
    throw new HttpError(400, `"${model}" does not support thinking`);
  }
}

/** A seed fixed by what a request asks: model, messages, schema and sampling seed. */
export function requestSeed(model: string, messages: readonly { role: string; content: string }[], format: unknown, options: Record<string, unknown>): number {
  const hash = createHash('sha256').update(JSON.stringify([model, messages, format ?? null, options.seed ?? null]));
  return hash.digest().readUInt32BE(0);
}

/** The error Ollama's runner gives for `format`, or undefined when it is acceptable. */
export function validateFormat(format: unknown): string | undefined {
  if (format === undefined || format === null || format === '' || format === 'json') return undefined;
  if (!isRecord(format)) {
    const raw = JSON.stringify(format);
    return `invalid format: ${JSON.stringify(raw)}; expected "json" or a valid JSON Schema object`;
  }
  return schemaGrammarError(format) === undefined ? undefined : 'invalid JSON schema in format';
}

/** Drops the oldest non-system messages until the prompt fits num_ctx, always keeping the last one. */
export function truncateToContext(
  messages: { role: string; content: string }[],
  numCtx: number,
): { role: string; content: string }[] {
  const tokens = (list: { content: string }[]) => Math.ceil(list.reduce((n, m) => n + m.content.length, 0) / 4);
  let kept = messages;
  let start = 0;
  while (tokens(kept) > numCtx && start < messages.length - 1) {
    if (messages[start]!.role !== 'system') {
      const dropped = messages[start];
      kept = kept.filter((m) => m !== dropped);
    }
    start++;
  }
  return kept;
}
