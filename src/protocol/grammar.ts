import { z } from 'zod';

/**
 * The JSON Schema sent as Ollama's `format`, and the bridge between what that
 * schema's grammar lets a model write and what the zod schema accepts.
 *
 * Ollama turns `format` into a grammar with llama.cpp's json-schema-to-grammar
 * (llama/llama.cpp/common/json-schema-to-grammar.cpp in Ollama's tree), which
 * honours: `type` (one or a list), `properties`, `required`,
 * `additionalProperties`, `enum`, `const`, `anyOf`/`oneOf`, local `$ref`,
 * `items`/`prefixItems`, `minItems`/`maxItems`, `minLength`/`maxLength` on a
 * string, and `minimum`/`maximum`/`exclusiveMinimum`/`exclusiveMaximum` on an
 * integer. It ignores bounds on a `number`, and it compiles `pattern` and a few
 * string `format`s into rules we do not want (an unanchored pattern is refused
 * as `invalid JSON schema in format`). So the schema sent keeps only what is
 * honoured, and what it cannot say (a number's range) is brought into range by
 * the engine, with a note, instead of costing a repair call.
 */

type Json = Record<string, unknown>;

export interface FormatSchemas {
  /** What is sent as `format`: only keywords the grammar honours. */
  sent: Json;
  /** The whole JSON Schema zod generates, bounds on numbers included. */
  full: Json;
}

const cache = new WeakMap<z.ZodType, FormatSchemas>();

export function formatSchemasOf(schema: z.ZodType): FormatSchemas {
  const cached = cache.get(schema);
  if (cached) return cached;
  const full = z.toJSONSchema(schema, { target: 'draft-7', unrepresentable: 'any' }) as Json;
  delete full.$schema;
  const schemas = { full, sent: onlyHonoured(full) as Json };
  cache.set(schema, schemas);
  return schemas;
}

/** JSON Schema for Ollama's `format`, with only the keywords its grammar honours. */
export function formatSchemaOf(schema: z.ZodType): Json {
  return formatSchemasOf(schema).sent;
}

const NUMBER_BOUNDS = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']);

function onlyHonoured(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(onlyHonoured);
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  const isNumber = (node as Json).type === 'number';
  for (const [key, value] of Object.entries(node as Json)) {
    if (key === 'properties' && value && typeof value === 'object') {
      // A property may be called `format` or `pattern`: the map's keys are names, not keywords.
      out[key] = Object.fromEntries(Object.entries(value as Json).map(([name, sub]) => [name, onlyHonoured(sub)]));
      continue;
    }
    if ((key === 'pattern' || key === 'format') && typeof value === 'string') continue;
    if (key === 'uniqueItems') continue;
    if (isNumber && NUMBER_BOUNDS.has(key)) continue;
    if (key === 'enum' || key === 'const' || key === 'required' || key === 'examples' || key === 'default') {
      out[key] = value;
      continue;
    }
    out[key] = onlyHonoured(value);
  }
  return out;
}

/**
 * Brings a reply the grammar allowed within what the full schema says where the
 * grammar could not: a number outside its range is clamped to the nearest bound
 * (a non-finite one, from an exponent too large, likewise). Returns the value
 * and a note per change. Values are copied only where something changed.
 */
export function conformToSchema(value: unknown, full: Json): { value: unknown; notes: string[] } {
  const notes: string[] = [];
  const result = walk(value, full, full, '', notes);
  return { value: result, notes };
}

function walk(value: unknown, schema: Json, root: Json, path: string, notes: string[]): unknown {
  if (typeof schema.$ref === 'string') return walk(value, resolve(root, schema.$ref), root, path, notes);
  const alternatives = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (Array.isArray(alternatives)) {
    // Only a number branch can need clamping; pick the first branch of the value's kind.
    const branch = alternatives.find((s) => kindMatches(value, s));
    return branch ? walk(value, branch, root, path, notes) : value;
  }
  if (typeof value === 'number' && schema.type === 'number') return clampNumber(value, schema, path, notes);
  if (Array.isArray(value) && schema.items && typeof schema.items === 'object' && !Array.isArray(schema.items)) {
    let changed = false;
    const out = value.map((item, i) => {
      const next = walk(item, schema.items as Json, root, `${path}[${i}]`, notes);
      if (next !== item) changed = true;
      return next;
    });
    return changed ? out : value;
  }
  if (value && typeof value === 'object' && !Array.isArray(value) && schema.properties && typeof schema.properties === 'object') {
    let out: Json | null = null;
    for (const [name, sub] of Object.entries(schema.properties as Json)) {
      if (!(name in (value as Json))) continue;
      const item = (value as Json)[name];
      const next = walk(item, sub as Json, root, path ? `${path}.${name}` : name, notes);
      if (next !== item) {
        out ??= { ...(value as Json) };
        out[name] = next;
      }
    }
    return out ?? value;
  }
  return value;
}

function clampNumber(value: number, schema: Json, path: string, notes: string[]): number {
  const min = typeof schema.minimum === 'number' ? schema.minimum : -Infinity;
  const max = typeof schema.maximum === 'number' ? schema.maximum : Infinity;
  const clamped = Number.isNaN(value) ? min : Math.min(max, Math.max(min, value));
  if (clamped === value || !Number.isFinite(clamped)) return value;
  notes.push(`${path || 'the reply'} was ${value}, outside ${min} to ${max}; taken as ${clamped}`);
  return clamped;
}

function kindMatches(value: unknown, schema: Json): boolean {
  const type = schema.type;
  if (type === undefined) return true;
  const types = Array.isArray(type) ? type : [type];
  const kind = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'number' ? 'number' : typeof value;
  return types.some((t) => t === kind || (t === 'integer' && kind === 'number'));
}

function resolve(root: Json, ref: string): Json {
  let node: unknown = root;
  for (const part of ref.replace(/^#\/?/, '').split('/').filter(Boolean)) node = (node as Json | undefined)?.[part];
  return node && typeof node === 'object' ? (node as Json) : {};
}

/**
 * Per-call schemas are built from the ids known at the call; the same ids give the
 * same zod object, so its generated JSON Schema is built once and reused.
 */
export function memoSchema<A extends unknown[], S extends z.ZodType>(build: (...args: A) => S, limit = 512): (...args: A) => S {
  const memo = new Map<string, S>();
  return (...args: A): S => {
    const key = JSON.stringify(args);
    const hit = memo.get(key);
    if (hit) return hit;
    if (memo.size >= limit) memo.clear();
    const made = build(...args);
    memo.set(key, made);
    return made;
  };
}

/**
 * Free text with a length bound for the grammar only: Ollama stops the model at
 * `maxLength` characters, so a reply fits its num_predict and is not cut off mid-JSON.
 * zod does not re-check it (it counts UTF-16 units, the grammar counts characters).
 */
export function boundedText(maxLength: number): z.ZodString {
  return z.string().meta({ maxLength });
}

/** A zod enum of ids; an empty list gets the fallback so the grammar always has an alternative. */
export function idEnum(ids: readonly string[], fallback: readonly string[] = []): z.ZodType<string> {
  const list = [...new Set(ids.length ? ids : fallback)];
  return list.length ? z.enum(list as [string, ...string[]]) : z.string().min(1);
}
