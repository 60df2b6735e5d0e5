import type { RunResult } from 'better-sqlite3';
import { asc, eq, sql } from 'drizzle-orm';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import { type ProtocolStep, stepRound } from '../engine/protocol-events.js';
import { protocolSteps } from './schema-protocols.js';
import type { RecordWriter } from './writer.js';

/** A recorded protocol step, in the order it was reported. */
export interface StoredStep {
  seq: number;
  step: ProtocolStep;
  /** Row id of the last call stored before it; null when none was. */
  afterCallId: number | null;
  at: number;
}

type Db = BaseSQLiteDatabase<'sync', RunResult>;

export function recordProtocolStep(store: RecordWriter, debateId: string, step: ProtocolStep, afterCallId: number | null, at: number): void {
  store.use(`record a ${step.kind} step of debate \`${debateId}\``, (db) =>
    db.transaction((tx) => {
      const next = tx
        .select({ n: sql<number>`coalesce(max(${protocolSteps.seq}), -1) + 1` })
        .from(protocolSteps)
        .where(eq(protocolSteps.debateId, debateId))
        .get();
      tx.insert(protocolSteps)
        .values({ debateId, seq: next?.n ?? 0, kind: step.kind, round: stepRound(step), bodyJson: step, afterCallId, at })
        .run();
    }),
  );
}

export function readProtocolSteps(db: Db, debateId: string): StoredStep[] {
  return db
    .select()
    .from(protocolSteps)
    .where(eq(protocolSteps.debateId, debateId))
    .orderBy(asc(protocolSteps.seq))
    .all()
    .map((r) => ({ seq: r.seq, step: r.bodyJson, afterCallId: r.afterCallId, at: r.at }));
}
