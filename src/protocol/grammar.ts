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
 * honoured. Every number the engine acts on is therefore an integer with bounds
 * (`percent()` for scores), and the grammar writes required properties before
 * optional ones, so no schema declares an optional property before a required one.
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
  const full = z.toJSONSchema(schema, { target: 'draft-7', unrepresentable: 'any', io: 'input' }) as Json;
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
 * Checks a reply against what the full schema says where the grammar could not: a number that is
 * not finite (an exponent too large, such as `1e999`, reads as Infinity) or outside its range. It is
 * never brought into range: a score of 41 on a 0-to-1 scale is not "1", it is a misreading. Each
 * problem is worded for the repair request and names the field and the value.
 */
export function conformToSchema(value: unknown, full: Json): { value: unknown; problems: string[] } {
  const problems: string[] = [];
  walk(value, full, full, '', problems);
  return { value, problems };
}

function walk(value: unknown, schema: Json, root: Json, path: string, problems: string[]): void {
  if (typeof schema.$ref === 'string') return walk(value, resolve(root, schema.$ref), root, path, problems);
  const alternatives = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (Array.isArray(alternatives)) {
    const branch = alternatives.find((s) => kindMatches(value, s));
    if (branch) walk(value, branch, root, path, problems);
    return;
  }
  if (typeof value === 'number') return checkNumber(value, schema, path, problems);
  if (Array.isArray(value)) {
    if (schema.items && typeof schema.items === 'object' && !Array.isArray(schema.items)) value.forEach((item, i) => mayHoldNumbers(item) && walk(item, schema.items as Json, root, `${path}[${i}]`, problems));
    return;
  }
  if (value && typeof value === 'object' && schema.properties && typeof schema.properties === 'object') {
    const properties = schema.properties as Json;
    for (const name of Object.keys(properties)) {
      const field = (value as Json)[name];
      if (name in (value as Json) && mayHoldNumbers(field)) walk(field, properties[name] as Json, root, path ? `${path}.${name}` : name, problems);
    }
  }
}

/** A string, a boolean or null has no number in it to check: its field's path is not even written. */
function mayHoldNumbers(value: unknown): boolean {
  return typeof value === 'number' || (typeof value === 'object' && value !== null);
}

function checkNumber(value: number, schema: Json, path: string, problems: string[]): void {
  const field = path || 'the reply';
  if (!Number.isFinite(value)) {
    problems.push(`${field} is not a finite number (JSON reads an exponent as large as 1e999 as ${value}); write a plain number${rangeOf(schema)}.`);
    return;
  }
  const min = typeof schema.minimum === 'number' ? schema.minimum : -Infinity;
  const max = typeof schema.maximum === 'number' ? schema.maximum : Infinity;
  if (value < min || value > max) problems.push(`${field} is ${value}, outside its range${rangeOf(schema)}.`);
}

function rangeOf(schema: Json): string {
  const min = schema.minimum;
  const max = schema.maximum;
  if (typeof min === 'number' && typeof max === 'number') return ` from ${min} to ${max}`;
  if (typeof min === 'number') return ` from ${min} up`;
  if (typeof max === 'number') return ` up to ${max}`;
  return '';
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

/**
 * A score the grammar can hold: an integer from 0 to 100 in the reply, read on the engine's own
 * 0-to-1 scale. The JSON Schema sent is generated from the input side (`io: 'input'`), so the
 * grammar sees the integer and its bounds; what the engine and the record see is the fraction.
 */
export function percent() {
  return z
    .number()
    .int()
    .min(0)
    .max(100)
    .transform((value) => value / 100);
}

/** A zod enum of ids; an empty list gets the fallback so the grammar always has an alternative. */
export function idEnum(ids: readonly string[], fallback: readonly string[] = []): z.ZodType<string> {
  const list = [...new Set(ids.length ? ids : fallback)];
  return list.length ? z.enum(list as [string, ...string[]]) : z.string().min(1);
}

/**
 * Where a JSON Schema declares an optional property before a required one, at any depth: llama.cpp's
 * grammar writes every required property first, so the model would write them in another order than
 * the one declared (a verdict before its reason). One line per object that does, empty when none.
 */
export function optionalBeforeRequired(schema: unknown, path = '$'): string[] {
  if (Array.isArray(schema)) return schema.flatMap((s, i) => optionalBeforeRequired(s, `${path}[${i}]`));
  if (!schema || typeof schema !== 'object') return [];
  const node = schema as Json;
  const found: string[] = [];
  if (node.properties && typeof node.properties === 'object') {
    const required = new Set(Array.isArray(node.required) ? node.required : []);
    const names = Object.keys(node.properties as Json);
    const firstOptional = names.findIndex((n) => !required.has(n));
    const late = firstOptional < 0 ? [] : names.slice(firstOptional).filter((n) => required.has(n));
    if (late.length) found.push(`${path}: optional ${names[firstOptional]} is declared before required ${late.join(', ')}`);
    for (const [name, sub] of Object.entries(node.properties as Json)) found.push(...optionalBeforeRequired(sub, `${path}.${name}`));
  }
  for (const [key, value] of Object.entries(node)) {
    if (key === 'properties' || key === 'required' || key === 'enum' || key === 'const') continue;
    if (value && typeof value === 'object') found.push(...optionalBeforeRequired(value, `${path}.${key}`));
  }
  return found;
}
