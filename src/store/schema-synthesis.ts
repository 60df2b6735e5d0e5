import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { debates, outcomeStatuses } from './schema.js';

/**
 * Every synthesis attempt of a debate, the first one and each `conclave synthesize`
 * after it. The `syntheses` row holds the one that counts: the latest that succeeded,
 * else the latest.
 */
export const synthesisAttempts = sqliteTable(
  'synthesis_attempts',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    /** 1 for the debate's own synthesis, then 2, 3, … */
    attempt: integer('attempt').notNull(),
    model: text('model').notNull(),
    status: text('status', { enum: outcomeStatuses }).notNull(),
    bodyJson: text('body_json', { mode: 'json' }).$type<unknown>(),
    error: text('error'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.attempt] })],
);
