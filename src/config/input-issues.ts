import type { z } from 'zod';
import { closest } from '../suggest.js';
import { formatIssues } from './zod-issues.js';

/**
 * A file a person wrote (a preset, an agent's front matter, a hosts file), checked against its
 * schema: each problem by its path, as formatIssues gives it, with the fix for the slips people
 * make: a misspelt field or value gets the nearest known one, a number in quotes or a share
 * written as a percentage (85 for 0.85) is named as such, and a missing field says so.
 */
export function formatInputIssues(error: z.ZodError, data: unknown, schema: z.ZodType): string {
  return error.issues
    .map((issue) => {
      const line = formatIssues({ issues: [issue] } as z.ZodError);
      const value = valueAt(data, issue.path);
      if (issue.code === 'unrecognized_keys') return `${line}${unknownFieldFix(issue.keys, fieldsAt(schema, issue.path))}`;
      if (issue.code === 'invalid_type' && value.found === false) return `  - ${pathText(issue.path)}: missing; it is required`;
      if (issue.code === 'invalid_type' && issue.expected === 'number' && typeof value.value === 'string' && value.value.trim() !== '' && Number.isFinite(Number(value.value))) {
        return `${line} (write ${value.value.trim()} without quotes)`;
      }
      if (issue.code === 'invalid_type' && issue.expected === 'string' && (typeof value.value === 'number' || typeof value.value === 'boolean')) {
        return `${line} (YAML read it as the ${typeof value.value} ${String(value.value)}: put the value in quotes)`;
      }
      if (issue.code === 'invalid_type' && issue.expected === 'object' && typeof value.value === 'string' && fieldsAt(schema, issue.path).includes('model')) {
        return `${line} (write \`{ model: ${value.value} }\`)`;
      }
      if (issue.code === 'invalid_type' && issue.expected === 'array' && value.value !== null && typeof value.value === 'object') {
        return `${line} (write a list: each entry on its own line starting with \`- \`)`;
      }
      if (issue.code === 'too_big' && issue.origin === 'number' && Number(issue.maximum) === 1 && typeof value.value === 'number' && value.value > 1 && value.value <= 100) {
        return `${line} (a share from 0 to 1: write ${value.value / 100}, not ${value.value})`;
      }
      if (issue.code === 'invalid_value' && typeof value.value === 'string') {
        const near = closest(value.value, issue.values.filter((v): v is string => typeof v === 'string'));
        if (near) return `${line} (did you mean \`${near}\`?)`;
      }
      return line;
    })
    .join('\n');
}

function pathText(path: readonly PropertyKey[]): string {
  return path.length ? path.map(String).join('.') : '(top level)';
}

function unknownFieldFix(keys: readonly string[], known: string[]): string {
  const guesses = keys.map((k) => [k, closest(k, known)] as const).filter((g): g is readonly [string, string] => g[1] !== null);
  if (keys.length === 1 && guesses.length === 1) return ` (did you mean \`${guesses[0]![1]}\`?)`;
  if (guesses.length > 0) return ` (did you mean ${guesses.map(([k, near]) => `\`${near}\` for \`${k}\``).join(', ')}?)`;
  return known.length > 0 && known.length <= 20 ? ` (known fields: ${known.join(', ')})` : '';
}

function valueAt(data: unknown, path: readonly PropertyKey[]): { found: boolean; value?: unknown } {
  let here: unknown = data;
  for (const key of path) {
    if (here === null || typeof here !== 'object' || !Object.hasOwn(here, key)) return { found: false };
    here = (here as Record<PropertyKey, unknown>)[key];
  }
  return { found: true, value: here };
}

interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  innerType?: z.ZodType;
  in?: z.ZodType;
  options?: z.ZodType[];
  left?: z.ZodType;
  right?: z.ZodType;
  valueType?: z.ZodType;
  getter?: () => z.ZodType;
}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** The schemas a value may be checked by, through optional, default, union, pipe and lazy wrappers. */
function alternatives(schema: z.ZodType, depth = 0): z.ZodType[] {
  if (depth > 20) return [];
  const def = defOf(schema);
  const inner = def.innerType ?? def.in ?? (def.type === 'lazy' ? def.getter?.() : undefined);
  if (inner) return alternatives(inner, depth + 1);
  if (def.options) return def.options.flatMap((o) => alternatives(o, depth + 1));
  if (def.left && def.right) return [...alternatives(def.left, depth + 1), ...alternatives(def.right, depth + 1)];
  return [schema];
}

/** The fields the schema knows in the object at `path`. */
export function fieldsAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let here = alternatives(schema);
  for (const key of path) {
    here = here.flatMap((s) => {
      const def = defOf(s);
      const next = typeof key === 'number' ? def.element : (def.shape?.[String(key)] ?? def.valueType);
      return next ? alternatives(next) : [];
    });
  }
  return [...new Set(here.flatMap((s) => Object.keys(defOf(s).shape ?? {})))];
}
