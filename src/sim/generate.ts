import { mulberry32 } from '../protocol/random.js';

type Schema = Record<string, unknown>;

const WORDS = [
  'the', 'proposal', 'holds', 'because', 'evidence', 'suggests', 'a', 'careful', 'balance', 'between',
  'cost', 'and', 'risk', 'remains', 'open', 'question', 'each', 'option', 'trades', 'speed', 'for',
  'clarity', 'while', 'others', 'disagree', 'on', 'scope', 'data', 'supports', 'this', 'view',
];

// Recursive schemas (zod emits $ref for them) would otherwise recurse forever.
const MAX_DEPTH = 8;

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/**
 * Returns a plausible instance of a JSON Schema: every property of an object
 * (required ones always), arrays of one or two items, strings and numbers that
 * respect their bounds, the first fitting branch of unions, and enum or const
 * values. Local `$ref`s (`#/$defs/...`, `#/definitions/...`) are followed.
 * The same schema and seed always give the same value.
 */
export function generateFromSchema(schema: unknown, seed = 0): unknown {
  const random = mulberry32(seed);
  const root = isSchema(schema) ? schema : {};
  return instance(root, root, random, 0, 'value');
}

function resolveRef(root: Schema, ref: string): Schema {
  if (!ref.startsWith('#')) return {};
  const parts = ref.slice(1).split('/').filter((part) => part !== '');
  let node: unknown = root;
  for (const raw of parts) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    node = isSchema(node) ? node[part] : undefined;
  }
  return isSchema(node) ? node : {};
}

function pickType(schema: Schema): string | undefined {
  const { type } = schema;
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) {
    const named = type.filter((t): t is string => typeof t === 'string');
    return named.find((t) => t !== 'null') ?? named[0];
  }
  if (isSchema(schema.properties)) return 'object';
  if (schema.items !== undefined || schema.prefixItems !== undefined) return 'array';
  if (schema.minLength !== undefined || schema.maxLength !== undefined) return 'string';
  if (schema.minimum !== undefined || schema.maximum !== undefined) return 'number';
  return undefined;
}

function instance(schema: Schema, root: Schema, random: () => number, depth: number, key: string): unknown {
  if (typeof schema.$ref === 'string') {
    const { $ref, ...rest } = schema;
    return instance({ ...resolveRef(root, $ref as string), ...rest }, root, random, depth + 1, key);
  }
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    return schema.enum[Math.floor(random() * schema.enum.length)];
  }
  const union = (Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined)
    ?.filter(isSchema);
  if (union && union.length > 0) {
    // Prefer a branch that is not plain null, so nullable fields carry content.
    const branch = union.find((s) => s.type !== 'null') ?? union[0]!;
    return instance(branch, root, random, depth + 1, key);
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
    const merged = mergeAll(schema.allOf.filter(isSchema), root);
    const { allOf: _ignored, ...rest } = schema;
    return instance({ ...rest, ...merged }, root, random, depth + 1, key);
  }
  switch (pickType(schema)) {
    case 'object':
      return objectInstance(schema, root, random, depth, key);
    case 'array':
      return arrayInstance(schema, root, random, depth, key);
    case 'string':
      return stringInstance(schema, random, key);
    case 'integer':
      return numberInstance(schema, random, true);
    case 'number':
      return numberInstance(schema, random, false);
    case 'boolean':
      return random() < 0.5;
    case 'null':
      return null;
    default:
      return stringInstance({}, random, key);
  }
}

function mergeAll(parts: Schema[], root: Schema): Schema {
  const merged: Schema = {};
  const properties: Schema = {};
  const required: unknown[] = [];
  for (const raw of parts) {
    const part = typeof raw.$ref === 'string' ? resolveRef(root, raw.$ref) : raw;
    Object.assign(merged, part);
    if (isSchema(part.properties)) Object.assign(properties, part.properties);
    if (Array.isArray(part.required)) required.push(...part.required);
  }
  if (Object.keys(properties).length > 0) merged.properties = properties;
  if (required.length > 0) merged.required = required;
  return merged;
}

function objectInstance(schema: Schema, root: Schema, random: () => number, depth: number, key: string): unknown {
  const out: Record<string, unknown> = {};
  const properties = isSchema(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === 'string') : []);
  // Keys in the order llama.cpp's grammar writes them: every required property in declared order, then the optional ones.
  const declared = Object.entries(properties);
  const ordered = [...declared.filter(([name]) => required.has(name)), ...declared.filter(([name]) => !required.has(name))];
  for (const [name, sub] of ordered) {
    // Past the depth limit only required fields are filled, which ends recursion.
    if (depth >= MAX_DEPTH && !required.has(name)) continue;
    out[name] = instance(isSchema(sub) ? sub : {}, root, random, depth + 1, name);
  }
  for (const name of required) {
    if (!(name in out)) out[name] = stringInstance({}, random, name);
  }
  return out;
}

