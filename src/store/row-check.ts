import { getTableColumns, getTableName, type Table } from 'drizzle-orm';
import { z } from 'zod';
import { presetSchema } from '../config/preset-schema.js';
import { IntegrityError } from '../errors.js';
import { inertLine } from '../render/inert.js';
import { SEALED_TABLES, rowKey, type Row } from './chain.js';
import type { RecordReader, StoredDebate } from './reader.js';
import { DECODED_COLUMNS, type RowRepair } from './rows.js';
import * as core from './schema.js';
import { attachments, budgetDecisions } from './schema-material.js';
import { protocolSteps } from './schema-protocols.js';
import { resultQuality } from './schema-quality.js';
import { synthesisAttempts } from './schema-synthesis.js';
import { tensionClaims, tensionConsensus, tensionEntries, tensionExchanges, tensionMaps } from './schema-tensions.js';
import { voteArtifacts, voteTierResults, votes } from './schema-voting.js';

// The read boundary of a record a reader could not render although it verifies: a record edited
// and sealed again (docs/record.md, "Threat model"). Each row is checked against a schema built
// from the tables' own declarations (type, NOT NULL, enum) and, for JSON columns, the shape
// Conclave writes there. A value that fails becomes null in a nullable column; a row whose
// required value fails is left out. Loaded only after a reader failed, so the everyday commands
// never load zod or drizzle.

/** One value of a record a reader set aside: where it is and what is wrong with it. */
export interface RowProblem {
  table: string;
  /** The row as `verify` names it: its identifying columns, or the call's number and place. */
  row: string;
  /** Null when the row as a whole was left out without one column to blame. */
  column: string | null;
  problem: string;
  /** `null`: the value reads as unknown; `row`: the row is left out. */
  action: 'null' | 'row';
}

const TABLES: readonly Table[] = [
  core.debates, core.agents, core.calls, core.turns, core.rounds, core.syntheses, core.resumptions,
  synthesisAttempts, protocolSteps, resultQuality, attachments, budgetDecisions,
  tensionMaps, tensionClaims, tensionEntries, tensionConsensus, tensionExchanges,
  voteArtifacts, votes, voteTierResults,
];

const object = z.record(z.string(), z.unknown());
const strings = z.array(z.string());

/** The shape of what Conclave writes in each JSON column a reader walks; a column not listed need only be JSON. */
const JSON_SHAPES: Readonly<Record<string, z.ZodType>> = {
  'debates.preset_json': presetSchema,
  'debates.plan_json': z.looseObject({ hosts: z.array(z.looseObject({ url: z.string(), numParallel: z.number() })).optional() }),
  'calls.messages_json': z.array(z.looseObject({ role: z.string(), content: z.string() })),
  'calls.options_json': object,
  'calls.format_json': object,
  'calls.normalized_json': strings,
  'calls.material_json': z.array(z.looseObject({ name: z.string(), mode: z.string() })),
  'calls.budget_json': object,
  'turns.body_json': object,
  'syntheses.body_json': z.looseObject({
    recommendation: z.string(),
    triggersToRevisit: strings,
    confidence: z.looseObject({ level: z.string() }),
    minorityPositions: z.array(object),
    failedAgents: z.array(object),
  }),
  'synthesis_attempts.body_json': object,
  'resumptions.reused_json': z.array(z.looseObject({ round: z.number(), agentId: z.string(), call: z.number() })),
  'protocol_steps.body_json': z.looseObject({ kind: z.string() }),
  'result_quality.reasons_json': strings,
  'tension_maps.major_findings_json': z.array(z.unknown()),
  'tension_maps.open_questions_json': z.array(z.unknown()),
  'tension_maps.confidence_json': object,
  'tension_maps.review_reasons_json': z.array(z.unknown()),
  'tension_maps.gaps_json': z.array(z.unknown()),
  'tension_consensus.supporting_agents_json': strings,
  'vote_tiers.approval_set_json': strings,
  'vote_tiers.unrated_clusters_json': strings,
  'vote_tiers.dissenting_clusters_json': strings,
  'vote_tiers.persuaded_clusters_json': strings,
  'vote_tiers.clusters_json': z.array(z.unknown()),
};

/** Rounds, ordinals and counts a reader may loop up to: far above any run, far below a loop that does not end. */
const COUNT = z.number().int().min(-1).max(1_000_000);
const COUNTS = new Set(['round', 'rounds_completed', 'ordinal', 'attempt', 'seq', 'iteration', 'try', 'from_round', 'calls_before']);

