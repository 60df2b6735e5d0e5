import { type ProtocolStep, stepRound } from '../engine/protocol-events.js';
import { withArticle } from '../plural.js';
import type { TableReader } from './rows.js';
import type { protocolSteps } from './schema-protocols.js';
import type { RecordWriter } from './writer.js';

/** A recorded protocol step, in the order it was reported. */
export interface StoredStep {
  seq: number;
  step: ProtocolStep;
  /** Row id of the last call stored before it; null when none was. */
  afterCallId: number | null;
  at: number;
}


export function recordProtocolStep(store: RecordWriter, debateId: string, step: ProtocolStep, afterCallId: number | null, at: number): void {
  store.runPrepared(`record ${withArticle(step.kind)} step of debate \`${debateId}\``, INSERT_STEP, {
    debate_id: debateId,
    seq: store.nextNumber(debateId, 'protocol_steps', 'seq', 0),
    kind: step.kind,
    round: stepRound(step),
    body_json: JSON.stringify(step),
    after_call_id: afterCallId,
    at,
  });
}

const INSERT_STEP = `insert into protocol_steps (debate_id, seq, kind, round, body_json, after_call_id, at)
  values (@debate_id, @seq, @kind, @round, @body_json, @after_call_id, @at)`;

export function readProtocolSteps(read: TableReader): StoredStep[] {
  return read<typeof protocolSteps.$inferSelect>('protocol_steps', 'seq').map((r) => ({ seq: r.seq, step: r.bodyJson, afterCallId: r.afterCallId, at: r.at }));
}
