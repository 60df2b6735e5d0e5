import type { QualityRecord, Stage } from '../engine/events.js';
import type { TableReader } from './rows.js';
import type { resultQuality } from './schema-quality.js';
import type { RecordWriter } from './writer.js';


/** Stores one quality rating; a later rating of the same result and try (a resumed run) replaces it. */
export function recordQuality(store: RecordWriter, debateId: string, rating: QualityRecord, at: number): void {
  store.runPrepared(`record the quality of ${rating.agentId}'s ${rating.stage} ${rating.round} for debate \`${debateId}\``, UPSERT_QUALITY, {
    debate_id: debateId,
    stage: rating.stage,
    round: rating.round,
    agent_id: rating.agentId,
    try: rating.try,
    score: rating.score,
    action: rating.action,
    reasons_json: JSON.stringify(rating.reasons),
    has_trade_offs: rating.indicators === undefined ? null : Number(rating.indicators.hasTradeOffs),
    constraint_count: rating.indicators?.constraintCount ?? null,
    at,
  });
}

const UPSERT_QUALITY = `insert into result_quality (debate_id, stage, round, agent_id, try, score, action, reasons_json, has_trade_offs, constraint_count, at)
  values (@debate_id, @stage, @round, @agent_id, @try, @score, @action, @reasons_json, @has_trade_offs, @constraint_count, @at)
  on conflict (debate_id, stage, round, agent_id, try) do update set score = excluded.score, action = excluded.action, reasons_json = excluded.reasons_json,
    has_trade_offs = excluded.has_trade_offs, constraint_count = excluded.constraint_count, at = excluded.at`;

/** Every rating of a debate, by round, then agent, then try (calls of a round run at once, so time would not order them stably). */
export function readQuality(read: TableReader): QualityRecord[] {
  return read<typeof resultQuality.$inferSelect>('result_quality', 'round, agent_id, stage, try').map((r) => ({
    stage: r.stage as Stage,
    round: r.round,
    agentId: r.agentId,
    try: r.try,
    score: r.score,
    action: r.action,
    reasons: r.reasonsJson,
    ...(r.hasTradeOffs === null ? {} : { indicators: { hasTradeOffs: r.hasTradeOffs, constraintCount: r.constraintCount ?? 0 } }),
  }));
}

/** The rating that counts for each result (its last try), keyed `stage/round/agent`. */
export function finalRatings(ratings: readonly QualityRecord[]): Map<string, QualityRecord> {
  const out = new Map<string, QualityRecord>();
  for (const r of ratings) {
    const key = qualityKey(r.stage, r.round, r.agentId);
    const known = out.get(key);
    if (!known || r.try >= known.try) out.set(key, r);
  }
  return out;
}

export function qualityKey(stage: string, round: number, agentId: string): string {
  return `${stage}/${round}/${agentId}`;
}
