import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import type { ProtocolStep } from '../engine/protocol-events.js';
import { debates } from './schema.js';

// Protocol steps (issue 10): the shape of a run beyond turns and scores (a tournament's
// bracket and verdicts, a decomposition's sub-questions and answers, the synthesizer's
// rotation turn), one row per step in the order the protocol reported them.

export const protocolSteps = sqliteTable(
  'protocol_steps',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    kind: text('kind').notNull(),
    round: integer('round').notNull(),
    bodyJson: text('body_json', { mode: 'json' }).$type<ProtocolStep>().notNull(),
    /** The last call recorded before this step, so a replay puts it back where it happened. */
    afterCallId: integer('after_call_id'),
    at: integer('at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.seq] })],
);
