import type { AgentInfo, DebateEvent } from '../engine/events.js';
import type { TierRecord, VoteArtifactRecord } from '../engine/vote-events.js';
import type { Tier, Vote } from '../protocol/voting.js';
import type { StoredDebate } from '../store/store.js';
import type { StoredBallot, StoredVoteIteration, StoredVoting } from '../store/voting.js';
import type { Paint } from './style.js';
import { plural } from '../plural.js';

/**
 * How the cluster vote shows: on the card, in `show` (Markdown), in the JSON
 * document and in replays. Everything reads the stored record; nothing here votes.
 */

const TIER_TITLE: Record<Tier, string> = { consensus: 'CONSENSUS', polar: 'POLAR', reject: 'REJECT' };
const CELL: Record<Vote, string> = { yes: 'Y', no: 'N', abstain: 'A' };

interface Matrix {
  voters: string[];
  artifacts: string[];
  /** votes[voter][artifact]: null where no ballot exists (the voter's own position, or a vote never cast). */
  votes: (Vote | null)[][];
}

function matrixOf(debaters: readonly string[], iteration: Pick<StoredVoteIteration, 'artifacts' | 'ballots'>): Matrix {
  const artifacts = iteration.artifacts.map((a) => a.artifactId);
  const cast = new Map(iteration.ballots.map((b) => [`${b.voterId}\u0000${b.artifactId}`, b.vote]));
  return {
    voters: [...debaters],
    artifacts,
    votes: debaters.map((voter) => artifacts.map((artifact) => cast.get(`${voter}\u0000${artifact}`) ?? null)),
  };
}

/** Rows are voters, columns are positions numbered #1…; `·` marks a voter's own position. */
function matrixLines(matrix: Matrix, clusterOf: ReadonlyMap<string, string | null>, authorOf: ReadonlyMap<string, string>): string[] {
  const label = (voter: string): string => {
    const cluster = clusterOf.get(voter);
    return cluster ? `${voter} (${cluster})` : voter;
  };
  const width = Math.max(6, ...matrix.voters.map((v) => label(v).length));
  const header = `${''.padEnd(width)}  ${matrix.artifacts.map((_, i) => `#${i + 1}`.padStart(3)).join(' ')}`;
  const rows = matrix.voters.map((voter, r) => {
    const cells = matrix.artifacts.map((artifact, c) => {
      const vote = matrix.votes[r]![c] ?? null;
      return (vote ? CELL[vote] : authorOf.get(artifact) === voter ? '·' : ' ').padStart(3);
    });
    return `${label(voter).padEnd(width)}  ${cells.join(' ')}`.trimEnd();
  });
  const legend = matrix.artifacts.map((a, i) => `#${i + 1} ${authorOf.get(a) ?? a}`).join(', ');
  return [header.trimEnd(), ...rows, `positions: ${legend}; Y yes, N no, A abstained, · own position`];
}

function clustersOf(agents: readonly AgentInfo[]): { id: string; members: string[] }[] {
  const clusters = new Map<string, string[]>();
  for (const a of agents) {
    if (a.role !== 'debater' || a.cluster === null) continue;
    clusters.set(a.cluster, [...(clusters.get(a.cluster) ?? []), a.id]);
  }
  return [...clusters].map(([id, members]) => ({ id, members }));
}

function approvalText(t: TierRecord): string {
  return t.approvalSet.length > 0 ? `approved by ${t.approvalSet.join(', ')}` : 'approved by no cluster';
}

function persuasionText(t: TierRecord): string | null {
  if (!t.persuasive) return null;
  const kind = t.persuasionKind ? `${t.persuasionKind}, ` : '';
  return `${kind}won over ${t.persuadedClusters.join(', ')}`;
}

