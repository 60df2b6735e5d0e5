import type { ModelDetails, TagModel } from '../backend/types.js';
import { type AgentFamily, familyKey } from '../protocol/stances.js';
import { plural } from '../plural.js';

/**
 * Each debater's model family, for the record and the plan's warning: what the server
 * reports (Ollama's /api/show `details`, or an OpenAI-compatible /v1/models entry that says),
 * else the agent's `family:` in the preset, else its host entry's `family:`, else unknown.
 */
export function agentFamily(agent: { id: string; model: string; family?: string | undefined }, details: ModelDetails | undefined, tag: TagModel | undefined): AgentFamily {
  const size = { parameterSize: details?.parameterSize ?? tag?.parameterSize ?? null, quantization: details?.quantization ?? tag?.quantization ?? null };
  const base = { agentId: agent.id, model: agent.model, ...size };
  // A tag's family is the server's report too (Ollama's /api/tags), unless it came from the hosts entry (src/schedule/facts.ts).
  const reported = details?.family ?? (tag?.family && !tag.familyFromHost ? tag.family : null);
  if (reported) return { ...base, family: reported, families: details?.families ?? tag?.families ?? null, source: 'server' };
  if (agent.family) return { ...base, family: agent.family, families: null, source: 'preset' };
  if (tag?.family) return { ...base, family: tag.family, families: null, source: 'host' };
  return { ...base, family: null, families: null, source: 'unknown' };
}

/** The plan's warning for a panel whose debaters all share one model family; null otherwise. */
export function oneFamilyWarning(families: readonly AgentFamily[]): string | null {
  if (families.length < 2) return null;
  const keys = families.map((f) => familyKey(f.family));
  if (keys.some((k) => k === null) || new Set(keys).size !== 1) return null;
  return (
    `${families.length === 1 ? 'The one agent is' : `All ${plural(families.length, 'agent')} are`} of one model family (${keys[0]}): models of one family tend to share their errors, so their agreement is weak evidence ` +
    `and the card's confidence stays at MEDIUM unless they agree from round 0 (docs/confidence.md). Mix families for independent views.`
  );
}
