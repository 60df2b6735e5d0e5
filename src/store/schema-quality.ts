import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { debates } from './schema.js';

// Quality indicators (docs/quality.md): one row per rating of an agent result. A result that
// was retried has two rows, `try` 0 (the first answer, RETRY) and 1 (the answer kept).

export const qualityActions = ['PASS', 'WARN', 'RETRY', 'REJECT'] as const;

export const resultQuality = sqliteTable(
  'result_quality',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    stage: text('stage').notNull(),
    round: integer('round').notNull(),
    agentId: text('agent_id').notNull(),
    try: integer('try').notNull(),
    score: integer('score').notNull(),
    action: text('action', { enum: qualityActions }).notNull(),
    reasonsJson: text('reasons_json', { mode: 'json' }).$type<string[]>().notNull(),
    /** Seed 002's quality indicators (docs/orchestration.md); null for results that state none, and for older rows. */
    hasTradeOffs: integer('has_trade_offs', { mode: 'boolean' }),
    constraintCount: integer('constraint_count'),
    at: integer('at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.stage, t.round, t.agentId, t.try] })],
);
