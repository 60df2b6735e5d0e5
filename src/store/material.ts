import type { BudgetDecision } from '../engine/events.js';
import type { Attachment } from '../protocol/material.js';
import type { TableReader } from './rows.js';
import type { attachments, budgetDecisions } from './schema-material.js';
import type { RecordWriter } from './writer.js';


/** Stores the files attached to a debate, whole, in one transaction. */
export function recordAttachments(store: RecordWriter, debateId: string, files: readonly Attachment[]): void {
  if (files.length === 0) return;
  store.use(`record the attachments of debate \`${debateId}\``, (_db, sqlite) => {
    const insert = sqlite.prepare('insert into attachments (debate_id, ordinal, name, bytes, sha256, content) values (?, ?, ?, ?, ?, ?)');
    sqlite.transaction(() => files.forEach((f, ordinal) => insert.run(debateId, ordinal, f.name, f.bytes, f.sha256, f.content)))();
  });
}

export function recordBudgetDecision(store: RecordWriter, debateId: string, d: BudgetDecision, at: number): void {
  store.runPrepared(`record a budget decision of debate \`${debateId}\``, INSERT_DECISION, {
    debate_id: debateId,
    seq: store.nextNumber(debateId, 'budget_decisions', 'seq', 0),
    kind: d.kind,
    stage: d.stage,
    round: d.round,
    agent_id: d.agentId,
    detail: d.detail,
    used: d.used,
    limit_tokens: d.limit,
    at,
  });
}

const INSERT_DECISION = `insert into budget_decisions (debate_id, seq, kind, stage, round, agent_id, detail, used, limit_tokens, at)
  values (@debate_id, @seq, @kind, @stage, @round, @agent_id, @detail, @used, @limit_tokens, @at)`;

export function readAttachments(read: TableReader): Attachment[] {
  return read<typeof attachments.$inferSelect>('attachments', 'ordinal').map((r) => ({ name: r.name, bytes: r.bytes, sha256: r.sha256, content: r.content }));
}

export function readBudgetDecisions(read: TableReader): BudgetDecision[] {
  return read<typeof budgetDecisions.$inferSelect>('budget_decisions', 'seq').map((r) => ({
    kind: r.kind,
    stage: (r.stage as BudgetDecision['stage']) ?? null,
    round: r.round,
    agentId: r.agentId,
    detail: r.detail,
    used: r.used,
    limit: r.limitTokens,
  }));
}
