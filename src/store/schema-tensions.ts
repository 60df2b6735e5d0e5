import { index, integer, primaryKey, real, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import type { ReviewReason } from '../protocol/tensions.js';
import { debates } from './schema.js';

// Tension maps (issue 4): one row per map, per claim, per tension, per consensus zone and
// per targeted answer, so each can be queried. Enums are TypeScript-only, as in schema.ts.

export const tensionMapStatuses = ['ok', 'failed'] as const;
export const tensionClaimSources = ['model', 'answer'] as const;
export const tensionClashTypes = ['factual', 'interpretive', 'emphasis'] as const;
export const tensionResolutions = ['open', 'resolved', 'narrowed', 'unresolved'] as const;
export const tensionStances = ['maintain', 'narrow', 'concede'] as const;
export const tensionTurnStatuses = ['ok', 'failed'] as const;

/** One map per debate: its synthesis, the review flag, and how it ended. */
export const tensionMaps = sqliteTable(
  'tension_maps',
  {
    debateId: text('debate_id')
      .primaryKey()
      .references(() => debates.id, { onDelete: 'cascade' }),
    version: integer('version').notNull(),
    status: text('status', { enum: tensionMapStatuses }).notNull(),
    error: text('error'),
    /** 2 when a targeted round ran before the map was drawn. */
    round: integer('round'),
    headline: text('headline'),
    majorFindingsJson: text('major_findings_json', { mode: 'json' }).$type<string[]>(),
    openQuestionsJson: text('open_questions_json', { mode: 'json' }).$type<string[]>(),
    confidenceJson: text('confidence_json', { mode: 'json' }).$type<Record<string, number>>(),
    flagged: integer('flagged', { mode: 'boolean' }).notNull().default(false),
    reviewReasonsJson: text('review_reasons_json', { mode: 'json' }).$type<ReviewReason[]>(),
    answerTokens: integer('answer_tokens'),
    pairsCompared: integer('pairs_compared'),
    pairsTotal: integer('pairs_total'),
    gapsJson: text('gaps_json', { mode: 'json' }).$type<string[]>(),
    round2TensionId: text('round2_tension_id'),
    round2Question: text('round2_question'),
    generatedAt: integer('generated_at').notNull(),
  },
  (t) => [index('tension_maps_flagged_idx').on(t.flagged)],
);

/** The load-bearing claims the map was drawn from, numbered C1, C2, … per debate. */
export const tensionClaims = sqliteTable(
  'tension_claims',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    claimId: text('claim_id').notNull(),
    ordinal: integer('ordinal').notNull(),
    agentId: text('agent_id').notNull(),
    text: text('text').notNull(),
    source: text('source', { enum: tensionClaimSources }).notNull(),
    /** The round whose answers the claim was read from (0 when a debate maps its clashes before the critique rounds); null in records made before. */
    round: integer('round'),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.claimId] })],
);

/** One row per clash between two agents' claims. */
export const tensionEntries = sqliteTable(
  'tensions',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    tensionId: text('tension_id').notNull(),
    ordinal: integer('ordinal').notNull(),
    agentA: text('agent_a').notNull(),
    agentB: text('agent_b').notNull(),
    claimAId: text('claim_a_id').notNull(),
    claimBId: text('claim_b_id').notNull(),
    claimA: text('claim_a').notNull(),
    claimB: text('claim_b').notNull(),
    type: text('type', { enum: tensionClashTypes }).notNull(),
    severity: integer('severity').notNull(),
    loadBearing: integer('load_bearing', { mode: 'boolean' }).notNull(),
    resolvable: integer('resolvable', { mode: 'boolean' }).notNull(),
    recommendation: text('recommendation').notNull(),
    resolution: text('resolution', { enum: tensionResolutions }).notNull(),
    /** The critique round in which one side conceded the clash; null when none did. */
    resolvedInRound: integer('resolved_round'),
    /** Who conceded it in that round. */
    concededBy: text('conceded_by'),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.tensionId] })],
);

/** One row per consensus zone of an ok map. */
export const tensionConsensus = sqliteTable(
  'tension_consensus',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    ordinal: integer('ordinal').notNull(),
    claim: text('claim').notNull(),
    supportingAgentsJson: text('supporting_agents_json', { mode: 'json' }).$type<string[]>().notNull(),
    confidence: real('confidence').notNull(),
    loadBearing: integer('load_bearing', { mode: 'boolean' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.ordinal] })],
);

/** The targeted round: one row per re-queried agent, with the exact prompt and its answer. */
export const tensionExchanges = sqliteTable(
  'tension_exchanges',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    agentId: text('agent_id').notNull(),
    ordinal: integer('ordinal').notNull(),
    tensionId: text('tension_id').notNull(),
    opponentId: text('opponent_id').notNull(),
    ownClaim: text('own_claim').notNull(),
    opposingClaim: text('opposing_claim').notNull(),
    question: text('question').notNull(),
    reason: text('reason').notNull(),
    prompt: text('prompt').notNull(),
    status: text('status', { enum: tensionTurnStatuses }).notNull(),
    response: text('response'),
    stance: text('stance', { enum: tensionStances }),
    revisedClaim: text('revised_claim'),
    confidence: real('confidence'),
    error: text('error'),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.agentId] })],
);