function arrayInstance(schema: Schema, root: Schema, random: () => number, depth: number, key: string): unknown[] {
  const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems.filter(isSchema) : [];
  const minItems = Math.max(num(schema.minItems) ?? 0, 0);
  const maxItems = num(schema.maxItems) ?? Number.POSITIVE_INFINITY;
  let count = depth >= MAX_DEPTH ? minItems : 1 + Math.floor(random() * 2);
  count = Math.min(Math.max(count, minItems), maxItems);
  const items = isSchema(schema.items) ? schema.items : {};
  const out: unknown[] = [];
  for (let i = 0; i < count; i++) {
    out.push(instance(prefix[i] ?? items, root, random, depth + 1, key));
  }
  return out;
}

function sentence(random: () => number, words: number): string {
  const picked: string[] = [];
  for (let i = 0; i < words; i++) picked.push(WORDS[Math.floor(random() * WORDS.length)]!);
  const text = picked.join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function stringInstance(schema: Schema, random: () => number, key: string): string {
  const minLength = num(schema.minLength) ?? 0;
  const maxLength = num(schema.maxLength) ?? Number.POSITIVE_INFINITY;
  let text: string;
  switch (schema.format) {
    case 'date-time':
      text = '2025-01-01T00:00:00Z';
      break;
    case 'date':
      text = '2025-01-01';
      break;
    case 'time':
      text = '12:00:00Z';
      break;
    case 'email':
      text = 'agent@example.com';
      break;
    case 'uri':
    case 'url':
      text = 'https://example.com/';
      break;
    case 'uuid':
      text = '00000000-0000-4000-8000-000000000000';
      break;
    default:
      text = `${sentence(random, 3 + Math.floor(random() * 5))} (${key}).`;
  }
  while (text.length < minLength) text += ` ${sentence(random, 4)}.`;
  if (text.length > maxLength) text = text.slice(0, maxLength).trimEnd().padEnd(Math.min(minLength, maxLength), 'x');
  return text;
}

function numberInstance(schema: Schema, random: () => number, integer: boolean): number {
  // Draft 4 writes exclusive bounds as booleans beside minimum/maximum; later drafts as numbers.
  let low = num(schema.minimum) ?? Number.NEGATIVE_INFINITY;
  let high = num(schema.maximum) ?? Number.POSITIVE_INFINITY;
  const exMin = num(schema.exclusiveMinimum) ?? (schema.exclusiveMinimum === true ? low : undefined);
  const exMax = num(schema.exclusiveMaximum) ?? (schema.exclusiveMaximum === true ? high : undefined);
  const step = integer ? 1 : 0.01;
  if (exMin !== undefined) low = Math.max(low, exMin + step);
  if (exMax !== undefined) high = Math.min(high, exMax - step);
  if (!Number.isFinite(low) && !Number.isFinite(high)) {
    // Ollama's grammar cannot bound a number, so schemas sent leave fractions (scores, confidences) unbounded.
    low = 0;
    high = integer ? 10 : 1;
  } else if (!Number.isFinite(low)) {
    low = high - 10;
  } else if (!Number.isFinite(high)) {
    high = low + 10;
  }
  if (high < low) high = low;
  let value = low + random() * (high - low);
  const multipleOf = num(schema.multipleOf);
  if (multipleOf !== undefined && multipleOf > 0) {
    value = Math.ceil(low / multipleOf) * multipleOf;
    if (integer) value = Math.round(value);
    return Number(value.toFixed(10));
  }
  if (integer) {
    value = Math.round(value);
    if (value < low) value = Math.ceil(low);
    if (value > high) value = Math.floor(high);
    return value;
  }
  return Math.round(value * 100) / 100;
}

/** Why a schema would fail to compile into a grammar, mirroring llama.cpp's converter; undefined if it compiles. */
export function schemaGrammarError(schema: unknown, depth = 0): string | undefined {
  if (depth > 64) return undefined;
  if (Array.isArray(schema)) {
    for (const item of schema) {
      const error = schemaGrammarError(item, depth + 1);
      if (error) return error;
    }
    return undefined;
  }
  if (!isSchema(schema)) return undefined;
  const { pattern } = schema;
  if (typeof pattern === 'string' && !(pattern.startsWith('^') && pattern.endsWith('$'))) {
    return "Pattern must start with '^' and end with '$'";
  }
  for (const [name, value] of Object.entries(schema)) {
    // enum/const/examples hold data, not subschemas.
    if (name === 'enum' || name === 'const' || name === 'examples' || name === 'default') continue;
    const error = schemaGrammarError(value, depth + 1);
    if (error) return error;
  }
  return undefined;
}
