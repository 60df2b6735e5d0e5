import { integer, primaryKey, real, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import type { ClusterTallyRecord } from '../engine/vote-events.js';
import { calls, debates } from './schema.js';

// Cluster approval voting (issue 5). Enums are TypeScript-only, as in schema.ts.

export const artifactOrigins = ['final', 'refined', 'kept'] as const;
export const voteValues = ['yes', 'no', 'abstain'] as const;
export const voteParseStatuses = ['ok', 'invalid', 'failed'] as const;
export const voteTiers = ['consensus', 'polar', 'reject'] as const;
export const voteActions = ['emphasize', 'ground', 'contextualize', 'exclude'] as const;
export const persuasionKinds = ['accelerator', 'mitigator'] as const;

/** The positions put to the vote, one per author and iteration. */
export const voteArtifacts = sqliteTable(
  'vote_artifacts',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    iteration: integer('iteration').notNull(),
    artifactId: text('artifact_id').notNull(),
    authorId: text('author_id').notNull(),
    authorCluster: text('author_cluster'),
    origin: text('origin', { enum: artifactOrigins }).notNull(),
    sourceRound: integer('source_round'),
    text: text('text').notNull(),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.iteration, t.artifactId] })],
);

/** One row per ballot: who voted what on which position, the reply it came from and the call behind it. */
export const votes = sqliteTable(
  'votes',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    iteration: integer('iteration').notNull(),
    artifactId: text('artifact_id').notNull(),
    voterId: text('voter_id').notNull(),
    voterCluster: text('voter_cluster'),
    vote: text('vote', { enum: voteValues }).notNull(),
    reason: text('reason'),
    raw: text('raw').notNull(),
    parseStatus: text('parse_status', { enum: voteParseStatuses }).notNull(),
    error: text('error'),
    attempts: integer('attempts').notNull(),
    /** The call whose reply decided the vote (the repair, when there was one). */
    callId: integer('call_id').references(() => calls.id, { onDelete: 'set null' }),
    /** The first call, when a repair followed it. */
    firstCallId: integer('first_call_id').references(() => calls.id, { onDelete: 'set null' }),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.iteration, t.artifactId, t.voterId] })],
);

/** The classification of each position: tier, approval set and the counts behind them. */
export const voteTierResults = sqliteTable(
  'vote_tiers',
  {
    debateId: text('debate_id')
      .notNull()
      .references(() => debates.id, { onDelete: 'cascade' }),
    iteration: integer('iteration').notNull(),
    artifactId: text('artifact_id').notNull(),
    rank: integer('rank').notNull(),
    tier: text('tier', { enum: voteTiers }).notNull(),
    action: text('action', { enum: voteActions }).notNull(),
    authorCluster: text('author_cluster'),
    approvalSetJson: text('approval_set_json', { mode: 'json' }).$type<string[]>().notNull(),
    unratedClustersJson: text('unrated_clusters_json', { mode: 'json' }).$type<string[]>().notNull(),
    dissentingClustersJson: text('dissenting_clusters_json', { mode: 'json' }).$type<string[]>().notNull(),
    agreementRatio: real('agreement_ratio').notNull(),
    fullConsensus: integer('full_consensus', { mode: 'boolean' }).notNull(),
    score: real('score').notNull(),
    spread: real('spread'),
    balancedScore: real('balanced_score'),
    rankScore: real('rank_score').notNull(),
    persuasive: integer('persuasive', { mode: 'boolean' }).notNull(),
    persuadedClustersJson: text('persuaded_clusters_json', { mode: 'json' }).$type<string[]>().notNull(),
    reach: integer('reach').notNull(),
    persuasionKind: text('persuasion_kind', { enum: persuasionKinds }),
    yes: integer('yes').notNull(),
    no: integer('no').notNull(),
    abstentions: integer('abstentions').notNull(),
    clustersJson: text('clusters_json', { mode: 'json' }).$type<ClusterTallyRecord[]>().notNull(),
  },
  (t) => [primaryKey({ columns: [t.debateId, t.iteration, t.artifactId] })],
);
