import { canonicalJson, type Row } from './chain.js';

/** What one write changed of a debate's sealed rows, by table: the whole table, or the rows it wrote, as they were written. */
export type Touched = Map<string, 'all' | Row[]>;

/**
 * The row digests of a debate's latest checkpoint seal, kept by the store that writes the
 * debate between its writes, with their canonical JSON kept per table. A write hashes again only
 * the rows it changed and serialises only the tables they are in; the seal computed from this is
 * the one `sealOf` computes from every row read back (src/store/chain.ts).
 */
export class CheckpointDigests {
  /** Table → row key → digest, `debates` included; a table without rows has no entry, as in `rowDigests`. */
  readonly #tables = new Map<string, Map<string, string>>();
  /** Table → `canonicalJson` of its digests, for the tables unchanged since it was built. */
  readonly #json = new Map<string, string>();
  #rowsJson: string | null = null;
  /** The digests' JSON as last written to `seal_rows_json`. */
  #written: string | null = null;

  constructor(digests: Record<string, Record<string, string>>) {
    for (const [table, rows] of Object.entries(digests)) this.setTable(table, rows);
  }

  setTable(table: string, rows: Record<string, string>): void {
    const map = new Map(Object.entries(rows));
    if (map.size === 0) this.#tables.delete(table);
    else this.#tables.set(table, map);
    this.#changed(table);
  }

  /** Sets one row's digest, or removes the row when `digest` is null. */
  setRow(table: string, key: string, digest: string | null): void {
    let rows = this.#tables.get(table);
    if (digest === null) {
      if (!rows?.delete(key)) return;
      if (rows.size === 0) this.#tables.delete(table);
    } else {
      if (rows?.get(key) === digest) return;
      if (!rows) this.#tables.set(table, (rows = new Map()));
      rows.set(key, digest);
    }
    this.#changed(table);
  }

  #changed(table: string): void {
    this.#json.delete(table);
    this.#rowsJson = null;
  }

  /** `canonicalJson` of every digest, table by table (table names sort as plain strings: none is a number). */
  rowsJson(): string {
    if (this.#rowsJson !== null) return this.#rowsJson;
    const parts: string[] = [];
    for (const table of [...this.#tables.keys()].sort()) {
      let json = this.#json.get(table);
      if (json === undefined) {
        json = canonicalJson(Object.fromEntries(this.#tables.get(table)!));
        this.#json.set(table, json);
      }
      parts.push(`${JSON.stringify(table)}:${json}`);
    }
    this.#rowsJson = `{${parts.join(',')}}`;
    return this.#rowsJson;
  }

  /** The digests' JSON when it differs from what was last written to `seal_rows_json` (then marked written), else null. */
  unwritten(): string | null {
    const json = this.rowsJson();
    if (json === this.#written) return null;
    this.#written = json;
    return json;
  }
}