interface ColumnCheck {
  name: string;
  notNull: boolean;
  scalar: z.ZodType;
  json: z.ZodType | null;
}

const checks = new Map<string, ColumnCheck[]>();
for (const table of TABLES) {
  const name = getTableName(table);
  const json = new Set(DECODED_COLUMNS[name]?.json ?? []);
  checks.set(
    name,
    Object.values(getTableColumns(table)).map((column) => {
      const enumValues = (column as { enumValues?: readonly string[] }).enumValues;
      const scalar =
        json.has(column.name) || column.columnType === 'SQLiteTextJson' || column.columnType === 'SQLiteText'
          ? enumValues?.length ? z.enum(enumValues as [string, ...string[]]) : z.string()
          : column.columnType === 'SQLiteReal'
            ? z.number().finite()
            : COUNTS.has(column.name) ? COUNT : z.number().int().safe();
      const isJson = json.has(column.name) || column.columnType === 'SQLiteTextJson';
      return { name: column.name, notNull: column.notNull, scalar, json: isJson ? (JSON_SHAPES[`${name}.${column.name}`] ?? z.unknown()) : null };
    }),
  );
}

/** What is wrong with one value of a column, or null when it is what Conclave writes there. */
function valueProblem(check: ColumnCheck, value: unknown): string | null {
  if (value === null) return check.notNull ? 'it is empty (NULL)' : null;
  const scalar = check.scalar.safeParse(value);
  if (!scalar.success) return `${describe(value)} is not ${expected(check)}`;
  if (check.json === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value as string);
  } catch {
    return 'it is not JSON';
  }
  if (parsed === null && !check.notNull) return null;
  const shaped = check.json.safeParse(parsed);
  if (shaped.success) return null;
  const issue = shaped.error.issues[0];
  const at = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
  return `its JSON is not the shape Conclave writes there${at}${issue ? ` (${issue.message.toLowerCase()})` : ''}`;
}

function expected(check: ColumnCheck): string {
  if (check.json) return 'JSON text';
  const def = check.scalar;
  if (def instanceof z.ZodEnum) return `one of ${def.options.join(', ')}`;
  if (def instanceof z.ZodString) return 'text';
  return def === COUNT ? 'a whole number from -1 to 1,000,000' : check.scalar instanceof z.ZodNumber && check.scalar.isInt ? 'a whole number' : 'a finite number';
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `text of ${value.length} character${value.length === 1 ? '' : 's'}`;
  if (typeof value === 'number') return Number.isFinite(value) ? `the number ${value}` : `the number ${String(value)}`;
  if (value instanceof Uint8Array) return 'a blob';
  return typeof value;
}

/** How a row is named in a message, as `verify` names it. */
export function rowName(table: string, row: Row, callNumber: number | undefined): string {
  if (table === 'debates') return String(row.id);
  if (table === 'calls') return `call ${callNumber ?? '?'} (${safe(row.stage)}, round ${safe(row.round)}, ${safe(row.agent_id)})`;
  return rowKey(row, SEALED_TABLES[table] ?? []).split('/').map(safe).join('/');
}

