/**
 * Cluster approval voting (seed 001, the Resonant Consensus Protocol) as pure
 * functions over plain data. The rules, and the cases the paper leaves open,
 * are written out in docs/voting-rules.md; the tests follow that page.
 */

import { reaches, SCORE_EPSILON } from './reaches.js';

export type Vote = 'yes' | 'no' | 'abstain';
export type Tier = 'consensus' | 'polar' | 'reject';

/** A group of agents sharing one perspective. Clusters must not share members. */
export interface Cluster {
  readonly id: string;
  readonly members: readonly string[];
}

/** Anything agents voted on; extra fields travel through to the results untouched. */
export interface Artifact {
  readonly id: string;
  readonly authorId: string;
}

export interface Ballot {
  readonly artifactId: string;
  readonly voterId: string;
  readonly vote: Vote;
}

export interface VotingInput<A extends Artifact = Artifact> {
  readonly clusters: readonly Cluster[];
  readonly artifacts: readonly A[];
  readonly ballots: readonly Ballot[];
}

/** What a preset may set; anything left out takes the paper's default. */
export interface VotingOptions {
  /** θ, the share of a cluster's yes/no votes needed for it to approve; in (0, 1]. */
  readonly theta?: number;
  /** τ, the agreement ratio needed for Consensus; in (0.5, 1]. */
  readonly tau?: number;
  /** θ_i per cluster id, overriding `theta` for that cluster. */
  readonly clusterThresholds?: Readonly<Record<string, number>>;
  /** w_i per cluster id (> 0); clusters left out weigh 1. */
  readonly weights?: Readonly<Record<string, number>>;
  /** Rank Consensus artifacts by Score × (1 − σ) instead of Score. */
  readonly balanceBonus?: boolean;
  /** With exactly two clusters, the one playing C⁺ (advocates); defaults to the first listed. */
  readonly advocateCluster?: string;
}

export interface VotingConfig {
  readonly theta: number;
  readonly tau: number;
  readonly clusterThresholds: Readonly<Record<string, number>>;
  readonly weights: Readonly<Record<string, number>> | null;
  readonly balanceBonus: boolean;
  readonly advocateCluster: string | null;
}

export const votingDefaults = {
  theta: 0.5,
  tau: 0.6,
  balanceBonus: false,
} as const;

export interface ClusterTally {
  readonly clusterId: string;
  readonly yes: number;
  readonly no: number;
  readonly abstain: number;
  /** Non-author members who cast no ballot at all on this artifact. */
  readonly notVoted: number;
  /** r_i = yes / (yes + no); null when nobody in the cluster said yes or no. */
  readonly rate: number | null;
  readonly threshold: number;
  readonly weight: number;
  readonly approves: boolean;
  readonly isAuthorCluster: boolean;
}

export interface Persuasion {
  /** S(ω) minus the author's cluster: the clusters the artifact won over. */
  readonly persuadedClusters: readonly string[];
  readonly reach: number;
  /** Only with exactly two clusters: an advocate's point critics accept, or the reverse. */
  readonly kind: 'accelerator' | 'mitigator' | null;
}

export interface ArtifactVerdict<A extends Artifact = Artifact> {
  readonly artifact: A;
  readonly authorCluster: string | null;
  /** One tally per cluster, in the order the clusters were given. */
  readonly clusters: readonly ClusterTally[];
  /** S(ω): ids of the approving clusters, in cluster order. */
  readonly approvalSet: readonly string[];
  /** Clusters without a rate: the abstaining ones and an author's one-member cluster. */
  readonly unratedClusters: readonly string[];
  /** Clusters with members who could vote but cast no yes or no: counted in ρ's n, not approving. */
  readonly abstainingClusters: readonly string[];
  /** ρ(ω), weighted when weights are set. */
  readonly agreementRatio: number;
  readonly tier: Tier;
  /** Every configured cluster has a rate and approves. */
  readonly fullConsensus: boolean;
  /** Approval among all non-author voters: yes / (yes + no); 0 with no yes/no ballot. */
  readonly score: number;
  /** σ of the cluster rates (population); null when no cluster has a rate. */
  readonly spread: number | null;
  /** Score × (1 − σ) when the balance bonus is on, else null. */
  readonly balancedScore: number | null;
  /** The key this artifact was ranked by within its tier. */
  readonly rankScore: number;
  readonly persuasion: Persuasion | null;
  readonly yes: number;
  readonly no: number;
  readonly abstentions: number;
}

