/**
 * JSON Schema to GBNF, for the embedded backend: the grammar llama.cpp samples under, built the way
 * llama.cpp's own json-schema-to-grammar (the converter Ollama and llama-server use) reads a schema,
 * so a reply is bound here exactly as on a server:
 * - an object's required properties come first, in declared order, then the optional ones;
 * - `enum`, `const`, `anyOf`/`oneOf`, local `$ref`, `items`, `minItems`/`maxItems`,
 *   string `minLength`/`maxLength` and integer `minimum`/`maximum` are enforced;
 * - a `number` has no bounds, but at most 15 digits and a two-digit exponent, so it always parses to a finite value;
 * - no property beyond those declared is written (a server would allow one where `additionalProperties` is absent;
 *   writing fewer of them only narrows what the model may say).
 * node-llama-cpp's own schema grammar was not used: it leaves integer bounds and string lengths unenforced.
 */
type Json = Record<string, unknown>;

const PRIMITIVES: Readonly<Record<string, string>> = {
  ws: '[ ]?',
  char: '[^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" ([0-9a-cA-CeEfF] hex hex hex | [dD] [0-7] hex hex))',
  hex: '[0-9a-fA-F]',
  string: '"\\"" char{0,4000} "\\""',
  boolean: '("true" | "false")',
  null: '"null"',
  integer: '"-"? ("0" | [1-9] [0-9]{0,14})',
  number: '"-"? ("0" | [1-9] [0-9]{0,14}) ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,2})?',
};