function tierSummary(t: TierRecord, authorOf: ReadonlyMap<string, string>): string {
  const parts = [
    `${authorOf.get(t.artifactId) ?? t.artifactId}${t.authorCluster ? ` (${t.authorCluster})` : ''}`,
    approvalText(t),
    `ρ ${t.agreementRatio.toFixed(2)}`,
    `score ${t.score.toFixed(2)}${t.balancedScore !== null ? `, balanced ${t.balancedScore.toFixed(2)}` : ''}`,
  ];
  if (t.fullConsensus) parts.push('full consensus');
  const persuasion = persuasionText(t);
  if (persuasion) parts.push(persuasion);
  if (t.abstentions > 0) parts.push(`${t.abstentions} abstained`);
  const abstaining = abstainingClusters(t);
  if (abstaining.length > 0) parts.push(`${abstaining.join(', ')} abstained (counted in ρ, not approving)`);
  const voterless = t.unratedClusters.filter((id) => !abstaining.includes(id));
  if (voterless.length > 0) parts.push(`no voter but the author in ${voterless.join(', ')}`);
  return parts.join(' · ');
}

/**
 * Clusters that had members able to vote but cast no yes or no: they abstained, count in
 * ρ's n and do not approve. A cluster whose only member is the author has nobody to vote.
 */
export function abstainingClusters(t: TierRecord): string[] {
  return t.clusters.filter((c) => c.rate === null && c.yes + c.no + c.abstain + c.notVoted > 0).map((c) => c.clusterId);
}

function lastIteration(voting: StoredVoting): StoredVoteIteration | null {
  for (let i = voting.iterations.length - 1; i >= 0; i--) {
    if (voting.iterations[i]!.tiers.length > 0) return voting.iterations[i]!;
  }
  return voting.iterations.at(-1) ?? null;
}

function abstentionCount(ballots: readonly StoredBallot[]): number {
  return ballots.filter((b) => b.vote === 'abstain').length;
}

function settingsText(d: StoredDebate): string {
  const v = d.preset.voting;
  if (!v) return '';
  const parts = [`θ ${v.theta}`, `τ ${v.tau}`];
  if (v.clusterThresholds) parts.push(`θ_i ${Object.entries(v.clusterThresholds).map(([k, x]) => `${k} ${x}`).join(', ')}`);
  if (v.weights) parts.push(`weights ${Object.entries(v.weights).map(([k, x]) => `${k} ${x}`).join(', ')}`);
  if (v.balanceBonus) parts.push('balance bonus');
  return parts.join(' · ');
}

/** The card's section: the final vote's positions by tier, with who approved them. */
export function votingCardLines(d: StoredDebate, paint: Paint, width: number, wrap: (text: string, width: number) => string[]): string[] {
  const voting = d.voting;
  if (!voting) return [];
  const final = lastIteration(voting);
  if (!final) return [];
  const lines: string[] = [''];
  const clusters = clustersOf(d.agents).map((c) => `${c.id}: ${c.members.join(', ')}`).join(' | ');
  const refinements = voting.iterations.length - 1;
  lines.push(paint('bold', `CLUSTER VOTE${refinements > 0 ? ` (after ${refinements} refinement${refinements === 1 ? '' : 's'})` : ''}`));
  lines.push(paint('dim', `  ${clusters} · ${settingsText(d)}`));
  if (final.tiers.length === 0) {
    lines.push(paint('yellow', '  The vote was not classified (the debate stopped during it).'));
    return lines;
  }
  const textOf = new Map(final.artifacts.map((a) => [a.artifactId, a.text]));
  const authorOf = new Map(final.artifacts.map((a) => [a.artifactId, a.authorId]));
  for (const tier of ['consensus', 'polar', 'reject'] as const) {
    const rows = final.tiers.filter((t) => t.tier === tier);
    if (rows.length === 0) continue;
    lines.push(`  ${paint(tier === 'consensus' ? 'green' : tier === 'polar' ? 'yellow' : 'red', TIER_TITLE[tier])}`);
    for (const t of rows) {
      const mark = t.persuasive ? '★' : '-';
      lines.push(...wrap(tierSummary(t, authorOf), width - 6).map((l, i) => (i === 0 ? `    ${mark} ${l}` : `      ${l}`)));
      const text = oneLine(textOf.get(t.artifactId) ?? '', 320);
      if (tier !== 'reject') lines.push(...wrap(text, width - 6).map((l) => `      ${paint('dim', l)}`));
    }
  }
  const abstained = abstentionCount(final.ballots);
  lines.push(paint('dim', `  ${plural(final.ballots.length, 'vote')}, ${abstained} abstention${abstained === 1 ? '' : 's'}; ★ persuasive (approved by a cluster other than the author's)`));
  return lines;
}