const tierRank: Record<Tier, number> = { consensus: 0, polar: 1, reject: 2 };

/**
 * Checks options against the paper's ranges and fills in defaults. Throws a
 * plain Error naming the offending field. With `clusterIds`, per-cluster keys
 * and `advocateCluster` must name known clusters.
 */
export function resolveVotingConfig(options: VotingOptions = {}, clusterIds?: readonly string[]): VotingConfig {
  const theta = options.theta ?? votingDefaults.theta;
  if (!isFiniteNumber(theta) || theta <= 0 || theta > 1) {
    throw new Error(`\`theta\` must be greater than 0 and at most 1, got ${String(theta)}.`);
  }
  const tau = options.tau ?? votingDefaults.tau;
  if (!isFiniteNumber(tau) || tau <= 0.5 || tau > 1) {
    throw new Error(`\`tau\` must be greater than 0.5 and at most 1, got ${String(tau)}.`);
  }
  const known = clusterIds === undefined ? null : new Set(clusterIds);
  const clusterThresholds = copyRecord(options.clusterThresholds ?? {}, 'clusterThresholds', known, (value) =>
    isFiniteNumber(value) && value > 0 && value <= 1 ? null : 'must be greater than 0 and at most 1',
  );
  const weights =
    options.weights === undefined
      ? null
      : copyRecord(options.weights, 'weights', known, (value) =>
          isFiniteNumber(value) && value > 0 ? null : 'must be a finite number greater than 0',
        );
  const advocateCluster = options.advocateCluster ?? null;
  if (advocateCluster !== null && known !== null && !known.has(advocateCluster)) {
    throw new Error(`\`advocateCluster\` names \`${advocateCluster}\`, which is not a cluster.`);
  }
  return {
    theta,
    tau,
    clusterThresholds,
    weights,
    balanceBonus: options.balanceBonus ?? votingDefaults.balanceBonus,
    advocateCluster,
  };
}

/**
 * Tier of an agreement ratio, tested in the order of the paper's Algorithm 1
 * (Consensus first). Accepts τ = 0.5, which presets may not set: there nothing
 * is Polar and ρ = 0.5 is Consensus.
 */
export function tierOf(rho: number, tau: number): Tier {
  if (!isFiniteNumber(tau) || tau < 0.5 || tau > 1) {
    throw new Error(`\`tau\` must be from 0.5 to 1, got ${String(tau)}.`);
  }
  // Boundaries are inclusive, up to float noise (1 − 0.8 is 0.19999999999999996).
  if (reaches(rho, tau)) return 'consensus';
  if (rho <= 1 - tau + SCORE_EPSILON) return 'reject';
  return 'polar';
}

/**
 * Whether any unweighted ratio k/n can land in the Polar band. When it cannot,
 * the protocol runs in binary mode for this panel: expected, not an error.
 */
export function hasPolarBand(clusterCount: number, tau: number): boolean {
  if (!Number.isInteger(clusterCount) || clusterCount < 1) {
    throw new Error(`\`clusterCount\` must be a whole number from 1 up, got ${String(clusterCount)}.`);
  }
  for (let k = 0; k <= clusterCount; k++) {
    if (tierOf(k / clusterCount, tau) === 'polar') return true;
  }
  return false;
}

