import type { BallotRecord, TierRecord, VoteArtifactRecord } from '../engine/vote-events.js';
import type { TableReader } from './rows.js';
import type { voteArtifacts, voteTierResults, votes } from './schema-voting.js';

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

/** The vote record of a debate, or null when it held no vote. Read it within a transaction for a consistent snapshot. */
export function readVoting(read: TableReader): StoredVoting | null {
  // rowid: insertion order, which is the order the stage listed them in.
  const artifactRows = read<typeof voteArtifacts.$inferSelect>('vote_artifacts', 'iteration, rowid');
  if (artifactRows.length === 0) return null;
  const ballotRows = read<typeof votes.$inferSelect>('votes', 'iteration, rowid');
  const tierRows = read<typeof voteTierResults.$inferSelect>('vote_tiers', 'iteration, rank');
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