/** The `show` section: settings, and per iteration the positions, the vote matrix and the tiers. */
export function votingMarkdown(d: StoredDebate): string[] {
  const voting = d.voting;
  if (!voting) return [];
  const out: string[] = ['## Cluster vote', ''];
  const clusterOf = new Map(d.agents.map((a) => [a.id, a.cluster]));
  const debaters = d.agents.filter((a) => a.role === 'debater').map((a) => a.id);
  out.push(`- Clusters: ${clustersOf(d.agents).map((c) => `**${c.id}** (${c.members.join(', ')})`).join(', ')}`, `- Settings: ${settingsText(d)}`, '');
  for (const it of voting.iterations) {
    const authorOf = new Map(it.artifacts.map((a) => [a.artifactId, a.authorId]));
    out.push(`### ${it.iteration === 0 ? 'Vote on the final positions' : `Vote after refinement ${it.iteration}`}`, '');
    out.push('```', ...matrixLines(matrixOf(debaters, it), clusterOf, authorOf), '```', '');
    const textOf = new Map(it.artifacts.map((a) => [a.artifactId, a]));
    for (const t of it.tiers) {
      const a = textOf.get(t.artifactId);
      out.push(`${t.rank}. **${TIER_TITLE[t.tier]}** (${t.action}) · ${tierSummary(t, authorOf)}`);
      if (a) out.push(`   > ${oneLine(a.text, 600)}${a.origin === 'kept' ? ' _(refinement failed; earlier text kept)_' : ''}`);
    }
    if (it.tiers.length === 0) out.push('_Not classified: the debate stopped during the vote._');
    const abstentions = it.ballots.filter((b) => b.vote === 'abstain');
    out.push('', `${plural(it.ballots.length, 'vote')}, ${abstentions.length} abstention${abstentions.length === 1 ? '' : 's'}.`);
    for (const b of abstentions) out.push(`- ${b.voterId} on ${authorOf.get(b.artifactId) ?? b.artifactId}: ${b.parseStatus}${b.error ? ` (${firstLine(b.error)})` : ''}`);
    out.push('');
  }
  return out;
}

/** The `voting` field of the JSON document; null when the debate held no vote. */
export function votingDocument(d: StoredDebate): Record<string, unknown> | null {
  const voting = d.voting;
  if (!voting) return null;
  const debaters = d.agents.filter((a) => a.role === 'debater').map((a) => a.id);
  const iterations = voting.iterations.map((it) => ({
    iteration: it.iteration,
    artifacts: it.artifacts,
    matrix: matrixOf(debaters, it),
    votes: it.ballots,
    tiers: it.tiers.map((t) => ({ ...t, abstainingClusters: abstainingClusters(t) })),
    abstentions: abstentionCount(it.ballots),
  }));
  const final = lastIteration(voting);
  const textOf = new Map(final?.artifacts.map((a) => [a.artifactId, a]) ?? []);
  const entry = (t: TierRecord) => ({
    artifact: textOf.get(t.artifactId) ?? null,
    approvalSet: t.approvalSet,
    abstainingClusters: abstainingClusters(t),
    agreementRatio: t.agreementRatio,
    tier: t.tier,
    action: t.action,
    score: t.score,
    authorCluster: t.authorCluster,
    isPersuasive: t.persuasive,
    fullConsensus: t.fullConsensus,
  });
  return {
    settings: d.preset.voting ?? null,
    clusters: clustersOf(d.agents),
    iterations,
    superposition: final
      ? {
          iteration: final.iteration,
          ground: final.tiers.filter((t) => t.tier === 'consensus').map(entry),
          contextualize: final.tiers.filter((t) => t.tier === 'polar').map(entry),
          excluded: final.tiers.filter((t) => t.tier === 'reject').map((t) => t.artifactId),
        }
      : null,
  };
}