/**
 * Classifies every artifact by cross-cluster agreement and returns them ranked:
 * Consensus, Polar, Reject, then by score (balanced score for Consensus when
 * the bonus is on) descending, then by artifact id.
 */
export function classifyArtifacts<A extends Artifact>(
  input: VotingInput<A>,
  options: VotingOptions = {},
): ArtifactVerdict<A>[] {
  const { clusters, artifacts } = input;
  const config = resolveVotingConfig(
    options,
    clusters.map((c) => c.id),
  );
  const clusterOf = indexClusters(clusters);
  const ballots = indexBallots(input.ballots, artifacts);
  const advocate = config.advocateCluster ?? clusters[0]?.id ?? null;

  const verdicts = artifacts.map((artifact) =>
    classifyOne(artifact, clusters, clusterOf, ballots.get(artifact.id) ?? new Map(), config, advocate),
  );
  return verdicts.sort(compareVerdicts);
}

function classifyOne<A extends Artifact>(
  artifact: A,
  clusters: readonly Cluster[],
  clusterOf: ReadonlyMap<string, string>,
  votes: ReadonlyMap<string, Vote>,
  config: VotingConfig,
  advocate: string | null,
): ArtifactVerdict<A> {
  const authorCluster = clusterOf.get(artifact.authorId) ?? null;
  const tallies: ClusterTally[] = clusters.map((cluster) => {
    let yes = 0;
    let no = 0;
    let abstain = 0;
    let notVoted = 0;
    for (const member of cluster.members) {
      if (member === artifact.authorId) continue;
      const vote = votes.get(member);
      if (vote === 'yes') yes++;
      else if (vote === 'no') no++;
      else if (vote === 'abstain') abstain++;
      else notVoted++;
    }
    const rate = yes + no > 0 ? yes / (yes + no) : null;
    const threshold = ownValue(config.clusterThresholds, cluster.id) ?? config.theta;
    const weight = config.weights === null ? 1 : (ownValue(config.weights, cluster.id) ?? 1);
    return {
      clusterId: cluster.id,
      yes,
      no,
      abstain,
      notVoted,
      rate,
      threshold,
      weight,
      // Equation (1) and Algorithm 1 both use ≥.
      approves: rate !== null && reaches(rate, threshold),
      isAuthorCluster: cluster.id === authorCluster,
    };
  });

  const rated = tallies.filter((t) => t.rate !== null);
  const approving = rated.filter((t) => t.approves);
  // n counts every cluster that had someone to vote: a silent one abstains and does not approve.
  // Only a cluster whose sole member is the author, with nobody to vote, is left out.
  const counted = tallies.filter((t, i) => t.rate !== null || hasVoter(clusters[i], artifact.authorId));
  const countedWeight = sum(counted.map((t) => t.weight));
  const agreementRatio = countedWeight > 0 ? sum(approving.map((t) => t.weight)) / countedWeight : 0;
  const tier = tierOf(agreementRatio, config.tau);

  let yes = 0;
  let no = 0;
  let abstentions = 0;
  for (const [voter, vote] of votes) {
    if (voter === artifact.authorId) continue;
    if (vote === 'yes') yes++;
    else if (vote === 'no') no++;
    else abstentions++;
  }
  const score = yes + no > 0 ? yes / (yes + no) : 0;
  const spread = rated.length > 0 ? populationStdDev(rated.map((t) => t.rate ?? 0)) : null;
  const balancedScore = config.balanceBonus ? score * (1 - (spread ?? 0)) : null;
  // Section 5.1 offers the bonus for Consensus artifacts; a Polar one is lopsided by definition.
  const rankScore = balancedScore !== null && tier === 'consensus' ? balancedScore : score;

  const approvalSet = approving.map((t) => t.clusterId);
  return {
    artifact,
    authorCluster,
    clusters: tallies,
    approvalSet,
    unratedClusters: tallies.filter((t) => t.rate === null).map((t) => t.clusterId),
    abstainingClusters: tallies.filter((t, i) => t.rate === null && hasVoter(clusters[i], artifact.authorId)).map((t) => t.clusterId),
    agreementRatio,
    tier,
    fullConsensus: clusters.length > 0 && approving.length === clusters.length,
    score,
    spread,
    balancedScore,
    rankScore,
    persuasion: persuasionOf(tier, authorCluster, approvalSet, clusters.length, advocate),
    yes,
    no,
    abstentions,
  };
}