/** A recorded value as a message may quote it: inert, on one line, at most 40 characters. */
function safe(value: unknown): string {
  const text = inertLine(typeof value === 'string' ? value : String(value));
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

/**
 * A raw row (as SQLite returns it) with each value Conclave would not have written set to null,
 * or null when a value the row cannot be read without is one. The problems found are added to
 * `problems`; a table without a schema here passes as it is.
 */
export function checkRow(table: string, row: Row, problems: RowProblem[], callNumber?: number): Row | null {
  const columns = checks.get(table);
  if (!columns) return row;
  let out: Row | null = null;
  const found: RowProblem[] = [];
  for (const check of columns) {
    if (!(check.name in row)) continue;
    const problem = valueProblem(check, row[check.name]);
    if (problem === null) continue;
    const name = rowName(table, row, callNumber);
    if (check.notNull) {
      problems.push(...found, { table, row: name, column: check.name, problem, action: 'row' });
      return null;
    }
    found.push({ table, row: name, column: check.name, problem, action: 'null' });
    out ??= { ...row };
    out[check.name] = null;
  }
  problems.push(...found);
  return out ?? row;
}

/** One line for stderr (or the viewer's log) naming the debate, the row, the column and what was done. */
export function describeProblem(debateId: string, p: RowProblem): string {
  return inertLine(`debate \`${safe(debateId)}\`: ${whereOf(p)}: ${p.problem}; ${p.action === 'null' ? 'shown as unknown (?)' : 'left out'}.`);
}

function whereOf(p: RowProblem): string {
  const where = p.table === 'calls' ? p.row : p.table === 'debates' ? 'its `debates` row' : `the \`${p.table}\` row (${p.row})`;
  return p.column === null ? where : `${where}, column \`${p.column}\``;
}

/**
 * Renders a debate that a reader failed on (`failure`) although it verifies: every row is checked
 * against the schemas above and read without the values that fail; if it still cannot be
 * rendered, each row in turn is left out until it can. Returns what was rendered and what was set
 * aside. Throws an IntegrityError (exit 6) when nothing usable can be shown, and `failure` itself
 * when no row of the record is to blame.
 */
export function renderChecked<T>(reader: RecordReader, id: string, render: (d: StoredDebate) => T, failure: unknown): { value: T; problems: RowProblem[] } {
  const problems: RowProblem[] = [];
  const checked: RowRepair = (table, row, index) => checkRow(table, row, problems, table === 'calls' ? index + 1 : undefined);
  const debate = readChecked(reader, id, checked, problems);
  try {
    return { value: render(debate), problems };
  } catch (err) {
    failure = problems.length > 0 ? err : failure;
  }
  // A value no schema above rules out (a step of a kind its renderer does not know, …): the row that it is in.
  const rows: { table: string; index: number; name: string }[] = [];
  readChecked(reader, id, (table, row, index) => {
    const kept = checkRow(table, row, [], table === 'calls' ? index + 1 : undefined);
    if (kept !== null && table !== 'debates') rows.push({ table, index, name: rowName(table, kept, index + 1) });
    return kept;
  }, []);
  for (const candidate of rows) {
    const without: RowRepair = (table, row, index) => (table === candidate.table && index === candidate.index ? null : checkRow(table, row, [], table === 'calls' ? index + 1 : undefined));
    let value: T;
    try {
      value = render(readChecked(reader, id, without, []));
    } catch {
      continue;
    }
    problems.push({ table: candidate.table, row: candidate.name, column: null, problem: 'it holds values Conclave never writes there, which the reader cannot show', action: 'row' });
    return { value, problems };
  }
  if (problems.length === 0) throw failure;
  throw unreadable(id, problems);
}

function readChecked(reader: RecordReader, id: string, repair: RowRepair, problems: RowProblem[], what = 'shown'): StoredDebate {
  try {
    return reader.getDebate(id, repair);
  } catch (err) {
    if (problems.some((p) => p.table === 'debates' && p.action === 'row')) throw unreadable(id, problems, what);
    throw err;
  }
}

function unreadable(id: string, problems: RowProblem[], what = 'shown'): IntegrityError {
  const first = problems.find((p) => p.table === 'debates' && p.action === 'row') ?? problems[0]!;
  return new IntegrityError(
    'RECORD_UNREADABLE',
    `Debate \`${safe(id)}\` cannot be ${what}: ${whereOf(first)}: ${first.problem}${problems.length > 1 ? ` (and ${problems.length - 1} more value${problems.length === 2 ? '' : 's'} Conclave never writes)` : ''}. The record matches its hashes, so it was sealed again after that change: only a signed seal tells such a record apart (\`conclave verify --public-key\`).`,
    { hint: `Restore the record from a backup, or import an earlier bundle of debate \`${safe(id)}\` into another database.` },
  );
}

/**
 * Refuses (exit 6) to go on from a debate with a value Conclave never writes: what a command that
 * writes to the debate (`resume`, `synthesize`) would build on and chain after. Run after the seal gate.
 */
export function checkRecordRows(reader: RecordReader, id: string, what: string): void {
  const { problems } = checkedDebate(reader, id, what);
  if (problems.length > 0) throw unreadable(id, problems, what);
}

/** The debate read through the checks above from the start, for a reader that walks its rounds (a forged round number must not make it loop for ever). */
export function checkedDebate(reader: RecordReader, id: string, what = 'shown'): { debate: StoredDebate; problems: RowProblem[] } {
  const problems: RowProblem[] = [];
  const debate = readChecked(reader, id, (table, row, index) => checkRow(table, row, problems, table === 'calls' ? index + 1 : undefined), problems, what);
  return { debate, problems };
}
