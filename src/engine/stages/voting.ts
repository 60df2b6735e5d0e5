import type { AgentSpec, VotingSpec } from '../../config/preset-schema.js';
import { presetClusters, votingEnabled } from '../../config/voting-preset.js';
import type { TranscriptRound } from '../../protocol/prompts.js';
import { refineMessages, refineSchema, superpositionSection, voteMessages, voteSchema } from '../../protocol/vote-prompts.js';
import {
  type ArtifactVerdict,
  type Ballot,
  type Cluster,
  classifyArtifacts,
  contextualSuperposition,
  resolveVotingConfig,
  type VotingOptions,
} from '../../protocol/voting.js';
import type { CallRecord } from '../events.js';
import type { ExtraStage, StageContext, StageOutput } from '../stage.js';
import type { BallotRecord, TierRecord, VoteArtifactRecord } from '../vote-events.js';

/** A vote reply is a sentence and a word; this leaves room for a wordy one. */
const VOTE_MAX_TOKENS = 256;

interface Artifact extends VoteArtifactRecord {
  id: string;
}

/**
 * Cluster approval voting (seed 001): every agent votes YES or NO on every other
 * agent's final position, the positions are classified by which clusters approve
 * them, and the synthesizer gets the result as a contextual superposition.
 */
export function votingStage(): ExtraStage {
  return {
    name: 'cluster vote',
    enabled: votingEnabled,
    run: runVoting,
  };
}

async function runVoting(ctx: StageContext): Promise<StageOutput> {
  const preset = ctx.preset;
  const spec = preset.voting;
  if (spec === undefined) return {};
  const clusters: Cluster[] = presetClusters(preset);
  const options = votingOptions(spec);
  const config = resolveVotingConfig(options, clusters.map((c) => c.id));
  const clusterOf = new Map(preset.agents.map((a) => [a.id, a.cluster ?? null]));
  const round = ctx.rounds.at(-1)?.round ?? 0;
  const maxIteration = spec.iterate ? spec.maxIterations : 0;

  let artifacts = finalPositions(ctx.rounds, clusterOf);
  let verdicts: ArtifactVerdict<Artifact>[] = [];
  for (let iteration = 0; ; iteration++) {
    ctx.emit({ type: 'vote.artifacts', iteration, artifacts: artifacts.map(toRecord), at: ctx.now() });
    const ballots = await castVotes(ctx, preset.agents, artifacts, clusterOf, iteration, round);
    if (ctx.signal?.aborted) return {};
    verdicts = classifyArtifacts({ clusters, artifacts, ballots }, options);
    ctx.emit({ type: 'vote.tiers', iteration, tiers: tierRecords(verdicts, iteration), at: ctx.now() });

    if (iteration >= maxIteration) break;
    const ground = verdicts.filter((v) => v.tier === 'consensus').map((v) => v.artifact.text);
    if (ground.length === 0) {
      ctx.emit({ type: 'warning', message: 'cluster vote: no position won Consensus, so there is no common ground to refine on; keeping this vote.', at: ctx.now() });
      break;
    }
    if (ground.length === artifacts.length) break;
    artifacts = await refine(ctx, preset.agents, artifacts, ground, iteration + 1, round);
    if (ctx.signal?.aborted) return {};
  }

  const members = clusters.map((c) => ({ ...c, threshold: config.clusterThresholds[c.id] ?? config.theta }));
  return { synthesisContext: [superpositionSection(contextualSuperposition(verdicts), members)] };
}

function votingOptions(spec: VotingSpec): VotingOptions {
  return {
    theta: spec.theta,
    tau: spec.tau,
    balanceBonus: spec.balanceBonus,
    ...(spec.clusterThresholds ? { clusterThresholds: spec.clusterThresholds } : {}),
    ...(spec.weights ? { weights: spec.weights } : {}),
    ...(spec.advocateCluster ? { advocateCluster: spec.advocateCluster } : {}),
  };
}

/**
 * Each agent's last usable position of its own: its final round's, or an earlier one if that
 * round failed for it. A seat the orchestrator filled with a fallback is not the agent's
 * position, so it is never put to the vote under the agent's name.
 */
function finalPositions(rounds: readonly TranscriptRound[], clusterOf: ReadonlyMap<string, string | null>): Artifact[] {
  const artifacts: Artifact[] = [];
  for (const [agentId, cluster] of clusterOf) {
    for (let i = rounds.length - 1; i >= 0; i--) {
      const round = rounds[i]!;
      const turn = round.turns.find((t) => t.agentId === agentId && t.status === 'ok' && t.position && !t.fallback);
      if (!turn?.position) continue;
      artifacts.push({
        id: agentId,
        iteration: 0,
        artifactId: agentId,
        authorId: agentId,
        authorCluster: cluster,
        origin: 'final',
        sourceRound: round.round,
        text: turn.position,
      });
      break;
    }
  }
  return artifacts;
}