function hasVoter(cluster: Cluster | undefined, authorId: string): boolean {
  return cluster !== undefined && cluster.members.some((m) => m !== authorId);
}

function persuasionOf(
  tier: Tier,
  authorCluster: string | null,
  approvalSet: readonly string[],
  clusterCount: number,
  advocate: string | null,
): Persuasion | null {
  // An author outside every cluster crossed no line, so nothing counts as persuasion.
  if (tier !== 'consensus' || authorCluster === null) return null;
  const persuadedClusters = approvalSet.filter((id) => id !== authorCluster);
  if (persuadedClusters.length === 0) return null;
  const kind = clusterCount === 2 ? (authorCluster === advocate ? 'accelerator' : 'mitigator') : null;
  return { persuadedClusters, reach: persuadedClusters.length, kind };
}

function compareVerdicts(a: ArtifactVerdict, b: ArtifactVerdict): number {
  const byTier = tierRank[a.tier] - tierRank[b.tier];
  if (byTier !== 0) return byTier;
  if (a.rankScore !== b.rankScore) return b.rankScore - a.rankScore;
  // Code-unit order, not localeCompare: the ranking must not depend on the machine's locale.
  return a.artifact.id < b.artifact.id ? -1 : a.artifact.id > b.artifact.id ? 1 : 0;
}

function indexClusters(clusters: readonly Cluster[]): Map<string, string> {
  if (clusters.length === 0) throw new Error('`clusters` must name at least one cluster.');
  const clusterOf = new Map<string, string>();
  const seen = new Set<string>();
  for (const cluster of clusters) {
    if (seen.has(cluster.id)) throw new Error(`\`clusters\` lists \`${cluster.id}\` twice.`);
    seen.add(cluster.id);
    if (cluster.members.length === 0) throw new Error(`\`clusters.${cluster.id}\` has no members.`);
    for (const member of cluster.members) {
      const other = clusterOf.get(member);
      if (other !== undefined && other !== cluster.id) {
        throw new Error(`Agent \`${member}\` is in clusters \`${other}\` and \`${cluster.id}\`; clusters must not overlap.`);
      }
      clusterOf.set(member, cluster.id);
    }
  }
  return clusterOf;
}

/** artifact id → voter id → vote; a later ballot from the same voter replaces an earlier one. */
function indexBallots(ballots: readonly Ballot[], artifacts: readonly Artifact[]): Map<string, Map<string, Vote>> {
  const byArtifact = new Map<string, Map<string, Vote>>();
  for (const artifact of artifacts) {
    if (byArtifact.has(artifact.id)) throw new Error(`\`artifacts\` lists \`${artifact.id}\` twice.`);
    byArtifact.set(artifact.id, new Map());
  }
  for (const ballot of ballots) {
    const votes = byArtifact.get(ballot.artifactId);
    if (votes === undefined) {
      throw new Error(`A ballot from \`${ballot.voterId}\` names \`${ballot.artifactId}\`, which is not an artifact.`);
    }
    if (ballot.vote !== 'yes' && ballot.vote !== 'no' && ballot.vote !== 'abstain') {
      throw new Error(`A ballot from \`${ballot.voterId}\` has vote \`${String(ballot.vote)}\`; use yes, no or abstain.`);
    }
    votes.set(ballot.voterId, ballot.vote);
  }
  return byArtifact;
}

