import type BetterSqlite3 from 'better-sqlite3';

/**
 * Reading the record without drizzle: a row as SQLite returns it becomes the object drizzle's
 * `select()` would give (camelCase keys, JSON text parsed, 0/1 as booleans), so the commands that
 * only read (`show`, `export`, `list`, `verify`) never load the query builder. The columns below
 * are the ones drizzle's schema declares `mode: 'json'` or `mode: 'boolean'`; a test keeps the
 * two in step.
 */
export const DECODED_COLUMNS: Readonly<Record<string, { json?: readonly string[]; bool?: readonly string[] }>> = {
  debates: { json: ['preset_json', 'plan_json', 'seal_rows_json'] },
  calls: { json: ['messages_json', 'options_json', 'format_json', 'parsed_json', 'normalized_json', 'material_json', 'budget_json'] },
  turns: { json: ['body_json'] },
  syntheses: { json: ['body_json'] },
  synthesis_attempts: { json: ['body_json'] },
  resumptions: { json: ['reused_json', 'plan_json'] },
  vote_tiers: { json: ['approval_set_json', 'unrated_clusters_json', 'dissenting_clusters_json', 'persuaded_clusters_json', 'clusters_json'], bool: ['full_consensus', 'persuasive'] },
  tension_consensus: { json: ['supporting_agents_json'], bool: ['load_bearing'] },
  tensions: { bool: ['load_bearing', 'resolvable'] },
  tension_maps: { json: ['major_findings_json', 'open_questions_json', 'confidence_json', 'review_reasons_json', 'gaps_json'], bool: ['flagged'] },
  protocol_steps: { json: ['body_json'] },
  result_quality: { json: ['reasons_json'], bool: ['has_trade_offs'] },
};

const camelNames = new Map<string, string>();

/** `debate_id` → `debateId`, as the schema names its fields. */
export function camelCase(column: string): string {
  let name = camelNames.get(column);
  if (name === undefined) {
    name = column.replace(/_([a-z0-9])/g, (_m, ch: string) => ch.toUpperCase());
    camelNames.set(column, name);
  }
  return name;
}

/** A raw row of `table` as drizzle reads it. */
export function decodeRow<T>(table: string, row: Record<string, unknown>): T {
  const spec = DECODED_COLUMNS[table];
  const out: Record<string, unknown> = {};
  for (const column in row) {
    let value = row[column];
    if (value !== null && spec) {
      if (spec.json?.includes(column)) value = JSON.parse(value as string);
      else if (spec.bool?.includes(column)) value = Boolean(value);
    }
    out[camelCase(column)] = value;
  }
  return out as T;
}

/** The rows of one table that belong to a debate, decoded, in the order given (SQL after `order by`). */
export type TableReader = <T>(table: string, orderBy: string) => T[];

type Prepare = (source: string) => BetterSqlite3.Statement;

/**
 * What a reader does with each raw row before decoding it (`index`: its place in the order read):
 * the row to decode, or null to leave it out. See src/store/row-check.ts.
 */
export type RowRepair = (table: string, row: Record<string, unknown>, index: number) => Record<string, unknown> | null;

export function tableReader(prepare: Prepare, debateId: string, repair?: RowRepair): TableReader {
  return <T>(table: string, orderBy: string): T[] => {
    const rows = prepare(`select * from ${table} where debate_id = ? order by ${orderBy}`).all(debateId) as Record<string, unknown>[];
    if (!repair) return rows.map((r) => decodeRow<T>(table, r));
    const out: T[] = [];
    for (const [i, r] of rows.entries()) {
      const kept = repair(table, r, i);
      if (kept !== null) out.push(decodeRow<T>(table, kept));
    }
    return out;
  };
}
