import type { KeyObject } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import { InputError, IntegrityError, StoreError } from '../errors.js';
import { CALL_LINKS, canonicalJson, CHAIN_VERSION, type DebateRows, describeBreak, readDebateRows, type Row, SEALED_TABLES, type Verdict, verifyRows } from './chain.js';
import { sealGate } from './gate.js';
import type { Store } from './store.js';

export const BUNDLE_FORMAT = 'conclave.bundle';
export const BUNDLE_VERSION = 1;

/**
 * One debate with every row recorded about it, as stored, so another machine can verify
 * the chain and insert it (docs/record.md, "Bundles"). Calls are in recording order and
 * carry no row id; links to calls (`votes.call_id`) hold the call's number, from 1.
 */
export interface Bundle {
  format: typeof BUNDLE_FORMAT;
  version: number;
  chain: number;
  debate: Row;
  calls: Row[];
  tables: Record<string, Row[]>;
}

/** The bundle of one stored debate. */
export function bundleOf(rows: DebateRows): Bundle {
  const number = new Map(rows.calls.map((c, i) => [c.id, i + 1]));
  const tables: Record<string, Row[]> = {};
  for (const [table, list] of Object.entries(rows.tables)) {
    tables[table] = list.map((row) => relink(row, CALL_LINKS[table], (id) => number.get(id) ?? null));
  }
  return {
    format: BUNDLE_FORMAT,
    version: BUNDLE_VERSION,
    chain: CHAIN_VERSION,
    debate: rows.debate,
    calls: rows.calls.map(({ id: _id, ...rest }) => rest),
    tables,
  };
}

/** The rows of a bundle as `verifyRows` reads them: calls numbered from 1, links by number. */
function rowsOfBundle(b: Bundle): DebateRows {
  return { debate: b.debate, calls: b.calls.map((c, i) => ({ ...c, id: i + 1 })), tables: b.tables };
}

function relink(row: Row, links: readonly string[] | undefined, map: (id: unknown) => unknown): Row {
  if (!links) return row;
  const out = { ...row };
  for (const link of links) if (out[link] !== null && out[link] !== undefined) out[link] = map(out[link]);
  return out;
}

/** Parses and checks the shape of a bundle file's text; `source` names it in messages. */
export function parseBundle(text: string, source: string): Bundle {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new InputError('BUNDLE_INVALID', `${source} is not a Conclave bundle: it is not JSON (${(err as Error).message}).`, {
      hint: 'Write bundles with `conclave export ID --format bundle`.',
    });
  }
  const b = value as Partial<Bundle> | null;
  if (!b || typeof b !== 'object' || b.format !== BUNDLE_FORMAT) {
    throw new InputError('BUNDLE_INVALID', `${source} is not a Conclave bundle (its \`format\` is not \`${BUNDLE_FORMAT}\`).`, {
      hint: 'Write bundles with `conclave export ID --format bundle`; `export --format json` writes a document, which cannot be imported.',
    });
  }
  if (b.version !== BUNDLE_VERSION || b.chain !== CHAIN_VERSION) {
    throw new InputError('BUNDLE_TOO_NEW', `${source} is a bundle of version ${String(b.version)} (chain ${String(b.chain)}); this Conclave reads version ${BUNDLE_VERSION} (chain ${CHAIN_VERSION}).`, {
      hint: 'Import it with the Conclave version that exported it, or a newer one.',
    });
  }
  const isRow = (r: unknown): r is Row => !!r && typeof r === 'object' && !Array.isArray(r);
  const tablesOk = isRow(b.tables) && Object.values(b.tables).every((list) => Array.isArray(list) && list.every(isRow));
  if (!isRow(b.debate) || typeof b.debate.id !== 'string' || !Array.isArray(b.calls) || !b.calls.every(isRow) || !tablesOk) {
    throw new InputError('BUNDLE_INVALID', `${source} is damaged: its debate, calls or tables are missing or of the wrong shape.`, {
      hint: 'Export the debate again on the machine it came from.',
    });
  }
  // A table added by a newer Conclave (a new feature's rows) is not damage: the user needs the upgrade, not a new export.
  const unknownTable = Object.keys(b.tables as object).find((t) => !Object.hasOwn(SEALED_TABLES, t));
  if (unknownTable !== undefined) {
    throw new InputError('BUNDLE_TOO_NEW', `${source} has rows of a table \`${unknownTable.slice(0, 80)}\` that this Conclave does not know.`, {
      hint: 'It was exported by a newer Conclave: upgrade Conclave on this machine, then import it again.',
    });
  }
  if (b.debate.status === 'running') {
    throw new InputError('BUNDLE_RUNNING', `${source} holds debate \`${b.debate.id}\` while it was still running: its record is not finished.`, {
      hint: 'Export it again once it has ended on the machine it came from.',
    });
  }
  return b as Bundle;
}