async function castVotes(
  ctx: StageContext,
  agents: readonly AgentSpec[],
  artifacts: readonly Artifact[],
  clusterOf: ReadonlyMap<string, string | null>,
  iteration: number,
  round: number,
): Promise<Ballot[]> {
  const ownText = new Map(artifacts.map((a) => [a.authorId, a.text]));
  const jobs = artifacts.flatMap((artifact) =>
    agents
      .filter((voter) => voter.id !== artifact.authorId)
      .map(async (voter): Promise<Ballot | null> => {
        const calls: CallRecord[] = [];
        const outcome = await ctx.call({
          stage: 'vote',
          round,
          agentId: voter.id,
          model: voter.model,
          messages: voteMessages(ctx.question, voter.persona, ownText.get(voter.id) ?? null, artifact.text),
          options: voter.options,
          schema: voteSchema,
          maxTokens: VOTE_MAX_TOKENS,
          // Votes are essential like the synthesis: a tier must never rest on ballots the budget skipped.
          priority: 'essential',
          onCall: (call) => calls.push(call),
        });
        // A vote cut short by Ctrl-C is no opinion at all: leave it out rather than record an abstention.
        if (outcome.status === 'failed' && outcome.code === 'CALL_ABORTED') return null;
        const last = calls.at(-1);
        const ballot: BallotRecord = {
          iteration,
          artifactId: artifact.artifactId,
          voterId: voter.id,
          voterCluster: clusterOf.get(voter.id) ?? null,
          vote: outcome.status === 'ok' ? (outcome.value.vote === 'YES' ? 'yes' : 'no') : 'abstain',
          reason: outcome.status === 'ok' ? (outcome.value.reason?.trim() || null) : null,
          raw: last?.raw ?? '',
          parseStatus: outcome.status === 'skipped' ? 'failed' : outcome.status,
          error: outcome.status === 'ok' ? null : outcome.error,
          attempts: calls.length,
        };
        ctx.emit({ type: 'vote.cast', ballot, calls, at: ctx.now() });
        return { artifactId: ballot.artifactId, voterId: ballot.voterId, vote: ballot.vote };
      }),
  );
  return (await Promise.all(jobs)).filter((b): b is Ballot => b !== null);
}

/** A refinement round: every author rewrites its position with the Consensus positions as common ground. */
async function refine(
  ctx: StageContext,
  agents: readonly AgentSpec[],
  artifacts: readonly Artifact[],
  ground: readonly string[],
  iteration: number,
  round: number,
): Promise<Artifact[]> {
  const byAuthor = new Map(agents.map((a) => [a.id, a]));
  return Promise.all(
    artifacts.map(async (artifact): Promise<Artifact> => {
      const agent = byAuthor.get(artifact.authorId)!;
      const outcome = await ctx.call({
        stage: 'refine',
        round,
        agentId: agent.id,
        model: agent.model,
        messages: refineMessages(ctx.question, agent.persona, artifact.text, ground),
        options: agent.options,
        schema: refineSchema,
      });
      if (outcome.status === 'ok') {
        return { ...artifact, iteration, origin: 'refined', sourceRound: null, text: outcome.value.refinedPosition };
      }
      return { ...artifact, iteration, origin: 'kept' };
    }),
  );
}

function toRecord(a: Artifact): VoteArtifactRecord {
  const { id: _id, ...record } = a;
  return record;
}

function tierRecords(verdicts: readonly ArtifactVerdict<Artifact>[], iteration: number): TierRecord[] {
  const superposition = contextualSuperposition(verdicts);
  const entries = new Map([...superposition.ground, ...superposition.contextualize].map((e) => [e.artifact.id, e]));
  return verdicts.map((v, i) => {
    const entry = entries.get(v.artifact.id);
    return {
      iteration,
      artifactId: v.artifact.id,
      rank: i + 1,
      tier: v.tier,
      action: entry?.action ?? 'exclude',
      authorCluster: v.authorCluster,
      approvalSet: [...v.approvalSet],
      unratedClusters: [...v.unratedClusters],
      dissentingClusters: entry ? [...entry.dissentingClusters] : [],
      agreementRatio: v.agreementRatio,
      fullConsensus: v.fullConsensus,
      score: v.score,
      spread: v.spread,
      balancedScore: v.balancedScore,
      rankScore: v.rankScore,
      persuasive: v.persuasion !== null,
      persuadedClusters: v.persuasion ? [...v.persuasion.persuadedClusters] : [],
      reach: v.persuasion?.reach ?? 0,
      persuasionKind: v.persuasion?.kind ?? null,
      yes: v.yes,
      no: v.no,
      abstentions: v.abstentions,
      clusters: v.clusters.map((c) => ({
        clusterId: c.clusterId,
        yes: c.yes,
        no: c.no,
        abstain: c.abstain,
        notVoted: c.notVoted,
        rate: c.rate,
        threshold: c.threshold,
        weight: c.weight,
        approves: c.approves,
      })),
    };
  });
}
