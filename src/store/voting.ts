import type { RunResult } from 'better-sqlite3';
import { asc, eq, sql } from 'drizzle-orm';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import type { BallotRecord, TierRecord, VoteArtifactRecord } from '../engine/vote-events.js';
import { voteArtifacts, voteTierResults, votes } from './schema-voting.js';
import type { RecordWriter } from './writer.js';

/** A ballot as stored, with the ids of the calls behind it. */
export interface StoredBallot extends BallotRecord {
  /** The call whose reply decided the vote; null if it was not recorded. */
  callId: number | null;
  /** The first call when a repair followed it, else null. */
  firstCallId: number | null;
}

export interface StoredVoteIteration {
  iteration: number;
  artifacts: VoteArtifactRecord[];
  /** In artifact order, then voter order as recorded. */
  ballots: StoredBallot[];
  /** Ranked: Consensus, Polar, Reject, best score first. Empty if the vote stopped before classifying. */
  tiers: TierRecord[];
}

/** Everything the cluster vote recorded for one debate, oldest iteration first. */
export interface StoredVoting {
  iterations: StoredVoteIteration[];
}

/** Either the store's database or a transaction on it. */
type Db = BaseSQLiteDatabase<'sync', RunResult>;

export function recordVoteArtifacts(store: RecordWriter, debateId: string, artifacts: VoteArtifactRecord[]): void {
  if (artifacts.length === 0) return;
  const iteration = artifacts[0]!.iteration;
  store.use(`record the positions put to vote ${iteration} of debate \`${debateId}\``, (db) =>
    db.transaction((tx) => {
      tx.insert(voteArtifacts)
        .values(artifacts.map((a) => ({ debateId, ...a })))
        .run();
    }),
  );
}

export function recordBallot(store: RecordWriter, debateId: string, ballot: BallotRecord, callIds: (number | null)[]): void {
  const known = callIds.filter((id): id is number => id !== null);
  store.use(`record the vote of \`${ballot.voterId}\` on \`${ballot.artifactId}\` for debate \`${debateId}\``, (db) =>
    db
      .insert(votes)
      .values({
        debateId,
        ...ballot,
        callId: known.at(-1) ?? null,
        firstCallId: known.length > 1 ? known[0]! : null,
      })
      .run(),
  );
}

export function recordVoteTiers(store: RecordWriter, debateId: string, tiers: TierRecord[]): void {
  if (tiers.length === 0) return;
  const iteration = tiers[0]!.iteration;
  store.use(`record the tiers of vote ${iteration} for debate \`${debateId}\``, (db) =>
    db.transaction((tx) => {
      tx.insert(voteTierResults)
        .values(
          tiers.map((t) => ({
            debateId,
            iteration: t.iteration,
            artifactId: t.artifactId,
            rank: t.rank,
            tier: t.tier,
            action: t.action,
            authorCluster: t.authorCluster,
            approvalSetJson: t.approvalSet,
            unratedClustersJson: t.unratedClusters,
            dissentingClustersJson: t.dissentingClusters,
            agreementRatio: t.agreementRatio,
            fullConsensus: t.fullConsensus,
            score: t.score,
            spread: t.spread,
            balancedScore: t.balancedScore,
            rankScore: t.rankScore,
            persuasive: t.persuasive,
            persuadedClustersJson: t.persuadedClusters,
            reach: t.reach,
            persuasionKind: t.persuasionKind,
            yes: t.yes,
            no: t.no,
            abstentions: t.abstentions,
            clustersJson: t.clusters,
          })),
        )
        .run();
    }),
  );
}

/** The vote record of a debate, or null when it held no vote. Pass a transaction for a consistent read. */
export function readVoting(db: Db, debateId: string): StoredVoting | null {
  const artifactRows = db
    .select()
    .from(voteArtifacts)
    .where(eq(voteArtifacts.debateId, debateId))
    // rowid: insertion order, which is the order the stage listed them in.
    .orderBy(asc(voteArtifacts.iteration), sql`rowid`)
    .all();
  if (artifactRows.length === 0) return null;
  const ballotRows = db
    .select()
    .from(votes)
    .where(eq(votes.debateId, debateId))
    .orderBy(asc(votes.iteration), sql`rowid`)
    .all();
  const tierRows = db
    .select()
    .from(voteTierResults)
    .where(eq(voteTierResults.debateId, debateId))
    .orderBy(asc(voteTierResults.iteration), asc(voteTierResults.rank))
    .all();
  const numbers = [...new Set(artifactRows.map((r) => r.iteration))].sort((a, b) => a - b);
  return {
    iterations: numbers.map((iteration) => {
      const artifacts: VoteArtifactRecord[] = artifactRows
        .filter((r) => r.iteration === iteration)
        .map((r) => ({
          iteration: r.iteration,
          artifactId: r.artifactId,
          authorId: r.authorId,
          authorCluster: r.authorCluster,
          origin: r.origin,
          sourceRound: r.sourceRound,
          text: r.text,
        }));
      const order = new Map(artifacts.map((a, i) => [a.artifactId, i]));
      const ballots: StoredBallot[] = ballotRows
        .filter((r) => r.iteration === iteration)
        .map((r) => ({
          iteration: r.iteration,
          artifactId: r.artifactId,
          voterId: r.voterId,
          voterCluster: r.voterCluster,
          vote: r.vote,
          reason: r.reason,
          raw: r.raw,
          parseStatus: r.parseStatus,
          error: r.error,
          attempts: r.attempts,
          callId: r.callId,
          firstCallId: r.firstCallId,
        }))
        .sort((a, b) => (order.get(a.artifactId) ?? 0) - (order.get(b.artifactId) ?? 0));
      const tiers: TierRecord[] = tierRows
        .filter((r) => r.iteration === iteration)
        .map((r) => ({
          iteration: r.iteration,
          artifactId: r.artifactId,
          rank: r.rank,
          tier: r.tier,
          action: r.action,
          authorCluster: r.authorCluster,
          approvalSet: r.approvalSetJson,
          unratedClusters: r.unratedClustersJson,
          dissentingClusters: r.dissentingClustersJson,
          agreementRatio: r.agreementRatio,
          fullConsensus: r.fullConsensus,
          score: r.score,
          spread: r.spread,
          balancedScore: r.balancedScore,
          rankScore: r.rankScore,
          persuasive: r.persuasive,
          persuadedClusters: r.persuadedClustersJson,
          reach: r.reach,
          persuasionKind: r.persuasionKind,
          yes: r.yes,
          no: r.no,
          abstentions: r.abstentions,
          clusters: r.clustersJson,
        }));
      return { iteration, artifacts, ballots, tiers };
    }),
  };
}

/** `readVoting` through the store's error mapping. */
export function loadVoting(store: RecordWriter, debateId: string): StoredVoting | null {
  return store.use(`read the votes of debate \`${debateId}\``, (db) => readVoting(db, debateId));
}