/** Builds the GBNF text for `schema`; throws on a keyword it cannot honour, naming it. */
export function schemaToGbnf(schema: Json): string {
  const rules = new Map<string, string>();
  const used = new Set<string>(['ws']);
  const byBody = new Map<string, string>();
  const refs = new Map<string, string>();
  let counter = 0;

  const rule = (hint: string, body: string): string => {
    const known = byBody.get(body);
    if (known) return known;
    const name = `${hint.replace(/[^a-zA-Z0-9-]/g, '-').replace(/-+/g, '-').replace(/^-|-$/g, '').toLowerCase() || 'r'}-${counter++}`;
    rules.set(name, body);
    byBody.set(body, name);
    return name;
  };
  const prim = (name: string): string => {
    used.add(name);
    if (name === 'string' || name === 'char') used.add('char').add('hex');
    return name;
  };

  const visit = (node: unknown, hint: string): string => {
    if (node === true || node === undefined || (node && typeof node === 'object' && Object.keys(node).length === 0)) return anyValue();
    if (!node || typeof node !== 'object') throw new Error(`cannot build a grammar for the schema ${JSON.stringify(node)} at ${hint}`);
    const s = node as Json;
    if (typeof s.$ref === 'string') return ref(s.$ref);
    const alternatives = (s.anyOf ?? s.oneOf) as unknown;
    if (Array.isArray(alternatives)) return rule(hint, alternatives.map((a, i) => visit(a, `${hint}-${i}`)).join(' | '));
    if (Array.isArray(s.allOf) && s.allOf.length === 1) return visit(s.allOf[0], hint);
    if ('const' in s) return rule(hint, literal(s.const));
    if (Array.isArray(s.enum)) return rule(hint, s.enum.map(literal).join(' | '));
    const type = s.type;
    if (Array.isArray(type)) return rule(hint, type.map((t, i) => visit({ ...s, type: t }, `${hint}-${i}`)).join(' | '));
    switch (type) {
      case 'object':
        return object(s, hint);
      case 'array':
        return array(s, hint);
      case 'string':
        return string(s, hint);
      case 'integer':
        return integer(s, hint);
      case 'number':
        return prim('number');
      case 'boolean':
        return prim('boolean');
      case 'null':
        return prim('null');
      case undefined:
        if (s.properties) return object(s, hint);
        return anyValue();
      default:
        throw new Error(`cannot build a grammar for the type ${JSON.stringify(type)} at ${hint}`);
    }
  };

  const ref = (target: string): string => {
    const known = refs.get(target);
    if (known) return known;
    const name = `ref-${counter++}`;
    refs.set(target, name);
    let at: unknown = schema;
    for (const part of target.replace(/^#\/?/, '').split('/').filter(Boolean)) at = (at as Json | undefined)?.[decodeURIComponent(part.replace(/~1/g, '/').replace(/~0/g, '~'))];
    if (!target.startsWith('#') || at === undefined) throw new Error(`cannot resolve the schema reference ${target}`);
    rules.set(name, visit(at, name));
    return name;
  };

  const object = (s: Json, hint: string): string => {
    const properties = (s.properties ?? {}) as Json;
    const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
    const names = Object.keys(properties);
    const pair = (name: string): string => `${literal(name)} ws ":" ws ${visit(properties[name], `${hint}-${name}`)}`;
    const first = names.filter((n) => required.has(n));
    const optional = names.filter((n) => !required.has(n));
    const parts = first.map(pair);
    let body = `"{" ws ${parts.join(' "," ws ')}`;
    if (optional.length > 0) {
      // Each optional property in its declared order, present or not, with the commas placed right.
      const pairs = optional.map(pair);
      let tail = '';
      for (let i = pairs.length - 1; i >= 0; i--) {
        const rest = tail ? ` ${tail}` : '';
        tail = rule(`${hint}-opt`, `("," ws ${pairs[i]})?${rest}`.trim());
      }
      if (first.length > 0) body += ` ${tail}`;
      else {
        let lead = '';
        for (let i = pairs.length - 1; i >= 0; i--) {
          const after = i + 1 < pairs.length ? ` ${rule(`${hint}-opt`, pairs.slice(i + 1).map((p) => `("," ws ${p})?`).join(' '))}` : '';
          lead = lead ? `${pairs[i]}${after} | ${lead}` : `${pairs[i]}${after}`;
        }
        body += ` (${lead})?`;
      }
    }
    return rule(hint, `${body} ws "}"`.replace('"{" ws  ', '"{" ws '));
  };

  const array = (s: Json, hint: string): string => {
    const item = visit(s.items, `${hint}-item`);
    const min = typeof s.minItems === 'number' ? s.minItems : 0;
    const max = typeof s.maxItems === 'number' ? s.maxItems : null;
    if (max === 0) return rule(hint, '"[" ws "]"');
    const rest = max === null ? (min > 1 ? `("," ws ${item}){${min - 1},}` : `("," ws ${item})*`) : max - 1 > 0 ? `("," ws ${item}){${Math.max(0, min - 1)},${max - 1}}` : '';
    const some = `${item} ws ${rest}`.trim();
    return rule(hint, `"[" ws ${min > 0 ? some : `(${some})?`} ws "]"`);
  };

  const string = (s: Json, hint: string): string => {
    const min = typeof s.minLength === 'number' ? s.minLength : 0;
    const max = typeof s.maxLength === 'number' ? s.maxLength : null;
    prim('char');
    if (min === 0 && max === null) return prim('string');
    return rule(hint, `"\\"" char{${min},${max ?? ''}} "\\""`);
  };

  const integer = (s: Json, hint: string): string => {
    const lo = typeof s.minimum === 'number' ? Math.ceil(s.minimum) : typeof s.exclusiveMinimum === 'number' ? Math.floor(s.exclusiveMinimum) + 1 : null;
    const hi = typeof s.maximum === 'number' ? Math.floor(s.maximum) : typeof s.exclusiveMaximum === 'number' ? Math.ceil(s.exclusiveMaximum) - 1 : null;
    if (lo === null && hi === null) return prim('integer');
    const cap = 10 ** 15 - 1;
    return rule(hint, integerRange(Math.max(lo ?? -cap, -cap), Math.min(hi ?? cap, cap)));
  };

  const anyValue = (): string => {
    // Any JSON value: strings, numbers, booleans, null, and nested arrays and objects of them.
    const value = 'any-value';
    if (!rules.has(value)) {
      prim('string');
      prim('number');
      prim('boolean');
      prim('null');
      rules.set(value, `string | number | boolean | null | "[" ws (${value} ws ("," ws ${value} ws)*)? "]" | "{" ws (string ws ":" ws ${value} ws ("," ws string ws ":" ws ${value} ws)*)? "}"`);
    }
    return value;
  };

  const top = visit(schema, 'root');
  const lines = [`root ::= ws ${top} ws`];
  for (const [name, body] of rules) lines.push(`${name} ::= ${body}`);
  for (const name of used) lines.push(`${name} ::= ${PRIMITIVES[name]}`);
  return `${lines.join('\n')}\n`;
}

/** A JSON value written out exactly, as a GBNF literal. */
function literal(value: unknown): string {
  return JSON.stringify(JSON.stringify(value));
}

/** Every integer from lo to hi and nothing else, written without leading zeros. */
export function integerRange(lo: number, hi: number): string {
  if (lo > hi) throw new Error(`the integer range ${lo} to ${hi} is empty`);
  const parts: string[] = [];
  if (lo < 0) parts.push(`"-" (${nonNegative(Math.max(1, -hi), -lo)})`);
  if (hi >= 0) parts.push(nonNegative(Math.max(0, lo), hi));
  return parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`;
}

function nonNegative(lo: number, hi: number): string {
  const alternatives: string[] = [];
  const digits = (n: number): number => String(n).length;
  for (let d = digits(lo); d <= digits(hi); d++) {
    const a = Math.max(lo, d === 1 ? 0 : 10 ** (d - 1));
    const b = Math.min(hi, 10 ** d - 1);
    if (a <= b) alternatives.push(...sameLength(String(a), String(b)));
  }
  return alternatives.join(' | ');
}

function sameLength(a: string, b: string): string[] {
  if (a.length === 0) return [''];
  const digit = (lo: string, hi: string): string => (lo === hi ? `"${lo}"` : `[${lo}-${hi}]`);
  const rest = a.length - 1;
  const any = rest > 0 ? ` [0-9]{${rest}}` : '';
  if (a[0] === b[0]) return sameLength(a.slice(1), b.slice(1)).map((t) => `"${a[0]}"${t ? ` ${t}` : ''}`);
  if (/^0*$/.test(a.slice(1)) && /^9*$/.test(b.slice(1))) return [`${digit(a[0]!, b[0]!)}${any}`];
  const out = sameLength(a.slice(1), '9'.repeat(rest)).map((t) => `"${a[0]}"${t ? ` ${t}` : ''}`);
  const a0 = Number(a[0]);
  const b0 = Number(b[0]);
  if (a0 + 1 <= b0 - 1) out.push(`${digit(String(a0 + 1), String(b0 - 1))}${any}`);
  out.push(...sameLength('0'.repeat(rest), b.slice(1)).map((t) => `"${b[0]}"${t ? ` ${t}` : ''}`));
  return out.map((t) => (t.includes(' | ') ? `(${t})` : t));
}
