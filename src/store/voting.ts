import type { BallotRecord, TierRecord, VoteArtifactRecord } from '../engine/vote-events.js';
import { type StoredVoting, readVoting } from './voting-read.js';
import { voteArtifacts, voteTierResults, votes } from './schema-voting.js';
import { tableReader } from './rows.js';
import type { RecordWriter } from './writer.js';

export type { StoredBallot, StoredVoteIteration, StoredVoting } from './voting-read.js';


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

/** `readVoting` through the store's error mapping. */
export function loadVoting(store: RecordWriter, debateId: string): StoredVoting | null {
  return store.use(`read the votes of debate \`${debateId}\``, (_db, sqlite) => readVoting(tableReader((source) => sqlite.prepare(source), debateId)));
}
