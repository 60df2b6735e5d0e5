import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Preset } from '../../src/config/preset-schema.js';
import type { AgentInfo, CallRecord, TurnRecord } from '../../src/engine/events.js';
import type Database from 'better-sqlite3';
import type { NewDebate } from '../../src/store/index.js';
import { joinTableDigests } from '../../src/store/chain.js';

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-store-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export const preset: Preset = {
  name: 'trio',
  agents: [
    { id: 'ada', model: 'llama3.1:8b', persona: 'a careful engineer' },
    { id: 'bo', model: 'qwen2.5:7b', cluster: 'east' },
    { id: 'cy', model: 'llama3.1:8b' },
  ],
  judge: { model: 'qwen2.5:3b', options: { temperature: 0 } },
  synthesizer: { model: 'llama3.1:8b' },
  protocol: { kind: 'debate', maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 600, maxAnswerTokens: 900 },
};

export const panel: AgentInfo[] = [
  { id: 'ada', model: 'llama3.1:8b', persona: 'a careful engineer', cluster: null, role: 'debater', digest: null },
  { id: 'bo', model: 'qwen2.5:7b', persona: null, cluster: 'east', role: 'debater', digest: 'sha256:bo' },
  { id: 'cy', model: 'llama3.1:8b', persona: null, cluster: null, role: 'debater', digest: null },
  { id: 'judge', model: 'qwen2.5:3b', persona: null, cluster: null, role: 'judge', digest: null },
  { id: 'synthesizer', model: 'llama3.1:8b', persona: null, cluster: null, role: 'synthesizer', digest: null },
];

export function newDebate(overrides: Partial<NewDebate> = {}): NewDebate {
  return {
    id: 'd-0001',
    question: 'Should we shard the database?',
    preset,
    engineVersion: '0.1.0',
    host: 'http://127.0.0.1:11434',
    agents: panel,
    createdAt: 1_700_000_000_000,
    ...overrides,
  };
}

export function call(debateId: string, overrides: Partial<CallRecord> = {}): CallRecord {
  return {
    debateId,
    stage: 'opening',
    round: 0,
    agentId: 'ada',
    attempt: 0,
    host: 'http://127.0.0.1:11434',
    model: 'llama3.1:8b',
    messages: [
      { role: 'system', content: 'You are ada.' },
      { role: 'user', content: 'Should we shard the database?' },
    ],
    options: { temperature: 0.7, num_ctx: 8192, num_predict: 900 },
    format: { type: 'object', properties: { position: { type: 'string' } }, required: ['position'] },
    raw: '{"position":"No","reasoning":"Too small","confidence":0.7}',
    parsed: { position: 'No', reasoning: 'Too small', confidence: 0.7 },
    status: 'ok',
    validationError: null,
    error: null,
    truncation: null,
    metrics: {
      promptTokens: 120,
      completionTokens: 48,
      totalDurationNs: 2_500_000_000,
      loadDurationNs: 1_000_000,
      promptEvalDurationNs: 300_000_000,
      evalDurationNs: 2_100_000_000,
      doneReason: 'stop',
    },
    startedAt: 1_700_000_000_100,
    finishedAt: 1_700_000_002_600,
    ...overrides,
  };
}

export function openingTurn(agentId: string, position: string): TurnRecord {
  return {
    round: 0,
    agentId,
    model: 'llama3.1:8b',
    status: 'ok',
    position,
    confidence: 0.7,
    opening: { position, reasoning: 'because', confidence: 0.7 },
    critique: null,
    error: null,
  };
}

/**
 * Puts a closed record back as migration 0015 left it: `calls` with AUTOINCREMENT (and its
 * sqlite_sequence row), and 0016 not applied.
 */
export function asBefore0016(sqlite: Database.Database): void {
  asBefore0017(sqlite);
  const { sql } = sqlite.prepare("select sql from sqlite_master where name = 'calls'").get() as { sql: string };
  sqlite.pragma('foreign_keys = OFF');
  sqlite.exec(`drop index calls_debate_round_idx; alter table calls rename to calls_0016;
    ${sql.replace('PRIMARY KEY NOT NULL', 'PRIMARY KEY AUTOINCREMENT NOT NULL')};
    insert into calls select * from calls_0016; drop table calls_0016;
    create index calls_debate_round_idx on calls (debate_id, round);`);
  markNewestMigrationUnapplied(sqlite);
}

/** Makes a record look as Conclave wrote it before 0018: bench runs without seals, no `bench_seal_rows`. */
export function asBefore0018(sqlite: Database.Database): void {
  sqlite.exec('drop table bench_seal_rows; drop table bench_seals;');
  markNewestMigrationUnapplied(sqlite);
}

/** Makes a record look as Conclave wrote it before 0017: each debate's row digests whole in its row, no `seal_rows`. */
export function asBefore0017(sqlite: Database.Database): void {
  asBefore0018(sqlite);
  const debates = sqlite.prepare('select distinct debate_id as id from seal_rows').all() as { id: string }[];
  const tables = sqlite.prepare('select table_name, digests_json from seal_rows where debate_id = ? order by table_name');
  for (const { id } of debates) {
    const json = joinTableDigests((tables.all(id) as { table_name: string; digests_json: string }[]).map((t) => [t.table_name, t.digests_json]));
    sqlite.prepare('update debates set seal_rows_json = ? where id = ?').run(json, id);
  }
  sqlite.exec('drop table seal_rows');
  markNewestMigrationUnapplied(sqlite);
}

/** Drops the newest migration from the record's list of those applied (its changes stay). */
export function markNewestMigrationUnapplied(sqlite: Database.Database): void {
  sqlite.exec('delete from __drizzle_migrations where created_at = (select max(created_at) from __drizzle_migrations)');
}