/** The vote's events as they were emitted, for replay (they go between the exit decision and the synthesis). */
export function votingEvents(d: StoredDebate): DebateEvent[] {
  const voting = d.voting;
  if (!voting) return [];
  const at = d.finishedAt ?? d.createdAt;
  const events: DebateEvent[] = [];
  for (const it of voting.iterations) {
    events.push({ type: 'vote.artifacts', iteration: it.iteration, artifacts: it.artifacts, at });
    for (const ballot of it.ballots) {
      const calls = d.calls.filter((c) => c.id === ballot.firstCallId || c.id === ballot.callId);
      events.push({ type: 'vote.cast', ballot, calls, at });
    }
    if (it.tiers.length > 0) events.push({ type: 'vote.tiers', iteration: it.iteration, tiers: it.tiers, at });
  }
  return events;
}

/**
 * Lines the live view prints for vote events, live and in replays: a header per
 * iteration, one line per abstention, then the matrix and the tiers.
 */
export function votingLiveView(paint: Paint): (event: DebateEvent) => string[] {
  let agents: AgentInfo[] = [];
  let artifacts: VoteArtifactRecord[] = [];
  let ballots: StoredBallot[] = [];
  return (event) => {
    switch (event.type) {
      case 'debate.started':
        agents = event.agents;
        return [];
      case 'vote.artifacts': {
        artifacts = event.artifacts;
        ballots = [];
        const voters = agents.filter((a) => a.role === 'debater').length;
        const expected = artifacts.length * Math.max(0, voters - 1);
        const title = event.iteration === 0 ? 'Cluster vote on the final positions' : `Cluster vote after refinement ${event.iteration}`;
        const refined = event.artifacts.filter((a) => a.origin === 'kept').map((a) => a.authorId);
        return [
          paint('bold', `\n${title}`) + paint('dim', ` · ${plural(artifacts.length, 'position')}, ${plural(expected, 'vote')}`),
          ...(refined.length ? [paint('yellow', `  kept the earlier text of ${refined.join(', ')}: their refinement failed`)] : []),
        ];
      }
      case 'vote.cast': {
        ballots.push({ ...event.ballot, callId: null, firstCallId: null });
        const b = event.ballot;
        if (b.vote !== 'abstain') return [];
        return [paint('yellow', `  ! ${b.voterId} abstains on ${b.artifactId}'s position (${b.parseStatus}${b.error ? `: ${firstLine(b.error)}` : ''})`)];
      }
      case 'vote.tiers': {
        const clusterOf = new Map(agents.map((a) => [a.id, a.cluster]));
        const authorOf = new Map(artifacts.map((a) => [a.artifactId, a.authorId]));
        const debaters = agents.filter((a) => a.role === 'debater').map((a) => a.id);
        const lines = matrixLines(matrixOf(debaters, { artifacts, ballots }), clusterOf, authorOf).map((l) => `  ${l}`);
        for (const t of event.tiers) {
          const colour = t.tier === 'consensus' ? 'green' : t.tier === 'polar' ? 'yellow' : 'red';
          lines.push(`  ${paint(colour, TIER_TITLE[t.tier].padEnd(9))} ${tierSummary(t, authorOf)}`);
        }
        const abstained = abstentionCount(ballots);
        if (abstained > 0) lines.push(paint('yellow', `  ${abstained} abstention${abstained === 1 ? '' : 's'}: counted, left out of the rates`));
        return lines;
      }
      default:
        return [];
    }
  };
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function firstLine(text: string): string {
  return text.split('\n').map((l) => l.trim()).filter(Boolean).slice(0, 2).join(' ');
}
