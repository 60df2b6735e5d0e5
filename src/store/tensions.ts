import { and, eq } from 'drizzle-orm';
import type { Tension, TensionUpdate } from '../protocol/tensions.js';
import { TENSION_MAP_VERSION } from '../protocol/tension-order.js';
import { tensionClaims, tensionConsensus, tensionEntries, tensionExchanges, tensionMaps } from './schema-tensions.js';
import type { RecordWriter } from './writer.js';

export type { StoredTensionMap } from './tensions-read.js';

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

export { flaggedTensionMaps } from './tensions-read.js';
