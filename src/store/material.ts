import type { RunResult } from 'better-sqlite3';
import { asc, eq, sql } from 'drizzle-orm';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import type { BudgetDecision } from '../engine/events.js';
import type { Attachment } from '../protocol/material.js';
import { attachments, budgetDecisions } from './schema-material.js';
import type { RecordWriter } from './writer.js';

type Db = BaseSQLiteDatabase<'sync', RunResult>;

/** Stores the files attached to a debate, whole, in one transaction. */
export function recordAttachments(store: RecordWriter, debateId: string, files: readonly Attachment[]): void {
  if (files.length === 0) return;
  store.use(`record the attachments of debate \`${debateId}\``, (db) =>
    db.transaction((tx) => {
      files.forEach((f, ordinal) => {
        tx.insert(attachments).values({ debateId, ordinal, name: f.name, bytes: f.bytes, sha256: f.sha256, content: f.content }).run();
      });
    }),
  );
}

export function recordBudgetDecision(store: RecordWriter, debateId: string, d: BudgetDecision, at: number): void {
  store.use(`record a budget decision of debate \`${debateId}\``, (db) =>
    db.transaction((tx) => {
      const next = tx
        .select({ n: sql<number>`coalesce(max(${budgetDecisions.seq}), -1) + 1` })
        .from(budgetDecisions)
        .where(eq(budgetDecisions.debateId, debateId))
        .get();
      tx.insert(budgetDecisions)
        .values({ debateId, seq: next?.n ?? 0, kind: d.kind, stage: d.stage, round: d.round, agentId: d.agentId, detail: d.detail, used: d.used, limitTokens: d.limit, at })
        .run();
    }),
  );
}

export function readAttachments(db: Db, debateId: string): Attachment[] {
  return db
    .select()
    .from(attachments)
    .where(eq(attachments.debateId, debateId))
    .orderBy(asc(attachments.ordinal))
    .all()
    .map((r) => ({ name: r.name, bytes: r.bytes, sha256: r.sha256, content: r.content }));
}

export function readBudgetDecisions(db: Db, debateId: string): BudgetDecision[] {
  return db
    .select()
    .from(budgetDecisions)
    .where(eq(budgetDecisions.debateId, debateId))
    .orderBy(asc(budgetDecisions.seq))
    .all()
    .map((r) => ({ kind: r.kind, stage: (r.stage as BudgetDecision['stage']) ?? null, round: r.round, agentId: r.agentId, detail: r.detail, used: r.used, limit: r.limitTokens }));
}
