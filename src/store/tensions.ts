import type { RunResult } from 'better-sqlite3';
import { and, asc, desc, eq, inArray, sql } from 'drizzle-orm';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import type { Claim, Review, Tension, TargetedExchange, TargetedTurn, TensionMap, TensionUpdate } from '../protocol/tensions.js';
import { bySeverity, TENSION_MAP_FORMAT, TENSION_MAP_VERSION } from '../protocol/tension-order.js';
import { debates } from './schema.js';
import { tensionClaims, tensionConsensus, tensionEntries, tensionExchanges, tensionMaps } from './schema-tensions.js';
import type { RecordWriter } from './writer.js';

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

/** Either the store's database or a transaction on it. */
type Db = BaseSQLiteDatabase<'sync', RunResult>;

/** Writes one step of the tension stage. */
export function recordTensionUpdate(store: RecordWriter, debateId: string, update: TensionUpdate, at: number): void {
  switch (update.step) {
    case 'claims':
      if (update.claims.length === 0) return;
      store.use(`record the claims of debate \`${debateId}\``, (db) =>
        db.transaction((tx) => {
          tx.insert(tensionClaims)
            .values(update.claims.map((c, ordinal) => ({ debateId, claimId: c.id, ordinal, agentId: c.agentId, text: c.text, source: c.source, round: update.round ?? null })))
            .run();
        }),
      );
      return;
    case 'clashes':
      if (update.tensions.length === 0) return;
      store.use(`record the tensions of debate \`${debateId}\``, (db) =>
        db.transaction((tx) => {
          tx.insert(tensionEntries)
            .values(update.tensions.map((t, ordinal) => ({ debateId, tensionId: t.id, ordinal, ...omitId(t) })))
            .run();
        }),
      );
      return;
    case 'settled':
      if (update.resolved.length === 0) return;
      store.use(`record the clashes settled in round ${update.round} of debate \`${debateId}\``, (db) =>
        db.transaction((tx) => {
          for (const r of update.resolved) {
            tx.update(tensionEntries)
              .set({ resolution: 'resolved', resolvedInRound: update.round, concededBy: r.by })
              .where(and(eq(tensionEntries.debateId, debateId), eq(tensionEntries.tensionId, r.id)))
              .run();
          }
        }),
      );
      return;
    case 'decision':
      return;
    case 'targeted': {
      const x = update.exchange;
      store.use(`record the targeted round of debate \`${debateId}\``, (db) =>
        db.transaction((tx) => {
          tx.insert(tensionExchanges)
            .values(
              x.turns.map((t, ordinal) => ({
                debateId,
                agentId: t.agentId,
                ordinal,
                tensionId: x.tensionId,
                opponentId: t.opponentId,
                ownClaim: t.ownClaim,
                opposingClaim: t.opposingClaim,
                question: x.question,
                reason: x.reason,
                prompt: t.prompt,
                status: t.status,
                response: t.reply?.response ?? null,
                stance: t.reply?.stance ?? null,
                revisedClaim: t.reply?.revisedClaim ?? null,
                confidence: t.reply?.confidence ?? null,
                error: t.error,
              })),
            )
            .run();
          tx.update(tensionEntries)
            .set({ resolution: x.outcome })
            .where(and(eq(tensionEntries.debateId, debateId), eq(tensionEntries.tensionId, x.tensionId)))
            .run();
        }),
      );
      return;
    }
    case 'map': {
      const r = update.result;
      store.use(`record the tension map of debate \`${debateId}\``, (db) =>
        db.transaction((tx) => {
          if (r.status === 'failed') {
            tx.insert(tensionMaps)
              .values({ debateId, version: TENSION_MAP_VERSION, status: 'failed', error: r.error, gapsJson: r.gaps, generatedAt: at })
              .run();
            return;
          }
          const m = r.map;
          tx.insert(tensionMaps)
            .values({
              debateId,
              version: m.version,
              status: 'ok',
              round: m.round,
              headline: m.synthesis.headline,
              majorFindingsJson: m.synthesis.majorFindings,
              openQuestionsJson: m.synthesis.openQuestions,
              confidenceJson: m.synthesis.confidenceProfile,
              flagged: m.review.flagged,
              reviewReasonsJson: m.review.reasons,
              answerTokens: m.review.answerTokens,
              pairsCompared: m.coverage.pairsCompared,
              pairsTotal: m.coverage.pairsTotal,
              gapsJson: m.coverage.gaps,
              round2TensionId: m.round2Target?.tensionId ?? null,
              round2Question: m.round2Target?.prompt ?? null,
              generatedAt: Date.parse(m.generatedAt),
            })
            .run();
          if (m.consensus.length > 0) {
            tx.insert(tensionConsensus)
              .values(
                m.consensus.map((z, ordinal) => ({
                  debateId,
                  ordinal,
                  claim: z.claim,
                  supportingAgentsJson: z.supportingAgents,
                  confidence: z.confidence,
                  loadBearing: z.loadBearing,
                })),
              )
              .run();
          }
        }),
      );
      return;
    }
  }
}

function omitId(t: Tension): Omit<Tension, 'id'> {
  const { id: _id, ...rest } = t;
  return rest;
}

/** The tension map of a debate, or null when it ran no tension stage. Pass a transaction for a consistent read. */
export function readTensionMap(db: Db, debateId: string): StoredTensionMap | null {
  const mapRow = db.select().from(tensionMaps).where(eq(tensionMaps.debateId, debateId)).get();
  const claimRows = db.select().from(tensionClaims).where(eq(tensionClaims.debateId, debateId)).orderBy(asc(tensionClaims.ordinal)).all();
  if (!mapRow && claimRows.length === 0) return null;
  const tensionRows = db.select().from(tensionEntries).where(eq(tensionEntries.debateId, debateId)).orderBy(asc(tensionEntries.ordinal)).all();
  const exchangeRows = db.select().from(tensionExchanges).where(eq(tensionExchanges.debateId, debateId)).orderBy(asc(tensionExchanges.ordinal)).all();
  const zoneRows = db.select().from(tensionConsensus).where(eq(tensionConsensus.debateId, debateId)).orderBy(asc(tensionConsensus.ordinal)).all();

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
      ...(r.resolvedInRound === null ? {} : { resolvedInRound: r.resolvedInRound, concededBy: r.concededBy }),
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
export function flaggedTensionMaps(store: RecordWriter, among: readonly string[] = []): { count: number; ids: string[] } {
  return store.use('count the tension maps flagged for review', (db) => {
    const count = db.select({ n: sql<number>`count(*)` }).from(tensionMaps).where(eq(tensionMaps.flagged, true)).get()?.n ?? 0;
    const ids =
      among.length === 0 || count === 0
        ? []
        : db
            .select({ id: tensionMaps.debateId })
            .from(tensionMaps)
            .innerJoin(debates, eq(debates.id, tensionMaps.debateId))
            .where(and(eq(tensionMaps.flagged, true), inArray(tensionMaps.debateId, [...among])))
            .orderBy(desc(debates.createdAt), desc(debates.id))
            .all()
            .map((r) => r.id);
    return { count, ids };
  });
}
