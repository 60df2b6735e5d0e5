import type { Preset } from '../config/preset-schema.js';
import type { CallMetrics, Stage } from '../engine/call-record.js';
import type { RecordReader, RoundRow } from './reader.js';
import { toRoundJudgement } from './reader.js';
import { decodeRow } from './rows.js';

/** What the decision rules need of one call: where it sits, its tokens and its times. */
export interface CallCostRow {
  stage: Stage;
  round: number;
  agentId: string;
  metrics: Pick<CallMetrics, 'promptTokens' | 'completionTokens' | 'totalDurationNs'>;
  startedAt: number;
  finishedAt: number;
}

/** One debate reduced to what re-scoring reads: how it ended, its calls' costs, and the judge's convergence per round. */
export interface RescoreRecord {
  id: string;
  status: string;
  exitReason: string | null;
  preset: Preset;
  calls: CallCostRow[];
  convergence: Map<number, number | null>;
}

/**
 * Reads, for many debates at once, only the columns re-scoring needs: no messages or replies,
 * so a run of hundreds of debates reads in a moment. Nothing is written.
 */
export function readRescoreRecords(reader: RecordReader, debateIds: readonly string[]): Map<string, RescoreRecord> {
  const out = new Map<string, RescoreRecord>();
  return reader.read('read the debates to re-score', (sqlite) =>
    sqlite
      .transaction(() => {
        for (let start = 0; start < debateIds.length; start += 500) {
          const ids = JSON.stringify(debateIds.slice(start, start + 500));
          const heads = sqlite.prepare('select id, status, exit_reason as exitReason, preset_json as presetJson from debates where id in (select value from json_each(?))').all(ids) as {
            id: string;
            status: string;
            exitReason: string | null;
            presetJson: string;
          }[];
          for (const h of heads) out.set(h.id, { id: h.id, status: h.status, exitReason: h.exitReason, preset: JSON.parse(h.presetJson) as Preset, calls: [], convergence: new Map() });
          const calls = sqlite
            .prepare(
              `select debate_id as debateId, stage, round, agent_id as agentId, prompt_tokens as promptTokens, completion_tokens as completionTokens,
                total_duration_ns as totalDurationNs, started_at as startedAt, finished_at as finishedAt
               from calls where debate_id in (select value from json_each(?)) order by debate_id, id`,
            )
            .all(ids) as (Omit<CallCostRow, 'metrics'> & { debateId: string; promptTokens: number | null; completionTokens: number | null; totalDurationNs: number | null })[];
          for (const c of calls) {
            out.get(c.debateId)?.calls.push({
              stage: c.stage,
              round: c.round,
              agentId: c.agentId,
              metrics: { promptTokens: c.promptTokens, completionTokens: c.completionTokens, totalDurationNs: c.totalDurationNs },
              startedAt: c.startedAt,
              finishedAt: c.finishedAt,
            });
          }
          const rounds = sqlite.prepare('select * from rounds where debate_id in (select value from json_each(?))').all(ids) as Record<string, unknown>[];
          for (const raw of rounds) {
            // Through the reader every view uses, so the judge's scale is read one way everywhere.
            const row = decodeRow<RoundRow>('rounds', raw);
            out.get(row.debateId)?.convergence.set(row.round, toRoundJudgement(row).convergence);
          }
        }
        return out;
      })
      .deferred(),
  );
}

/** The bench trial a debate was run for, if any: its run, item and preset. */
export function benchTrialOf(reader: RecordReader, debateId: string): { runId: string; itemId: string; preset: string } | null {
  return reader.read(`look up the bench item of debate \`${debateId}\``, (sqlite) => {
    const row = sqlite.prepare("select run_id as runId, item_id as itemId, preset from bench_trials where debate_id = ? and status = 'done' order by id desc limit 1").get(debateId) as
      | { runId: string; itemId: string; preset: string }
      | undefined;
    return row ?? null;
  });
}
