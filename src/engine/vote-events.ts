import type { SuperpositionAction, Tier, Vote } from '../protocol/voting.js';
import type { CallRecord } from './call-record.js';

/**
 * What the cluster vote reports while it runs (see src/engine/stages/voting.ts).
 * Iteration 0 votes on the debate's final positions; each refinement adds one.
 */

/** A position put to the vote: an agent's final position, or its refined one in a later iteration. */
export interface VoteArtifactRecord {
  iteration: number;
  /** The author's agent id: each agent contributes one artifact per iteration. */
  artifactId: string;
  authorId: string;
  authorCluster: string | null;
  /** `final`: the last usable debate position; `refined`: rewritten after a vote; `kept`: the refinement failed, the earlier text stays. */
  origin: 'final' | 'refined' | 'kept';
  /** The debate round the text comes from; null for refined text. */
  sourceRound: number | null;
  text: string;
}

/** How the reply to a vote request turned out: `invalid` and `failed` count as abstentions. */
export type VoteParseStatus = 'ok' | 'invalid' | 'failed';

export interface BallotRecord {
  iteration: number;
  artifactId: string;
  voterId: string;
  voterCluster: string | null;
  vote: Vote;
  /** The voter's one-line reason, when its reply parsed. */
  reason: string | null;
  /** The last reply received (after the repair, if there was one); empty when the call failed. */
  raw: string;
  parseStatus: VoteParseStatus;
  error: string | null;
  /** Model calls made for this vote: 1, or 2 with the repair. */
  attempts: number;
}

/** One row of the classification: the paper's superposition object plus the counts behind it. */
export interface TierRecord {
  iteration: number;
  artifactId: string;
  /** 1-based position in the ranked list (tier, then score). */
  rank: number;
  tier: Tier;
  /** What the synthesizer is told to do with it; `exclude` for Reject. */
  action: SuperpositionAction | 'exclude';
  authorCluster: string | null;
  approvalSet: string[];
  unratedClusters: string[];
  /** Consensus short of full: rated clusters that did not approve. */
  dissentingClusters: string[];
  agreementRatio: number;
  fullConsensus: boolean;
  score: number;
  spread: number | null;
  balancedScore: number | null;
  rankScore: number;
  persuasive: boolean;
  persuadedClusters: string[];
  reach: number;
  persuasionKind: 'accelerator' | 'mitigator' | null;
  yes: number;
  no: number;
  abstentions: number;
  clusters: ClusterTallyRecord[];
}

export interface ClusterTallyRecord {
  clusterId: string;
  yes: number;
  no: number;
  abstain: number;
  notVoted: number;
  rate: number | null;
  threshold: number;
  weight: number;
  approves: boolean;
}

export type VotingEvent =
  | { type: 'vote.artifacts'; iteration: number; artifacts: VoteArtifactRecord[]; at: number }
  /** `calls` are the records of the model calls behind the vote, so the recorder can link them. */
  | { type: 'vote.cast'; ballot: BallotRecord; calls: CallRecord[]; at: number }
  | { type: 'vote.tiers'; iteration: number; tiers: TierRecord[]; at: number };