/** What a debate id may look like: no spaces, no control characters, nothing a terminal line or a path could be forged with. */
export const DEBATE_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** The columns this Conclave's schema has for a table; undefined for a table it does not know. */
export type KnownColumns = (table: string) => ReadonlySet<string> | undefined;

/** Column names of every table of `sqlite`: a database with this Conclave's migrations applied. */
export function knownColumns(sqlite: BetterSqlite3.Database): KnownColumns {
  const tables = (sqlite.prepare("select name from sqlite_master where type = 'table'").all() as { name: string }[]).map((t) => t.name);
  const all = new Map<string, Set<string>>();
  for (const table of tables) {
    all.set(table, new Set((sqlite.prepare('select name from pragma_table_info(?)').all(table) as { name: string }[]).map((c) => c.name)));
  }
  return (table) => all.get(table);
}

/**
 * Checks everything about a bundle that the database would otherwise find out while
 * inserting it, before anything is opened or written: the debate id's form, that every row
 * belongs to the debate, that every column is one this Conclave knows (else the upgrade
 * hint), that values are plain text or numbers, and that no row appears twice.
 */
export function validateBundle(b: Bundle, source: string, columns: KnownColumns): void {
  const id = b.debate.id as string;
  if (!DEBATE_ID.test(id)) {
    throw new InputError('BUNDLE_BAD_ID', `${source} holds a debate whose id is not a Conclave debate id (${JSON.stringify(id).slice(0, 80)}).`, {
      hint: 'Ids are letters, digits, `.`, `_`, `:` and `-`, up to 128 characters. Export the debate again on the machine it came from.',
    });
  }
  const check = (table: string, row: Row, skip: readonly string[], place: string): void => {
    const known = columns(table);
    if (!known) {
      throw new InputError('BUNDLE_TOO_NEW', `${source} has rows of a table \`${table}\` that this Conclave does not know.`, {
        hint: 'It was exported by a newer Conclave: upgrade Conclave on this machine, then import it again.',
      });
    }
    for (const [column, value] of Object.entries(row)) {
      if (skip.includes(column)) continue;
      if (!known.has(column)) {
        throw new InputError('BUNDLE_TOO_NEW', `${source} has a column \`${table}.${column}\` that this Conclave does not know.`, {
          hint: 'It was exported by a newer Conclave: upgrade Conclave on this machine, then import it again.',
        });
      }
      if (value !== null && typeof value !== 'string' && !(typeof value === 'number' && Number.isFinite(value))) {
        throw damaged(source, `${place} has a value of the wrong kind in \`${column}\``);
      }
    }
    if (table !== 'debates' && row.debate_id !== id) throw damaged(source, `${place} belongs to another debate`);
  };
  check('debates', b.debate, [], 'the debate row');
  b.calls.forEach((call, i) => {
    // Row ids are the database's own (a bundle numbers its calls by their order): one carried in would be inserted as is.
    if ('id' in call) throw damaged(source, `call ${i + 1} carries a row id, which a bundle's calls never do`);
    check('calls', call, [], `call ${i + 1}`);
  });
  for (const [table, list] of Object.entries(b.tables)) {
    const keys = SEALED_TABLES[table]!;
    const seen = new Set<string>();
    for (const [i, row] of list.entries()) {
      check(table, row, [], `row ${i + 1} of \`${table}\``);
      const key = keys.length === 0 ? '-' : keys.map((c) => String(row[c])).join('/');
      if (seen.has(key)) {
        throw new IntegrityError('BUNDLE_DUPLICATE_ROW', `${source} holds the \`${table}\` row ${key} twice; a debate has one. Nothing was imported.`, {
          hint: 'The bundle changed after it was exported. Export it again from the machine it came from.',
        });
      }
      seen.add(key);
    }
  }
}

function damaged(source: string, what: string): InputError {
  return new InputError('BUNDLE_INVALID', `${source} is damaged: ${what}.`, { hint: 'Export the debate again on the machine it came from.' });
}

