import type { Preset } from './preset-schema.js';

/** The paper's recommended minimum: with fewer, one vote swings a cluster's rate by a third or more. */
export const RECOMMENDED_CLUSTER_SIZE = 3;

export interface PresetCluster {
  id: string;
  /** Agent ids in preset order. */
  members: string[];
}

export interface VotingPresetCheck {
  /** Problems as `path: message` lines, in the format of the other preset errors. */
  errors: string[];
  warnings: string[];
}

/** Whether the preset runs the cluster vote. */
export function votingEnabled(preset: Preset): boolean {
  return preset.voting !== undefined && preset.voting.enabled;
}

/** The clusters named by `agents[].cluster`, in order of first appearance; agents without one are left out. */
export function presetClusters(preset: Preset): PresetCluster[] {
  const clusters = new Map<string, string[]>();
  for (const agent of preset.agents) {
    if (agent.cluster === undefined) continue;
    const members = clusters.get(agent.cluster) ?? [];
    members.push(agent.id);
    clusters.set(agent.cluster, members);
  }
  return [...clusters].map(([id, members]) => ({ id, members }));
}

/**
 * The checks zod cannot express: every agent in a cluster, at least two clusters,
 * big enough clusters, and per-cluster settings that name real clusters.
 * Ranges (θ, τ, weights) are already checked by the schema.
 */
export function checkVotingPreset(preset: Preset): VotingPresetCheck {
  const errors: string[] = [];
  const warnings: string[] = [];
  const voting = preset.voting;
  if (voting === undefined || !voting.enabled) return { errors, warnings };

  preset.agents.forEach((agent, i) => {
    if (agent.cluster === undefined) {
      errors.push(`agents.${i}.cluster: agent \`${agent.id}\` needs a cluster when voting is on`);
    }
  });
  const clusters = presetClusters(preset);
  const names = new Set(clusters.map((c) => c.id));
  if (clusters.length < 2) {
    const found = clusters.length === 0 ? 'no clusters' : `only the cluster \`${clusters[0]!.id}\``;
    errors.push(`agents: voting compares clusters, and the agents form ${found}; put the agents in at least two clusters`);
  }
  for (const cluster of clusters) {
    const size = cluster.members.length;
    const who = cluster.members.map((m) => `\`${m}\``).join(', ');
    if (size < 2 && !voting.force) {
      errors.push(
        `agents: cluster \`${cluster.id}\` has 1 agent (${who}); a cluster needs at least 2 for its approval rate to mean anything (set voting.force: true to run anyway)`,
      );
    } else if (size < RECOMMENDED_CLUSTER_SIZE) {
      warnings.push(
        `Cluster \`${cluster.id}\` has ${size} agent${size === 1 ? '' : 's'} (${who}); ${RECOMMENDED_CLUSTER_SIZE} or more per cluster are recommended, since with fewer a single vote decides whether the cluster approves.`,
      );
    }
  }
  const known = [...names].map((n) => `\`${n}\``).join(', ') || '(none)';
  for (const field of ['clusterThresholds', 'weights'] as const) {
    for (const key of Object.keys(voting[field] ?? {})) {
      if (!names.has(key)) errors.push(`voting.${field}.${key}: there is no cluster \`${key}\` (clusters: ${known})`);
    }
  }
  if (voting.advocateCluster !== undefined && !names.has(voting.advocateCluster)) {
    errors.push(`voting.advocateCluster: there is no cluster \`${voting.advocateCluster}\` (clusters: ${known})`);
  }
  if (!voting.iterate && voting.maxIterations > 1) {
    warnings.push('voting.maxIterations is set but voting.iterate is false, so the vote runs once.');
  }
  return { errors, warnings };
}
