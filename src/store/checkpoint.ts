import { joinTableDigests, type Row } from './chain.js';

/** What one write changed of a debate's sealed rows, by table: the whole table, or the rows it wrote, as they were written. */
export type Touched = Map<string, 'all' | Row[]>;

/**
 * The row digests of a debate's latest checkpoint seal, kept by the store that writes the
 * debate between its writes, with each table's canonical JSON kept in pieces: a write hashes again
 * only the rows it changed, and writes again only their `"key":"digest"` pieces. The seal computed
 * from this is the one `sealOf` computes from every row read back (src/store/chain.ts).
 */
export class CheckpointDigests {
  /** Table → its digests; a table without rows has no entry, as in `rowDigests`. */
  readonly #tables = new Map<string, TableDigests>();
  #rowsJson: string | null = null;
  /** Each table's JSON as last written to `seal_rows`; null before the first write, which writes them all. */
  #written: Map<string, string> | null = null;

  constructor(digests: Record<string, Record<string, string>>) {
    for (const [table, rows] of Object.entries(digests)) this.setTable(table, rows);
  }

  setTable(table: string, rows: Record<string, string>): void {
    const digests = new TableDigests(rows);
    if (digests.size === 0) this.#tables.delete(table);
    else this.#tables.set(table, digests);
    this.#rowsJson = null;
  }

  /** Sets one row's digest, or removes the row when `digest` is null. */
  setRow(table: string, key: string, digest: string | null): void {
    let rows = this.#tables.get(table);
    if (rows === undefined) {
      if (digest === null) return;
      this.#tables.set(table, (rows = new TableDigests({})));
    }
    if (!rows.set(key, digest)) return;
    if (rows.size === 0) this.#tables.delete(table);
    this.#rowsJson = null;
  }

  /** `canonicalJson` of every digest, table by table. */
  rowsJson(): string {
    this.#rowsJson ??= joinTableDigests([...this.#tables.keys()].sort().map((table) => [table, this.#tables.get(table)!.json()] as const));
    return this.#rowsJson;
  }

  /**
   * What `seal_rows` needs to hold these digests, marked written: the first time every table
   * (`all`: the debate's rows there are replaced), then the tables whose JSON changed since, with
   * null for a table that has no rows any more.
   */
  unwritten(): { all: boolean; tables: [table: string, json: string | null][] } {
    const all = this.#written === null;
    const written = (this.#written ??= new Map());
    const tables: [string, string | null][] = [];
    for (const [table, digests] of this.#tables) {
      const json = digests.json();
      if (written.get(table) === json) continue;
      tables.push([table, json]);
      written.set(table, json);
    }
    for (const table of written.keys()) {
      if (this.#tables.has(table)) continue;
      tables.push([table, null]);
      written.delete(table);
    }
    return { all, tables };
  }
}

/**
 * One table's digests, with their keys kept in the order `canonicalJson` writes them (as
 * `JSON.stringify` writes an object whose keys were added sorted: keys that are array indices
 * first, in numeric order, then the others by UTF-16 code units) and each `"key":"digest"` piece
 * written once.
 */
class TableDigests {
  readonly #pieces = new Map<string, string>();
  readonly #keys: string[];
  #json: string | null = null;

  constructor(rows: Record<string, string>) {
    this.#keys = Object.keys(rows).sort(canonicalOrder);
    for (const key of this.#keys) this.#pieces.set(key, piece(key, rows[key]!));
  }

  get size(): number {
    return this.#keys.length;
  }

  /** Sets (or, for null, removes) one row's digest; false when nothing changed. */
  set(key: string, digest: string | null): boolean {
    const known = this.#pieces.get(key);
    if (digest === null) {
      if (known === undefined) return false;
      this.#pieces.delete(key);
      this.#keys.splice(this.#indexOf(key), 1);
    } else {
      const text = piece(key, digest);
      if (known === text) return false;
      if (known === undefined) this.#keys.splice(this.#indexOf(key), 0, key);
      this.#pieces.set(key, text);
    }
    this.#json = null;
    return true;
  }

  json(): string {
    this.#json ??= `{${this.#keys.map((k) => this.#pieces.get(k)!).join(',')}}`;
    return this.#json;
  }

  /** Where `key` is, or would go, in the ordered keys. */
  #indexOf(key: string): number {
    let lo = 0;
    let hi = this.#keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (canonicalOrder(this.#keys[mid]!, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

function piece(key: string, digest: string): string {
  return `${JSON.stringify(key)}:${JSON.stringify(digest)}`;
}

/** An array index as `JSON.stringify` orders one: 0 to 2³² − 2, written without a leading zero. */
function arrayIndex(key: string): number | null {
  if (!/^(?:0|[1-9]\d{0,9})$/.test(key)) return null;
  const n = Number(key);
  return n < 4294967295 ? n : null;
}

/** The order of an object's keys in `JSON.stringify` when they were added sorted by code units. */
export function canonicalOrder(a: string, b: string): number {
  const x = arrayIndex(a);
  const y = arrayIndex(b);
  if (x !== null || y !== null) {
    if (x === null) return 1;
    if (y === null) return -1;
    return x - y;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}
