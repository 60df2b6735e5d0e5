/** The longest text `conclave_show` returns whole unless asked for everything: the viewer's page cuts there too. */
export const SHOW_TEXT_LIMIT = 100_000;

/** A JSON value with every text longer than the limit cut, and what was cut. */
export interface Clipped<T> {
  value: T;
  /** How many texts were cut. */
  texts: number;
  /** How many characters were left off, in all. */
  characters: number;
}

/**
 * Cuts every string longer than `limit` in a JSON value (a debate's document) to its first
 * `limit` characters, marked with how many more there were and where to read them whole. A
 * reply of a hundred megabytes otherwise makes one JSON-RPC line of twice that (the document
 * goes in the text and in structured content), which clients refuse or choke on.
 */
export function clipLongTexts<T>(value: T, limit: number, whole: string): Clipped<T> {
  let texts = 0;
  let characters = 0;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      if (v.length <= limit) return v;
      texts++;
      characters += v.length - limit;
      return `${v.slice(0, limit)}… [${v.length - limit} more characters cut here; ${whole}]`;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  const out = walk(value) as T;
  return texts === 0 ? { value, texts, characters } : { value: out, texts, characters };
}