function copyRecord(
  record: Readonly<Record<string, number>>,
  field: string,
  known: ReadonlySet<string> | null,
  problem: (value: number) => string | null,
): Record<string, number> {
  const copy: Record<string, number> = Object.create(null) as Record<string, number>;
  for (const [key, value] of Object.entries(record)) {
    if (known !== null && !known.has(key)) {
      throw new Error(`\`${field}.${key}\` names a cluster that does not exist.`);
    }
    const why = problem(value);
    if (why !== null) throw new Error(`\`${field}.${key}\` ${why}, got ${String(value)}.`);
    copy[key] = value;
  }
  return copy;
}

// Cluster ids come from users: `constructor` must not find Object.prototype's.
function ownValue(record: Readonly<Record<string, number>>, key: string): number | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function sum(values: readonly number[]): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

function populationStdDev(values: readonly number[]): number {
  const mean = sum(values) / values.length;
  return Math.sqrt(sum(values.map((v) => (v - mean) ** 2)) / values.length);
}

// ---------------------------------------------------------------------------
// Contextual Superposition: what the synthesizer is handed.

export type SuperpositionAction = 'emphasize' | 'ground' | 'contextualize';

export interface SuperpositionEntry<A extends Artifact = Artifact> {
  readonly artifact: A;
  readonly action: SuperpositionAction;
  readonly tier: 'consensus' | 'polar';
  readonly authorCluster: string | null;
  readonly approvalSet: readonly string[];
  readonly agreementRatio: number;
  readonly score: number;
  readonly fullConsensus: boolean;
  readonly isPersuasive: boolean;
  /** Polar: the clusters whose view this is ("from the critics' side..."); empty for Consensus. */
  readonly attribution: readonly string[];
  /** Consensus short of full: rated clusters that did not approve, worth a mention. */
  readonly dissentingClusters: readonly string[];
}

export interface ContextualSuperposition<A extends Artifact = Artifact> {
  /** Consensus artifacts, best first: the answer rests on these. Persuasive ones carry `emphasize`. */
  readonly ground: readonly SuperpositionEntry<A>[];
  /** Polar artifacts, best first: usable only with attribution. */
  readonly contextualize: readonly SuperpositionEntry<A>[];
  /** Ids of Reject artifacts: kept for the record, never shown to the synthesizer. */
  readonly excluded: readonly string[];
}

/**
 * Turns ranked verdicts into the synthesizer's view: Consensus grounds the
 * answer (persuasive ones emphasised), Polar is kept with attribution to the
 * approving clusters, Reject is left out. Keeps the verdicts' order.
 */
export function contextualSuperposition<A extends Artifact>(
  verdicts: readonly ArtifactVerdict<A>[],
): ContextualSuperposition<A> {
  const ground: SuperpositionEntry<A>[] = [];
  const contextualize: SuperpositionEntry<A>[] = [];
  const excluded: string[] = [];
  for (const verdict of verdicts) {
    if (verdict.tier === 'reject') {
      excluded.push(verdict.artifact.id);
      continue;
    }
    const isPersuasive = verdict.persuasion !== null;
    const consensus = verdict.tier === 'consensus';
    const entry: SuperpositionEntry<A> = {
      artifact: verdict.artifact,
      action: consensus ? (isPersuasive ? 'emphasize' : 'ground') : 'contextualize',
      tier: verdict.tier,
      authorCluster: verdict.authorCluster,
      approvalSet: verdict.approvalSet,
      agreementRatio: verdict.agreementRatio,
      score: verdict.score,
      fullConsensus: verdict.fullConsensus,
      isPersuasive,
      attribution: consensus ? [] : verdict.approvalSet,
      dissentingClusters: consensus
        ? verdict.clusters.filter((t) => t.rate !== null && !t.approves).map((t) => t.clusterId)
        : [],
    };
    (consensus ? ground : contextualize).push(entry);
  }
  return { ground, contextualize, excluded };
}
