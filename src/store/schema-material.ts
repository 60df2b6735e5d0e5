import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { debates } from './schema.js';

// Attached material and the token budget (issue 13): the files the panel read, whole, with
// their hashes, and each decision the budget made, in order. Both are sealed with the debate.

export const attachments = sqliteTable(
  'attachments',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    ordinal: integer('ordinal').notNull(),
    name: text('name').notNull(),
    bytes: integer('bytes').notNull(),
    sha256: text('sha256').notNull(),
    content: text('content').notNull(),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.ordinal] })],
);

export const budgetDecisions = sqliteTable(
  'budget_decisions',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    kind: text('kind', { enum: ['truncate', 'skip', 'stop'] }).notNull(),
    stage: text('stage'),
    round: integer('round').notNull(),
    agentId: text('agent_id'),
    detail: text('detail').notNull(),
    used: integer('used').notNull(),
    limitTokens: integer('limit_tokens').notNull(),
    at: integer('at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.seq] })],
);
