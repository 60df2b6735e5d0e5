import type { Claim, Review, Tension, TargetedExchange, TargetedTurn, TensionMap } from '../protocol/tensions.js';
import { bySeverity, TENSION_MAP_FORMAT, TENSION_MAP_VERSION } from '../protocol/tension-order.js';
import type { TableReader } from './rows.js';
import type { tensionClaims, tensionConsensus, tensionEntries, tensionExchanges, tensionMaps } from './schema-tensions.js';
import type { RecordReading } from './writer.js';

/**
 * The tension map as recorded: each step's rows as soon as the stage reports them,
 * each in its own transaction. `incomplete` means the stage stopped before the map
 * step (an interrupted debate).
 */
export interface StoredTensionMap {
  status: 'ok' | 'failed' | 'incomplete';
  error: string | null;
  /** The whole document, rebuilt from the rows; null unless status is ok. */
  map: TensionMap | null;
  agents: string[];
  claims: Claim[];
  /** Most severe first. */
  tensions: Tension[];
  exchange: TargetedExchange | null;
  review: Review | null;
  gaps: string[];
  generatedAt: number | null;
  /** The round whose answers the clashes were mapped on; null in records made before it was kept. */
  earlyRound: number | null;
}

/** The tension map of a debate, or null when it ran no tension stage. Read it within a transaction for a consistent snapshot. */
export function readTensionMap(read: TableReader, debateId: string): StoredTensionMap | null {
  const mapRow = read<typeof tensionMaps.$inferSelect>('tension_maps', 'rowid')[0];
  const claimRows = read<typeof tensionClaims.$inferSelect>('tension_claims', 'ordinal');
  if (!mapRow && claimRows.length === 0) return null;
  // The one column whose field is not its name in camelCase.
  const tensionRows = read<Omit<typeof tensionEntries.$inferSelect, 'resolvedInRound'> & { resolvedRound: number | null }>('tensions', 'ordinal');
  const exchangeRows = read<typeof tensionExchanges.$inferSelect>('tension_exchanges', 'ordinal');
  const zoneRows = read<typeof tensionConsensus.$inferSelect>('tension_consensus', 'ordinal');

  const claims: Claim[] = claimRows.map((r) => ({ id: r.claimId, agentId: r.agentId, text: r.text, source: r.source }));
  const agents = [...new Set(claims.map((c) => c.agentId))];
  const tensions = bySeverity(
    tensionRows.map((r) => ({
      id: r.tensionId,
      agentA: r.agentA,
      agentB: r.agentB,
      claimAId: r.claimAId,
      claimBId: r.claimBId,
      claimA: r.claimA,
      claimB: r.claimB,
      type: r.type,
      severity: r.severity,
      loadBearing: r.loadBearing,
      resolvable: r.resolvable,
      recommendation: r.recommendation,
      resolution: r.resolution,
      ...(r.resolvedRound === null ? {} : { resolvedInRound: r.resolvedRound, concededBy: r.concededBy }),
    })),
  );
  let exchange: TargetedExchange | null = null;
  const first = exchangeRows[0];
  if (first) {
    const target = tensions.find((t) => t.id === first.tensionId);
    const turns: TargetedTurn[] = exchangeRows.map((r) => ({
      agentId: r.agentId,
      opponentId: r.opponentId,
      ownClaim: r.ownClaim,
      opposingClaim: r.opposingClaim,
      prompt: r.prompt,
      status: r.status,
      reply:
        r.status === 'ok' && r.response !== null && r.stance !== null && r.revisedClaim !== null && r.confidence !== null
          ? { response: r.response, stance: r.stance, revisedClaim: r.revisedClaim, confidence: r.confidence }
          : null,
      error: r.error,
    }));
    const resolution = target?.resolution;
    exchange = {
      tensionId: first.tensionId,
      agents: [first.agentId, first.opponentId],
      question: first.question,
      reason: first.reason,
      turns,
      outcome: resolution && resolution !== 'open' ? resolution : 'unresolved',
    };
  }
  const gaps = mapRow?.gapsJson ?? [];
  const earlyRound = claimRows[0]?.round ?? null;
  if (!mapRow || mapRow.status === 'failed') {
    return {
      status: mapRow ? 'failed' : 'incomplete',
      error: mapRow?.error ?? null,
      map: null,
      agents,
      claims,
      tensions,
      exchange,
      review: null,
      gaps,
      generatedAt: mapRow?.generatedAt ?? null,
      earlyRound,
    };
  }
  const review: Review = { flagged: mapRow.flagged, reasons: mapRow.reviewReasonsJson ?? [], answerTokens: mapRow.answerTokens ?? 0 };
  const map: TensionMap = {
    format: TENSION_MAP_FORMAT,
    version: TENSION_MAP_VERSION,
    debateId,
    generatedAt: new Date(mapRow.generatedAt).toISOString(),
    round: mapRow.round === 2 ? 2 : 1,
    agents,
    claims,
    consensus: zoneRows.map((z) => ({ claim: z.claim, supportingAgents: z.supportingAgentsJson, confidence: z.confidence, loadBearing: z.loadBearing })),
    tensions,
    synthesis: {
      headline: mapRow.headline ?? '',
      majorFindings: mapRow.majorFindingsJson ?? [],
      openQuestions: mapRow.openQuestionsJson ?? [],
      confidenceProfile: mapRow.confidenceJson ?? {},
    },
    round2Target:
      exchange && mapRow.round2TensionId
        ? { tensionId: mapRow.round2TensionId, agents: exchange.agents, prompt: mapRow.round2Question ?? exchange.question, outcome: exchange.outcome }
        : null,
    review,
    coverage: { pairsCompared: mapRow.pairsCompared ?? 0, pairsTotal: mapRow.pairsTotal ?? 0, gaps },
  };
  return { status: 'ok', error: null, map, agents, claims, tensions, exchange, review, gaps, generatedAt: mapRow.generatedAt, earlyRound };
}

/** How many debates have a tension map flagged for human review, and which of `among` they are. */
export function flaggedTensionMaps(store: RecordReading, among: readonly string[] = []): { count: number; ids: string[] } {
  return store.read('count the tension maps flagged for review', (sqlite) => {
    const count = (sqlite.prepare('select count(*) as n from tension_maps where flagged = 1').get() as { n: number }).n;
    const wanted = [...new Set(among)];
    const ids =
      wanted.length === 0 || count === 0
        ? []
        : (
            sqlite
              .prepare(`select m.debate_id as id from tension_maps m join debates d on d.id = m.debate_id where m.flagged = 1 and m.debate_id in (select value from json_each(?)) order by d.created_at desc, d.id desc`)
              .all(JSON.stringify(wanted)) as { id: string }[]
          ).map((r) => r.id);
    return { count, ids };
  });
}
