import type { Preset } from '../config/preset-schema.js';
import { votingEnabled } from '../config/voting-preset.js';
import type { DebateListener } from '../engine/events.js';
import type { TierRecord, VoteArtifactRecord } from '../engine/vote-events.js';
import type { VoteCapture } from './conditions.js';

/**
 * Listens to a debate's vote events and names the cluster-approval winner:
 * the top-ranked position of the last vote iteration. When every position
 * was rejected there is no winner, and the condition scores as wrong.
 */
export function captureVote(preset: Preset): { listener: DebateListener; result(): VoteCapture } {
  const artifacts = new Map<number, VoteArtifactRecord[]>();
  const tiers = new Map<number, TierRecord[]>();
  const listener: DebateListener = (event) => {
    if (event.type === 'vote.artifacts') artifacts.set(event.iteration, event.artifacts);
    else if (event.type === 'vote.tiers') tiers.set(event.iteration, event.tiers);
  };
  const result = (): VoteCapture => {
    if (preset.voting === undefined) return { available: false, winnerText: null, winnerAgent: null, note: 'the preset has no voting block' };
    if (!votingEnabled(preset)) return { available: false, winnerText: null, winnerAgent: null, note: 'voting is switched off in the preset' };
    const last = Math.max(-1, ...tiers.keys());
    const ranked = [...(tiers.get(last) ?? [])].sort((a, b) => a.rank - b.rank);
    const top = ranked[0];
    if (top === undefined) return { available: false, winnerText: null, winnerAgent: null, note: 'the vote did not run in this debate' };
    if (top.tier === 'reject') return { available: true, winnerText: null, winnerAgent: null, note: 'every position was rejected' };
    const artifact = (artifacts.get(last) ?? []).find((a) => a.artifactId === top.artifactId);
    return { available: true, winnerText: artifact?.text ?? null, winnerAgent: artifact?.authorId ?? null, note: null };
  };
  return { listener, result };
}