export interface ImportResult {
  id: string;
  verdict: Exclude<Verdict, { state: 'broken' }>;
  /** False when the same debate was already in the database, identical. */
  inserted: boolean;
}

/**
 * Verifies a bundle's chain and seal, then inserts the debate in one transaction.
 * A debate whose id is already stored is refused unless the stored record is identical.
 */
export function importBundle(store: Store, bundle: Bundle, source: string, options: { publicKey?: KeyObject | null } = {}): ImportResult {
  const id = bundle.debate.id as string;
  const verdict = checkBundle(bundle, source, options.publicKey ?? null);
  return store.use(`import debate \`${id}\``, (_db, sqlite) =>
    sqlite
      .transaction((): ImportResult => {
        // The seal this import writes into the database passes the same gate as every seal the store writes.
        sealGate(rowsOfBundle(bundle), { publicKey: options.publicKey ?? null }, source);
        const existing = readDebateRows(sqlite, id);
        if (existing) {
          if (canonicalJson(bundleOf(existing)) === canonicalJson(bundle)) return { id, verdict, inserted: false };
          throw new StoreError('IMPORT_DUPLICATE', `Debate \`${id}\` is already in ${store.path}, with a different record than ${source}.`, {
            hint: 'Import into another database with --db, or compare both with `conclave show ID --json`.',
          });
        }
        insertRows(sqlite, bundle);
        // The inserted rows must verify exactly as the bundle did, or nothing is kept.
        const stored = readDebateRows(sqlite, id);
        const again = stored ? verifyRows(stored) : null;
        if (!again || again.state !== verdict.state) {
          throw new IntegrityError('IMPORT_MISMATCH', `Debate \`${id}\` from ${source} did not verify once inserted into ${store.path}; nothing was imported.`, {
            hint: 'Run `conclave verify` on the machine it came from and export it again; if that verifies, report this as a bug.',
          });
        }
        return { id, verdict, inserted: true };
      })
      .immediate(),
  );
}

/**
 * Recomputes a bundle's chain and seal; throws an IntegrityError naming the first mismatch, or,
 * with `publicKey`, when its seal is not signed by that key.
 */
export function checkBundle(bundle: Bundle, source: string, publicKey: KeyObject | null = null): Exclude<Verdict, { state: 'broken' }> {
  const verdict = verifyRows(rowsOfBundle(bundle));
  if (verdict.state === 'broken') {
    throw new IntegrityError('BUNDLE_TAMPERED', `${source} does not match its hashes: ${describeBreak(verdict)}. Nothing was imported.`, {
      hint: 'The bundle changed after it was exported. Export it again from the machine it came from.',
    });
  }
  if (publicKey) sealGate(rowsOfBundle(bundle), { publicKey }, source);
  return verdict;
}

function insertRows(sqlite: BetterSqlite3.Database, b: Bundle): void {
  insert(sqlite, 'debates', b.debate);
  const callIds: number[] = [];
  for (const call of b.calls) callIds.push(Number(insert(sqlite, 'calls', call).lastInsertRowid));
  for (const [table, list] of Object.entries(b.tables)) {
    for (const row of list) insert(sqlite, table, relink(row, CALL_LINKS[table], (n) => callIds[Number(n) - 1] ?? null));
  }
}

const columnsCache = new WeakMap<BetterSqlite3.Database, Map<string, Set<string>>>();

function insert(sqlite: BetterSqlite3.Database, table: string, row: Row): BetterSqlite3.RunResult {
  let tables = columnsCache.get(sqlite);
  if (!tables) columnsCache.set(sqlite, (tables = new Map()));
  let columns = tables.get(table);
  if (!columns) {
    columns = new Set((sqlite.pragma(`table_info(${table})`) as { name: string }[]).map((c) => c.name));
    tables.set(table, columns);
  }
  const names = Object.keys(row);
  const unknown = names.find((n) => !columns.has(n));
  if (unknown !== undefined) {
    throw new InputError('BUNDLE_TOO_NEW', `The bundle has a column \`${table}.${unknown}\` that this database does not know.`, {
      hint: 'It was exported by a newer Conclave: upgrade Conclave on this machine, then import it again.',
    });
  }
  // Column names come from the table itself (checked above), never from the file unchecked.
  const sql = `insert into ${table} (${names.map((n) => `"${n}"`).join(', ')}) values (${names.map(() => '?').join(', ')})`;
  return sqlite.prepare(sql).run(...names.map((n) => row[n] as string | number | null));
}

export { describeBreak } from './chain.js';
