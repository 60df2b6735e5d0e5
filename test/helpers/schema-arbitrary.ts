import fc from 'fast-check';

type Json = Record<string, unknown>;

/**
 * Text a grammar-constrained model can write in a JSON string: anything, including
 * unicode beyond the BMP, control characters (as escapes), whitespace only, and long runs.
 */
export function grammarString(minLength = 0, long = true): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.string({ unit: 'binary', minLength, maxLength: minLength + 40 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', minLength, maxLength: minLength + 20 }) },
    { weight: 1, arbitrary: fc.constantFrom(' ', '\n', '\t', ' \u00a0 ', '…', '"', '\\').filter((s) => s.length >= minLength) },
    { weight: long ? 1 : 0, arbitrary: fc.string({ unit: 'binary', minLength: Math.max(minLength, 800), maxLength: 2000 }) },
  );
}

export interface ArbitraryOptions {
  /** Include strings of 800 to 2000 characters (default true). A whole reply made of them overruns any num_predict. */
  long?: boolean;
}

/**
 * Every value the grammar Ollama builds from `schema` (llama.cpp's json-schema-to-grammar)
 * allows, as far as our schemas use it: objects with their required properties and any
 * optional ones (and extra properties where `additionalProperties` is not false), arrays
 * within minItems/maxItems, strings with minLength, integers within their bounds, any
 * finite number for `number` (the grammar ignores its bounds), booleans, enums, consts.
 */
export function arbitraryOf(schema: Json, options: ArbitraryOptions = {}, root: Json = schema): fc.Arbitrary<unknown> {
  const long = options.long ?? true;
  if (typeof schema.$ref === 'string') {
    let node: unknown = root;
    for (const part of schema.$ref.replace(/^#\/?/, '').split('/').filter(Boolean)) node = (node as Json)[part];
    return arbitraryOf(node as Json, options, root);
  }
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const union = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (Array.isArray(union)) return fc.oneof(...union.map((s) => arbitraryOf(s, options, root)));
  const type = schema.type;
  if (Array.isArray(type)) return fc.oneof(...type.map((t) => arbitraryOf({ ...schema, type: t }, options, root)));
  switch (type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Json>;
      const required = new Set((schema.required as string[] | undefined) ?? []);
      const entries = Object.fromEntries(Object.entries(properties).map(([name, sub]) => [name, arbitraryOf(sub, options, root)]));
      const requiredKeys = Object.keys(properties).filter((k) => required.has(k));
      const record = fc.record(entries, { requiredKeys });
      if (schema.additionalProperties === false) return record;
      const extra = fc.dictionary(
        grammarString(1, false).filter((k) => !(k in properties)),
        fc.oneof(grammarString(0, false), fc.integer(), fc.boolean()),
        { maxKeys: 2 },
      );
      return fc.tuple(record, extra).map(([r, e]) => ({ ...e, ...r }));
    }
    case 'array': {
      const items = arbitraryOf((schema.items ?? {}) as Json, options, root);
      const minLength = typeof schema.minItems === 'number' ? schema.minItems : 0;
      const maxLength = typeof schema.maxItems === 'number' ? schema.maxItems : minLength + 4;
      return fc.array(items, { minLength, maxLength });
    }
    case 'string': {
      const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
      // The grammar counts characters (code points), as fast-check's `binary` unit does.
      if (typeof schema.maxLength === 'number') return fc.string({ unit: 'binary', minLength: min, maxLength: schema.maxLength });
      return grammarString(min, long);
    }
    case 'integer': {
      const min = typeof schema.minimum === 'number' ? Math.max(schema.minimum, Number.MIN_SAFE_INTEGER) : Number.MIN_SAFE_INTEGER;
      const max = typeof schema.maximum === 'number' ? Math.min(schema.maximum, Number.MAX_SAFE_INTEGER) : Number.MAX_SAFE_INTEGER;
      return fc.oneof(fc.constantFrom(min, max), fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31 - 1) }));
    }
    case 'number':
      return fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(0, 1, -1, 0.5, 1e300, -1e-300));
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return fc.oneof(grammarString(0, long), fc.integer(), fc.boolean(), fc.constant(null));
  }
}
