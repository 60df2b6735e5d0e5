import { normaliseStances, positionKeys } from '../protocol/stances.js';
import type { Vote } from './trajectory.js';

/** One stance the judge saw in a round: an id, a one-line summary, and the agents holding it. */
export interface Stance {
  id: string;
  summary: string;
  agents: string[];
}

/** The stances in a judge call's parsed reply, as the judge wrote them, or null when it holds none (records made before the judge named them). */
export function stancesOf(parsed: unknown): Stance[] | null {
  if (parsed === null || typeof parsed !== 'object') return null;
  const list = (parsed as { stances?: unknown }).stances;
  if (!Array.isArray(list)) return null;
  const out: Stance[] = [];
  for (const s of list) {
    if (s === null || typeof s !== 'object') continue;
    const { id, summary, agents } = s as Record<string, unknown>;
    if (typeof id !== 'string' || !Array.isArray(agents)) continue;
    out.push({ id, summary: typeof summary === 'string' ? summary : id, agents: agents.filter((a): a is string => typeof a === 'string') });
  }
  return out;
}

/**
 * The stances of a judge call's reply as the engine decides on them: normalised by the engine's
 * own `normaliseStances` over `judged`, the agents whose positions the judge read (a repeated id
 * renamed, an agent named twice kept in its first stance, one left out given its own). For
 * records made before the engine recorded its normalised stances; null when the reply has none.
 */
export function normalisedStancesOf(parsed: unknown, judged: readonly string[]): Stance[] | null {
  const reply = stancesOf(parsed);
  return reply === null ? null : normaliseStances(reply, judged).stances;
}

/**
 * The agents a judge call was asked to group, from the schema it was sent (the `enum` of its
 * stances' agents); null when the recorded schema does not name them.
 */
export function judgedIdsOf(format: unknown): string[] | null {
  let node: unknown = format;
  for (const key of ['properties', 'stances', 'items', 'properties', 'agents', 'items', 'enum']) {
    if (node === null || typeof node !== 'object') return null;
    node = (node as Record<string, unknown>)[key];
  }
  return Array.isArray(node) && node.every((id): id is string => typeof id === 'string') ? node : null;
}

/**
 * Each agent's vote in a round from the judge's stances: the stance that names it. Over stances
 * the engine normalised every agent the judge read sits in exactly one; over others, an agent
 * in no stance, or in more than one, has no vote there. A vote's key is the stance's key in
 * `keys` (`positionKeys`: the same while its group continues, whatever the judge's id), else its id.
 */
export function votesFromStances(agents: readonly string[], stances: readonly Stance[], keys?: ReadonlyMap<string, string>): (Vote | null)[] {
  return agents.map((agent) => {
    const holding = stances.filter((s) => s.agents.includes(agent));
    return holding.length === 1 ? { key: keys?.get(holding[0]!.id) ?? holding[0]!.id, text: holding[0]!.summary } : null;
  });
}

/** Each round's votes from its stances (null: no stances that round), keyed by position across rounds (`positionKeys`). */
export function votesByPosition(agents: readonly string[], byRound: ReadonlyMap<number, readonly Stance[]>): Map<number, (Vote | null)[]> {
  const keys = positionKeys([...byRound].map(([round, stances]) => ({ round, stances: [...stances] })));
  return new Map([...byRound].map(([round, stances]) => [round, votesFromStances(agents, stances, keys.get(round))]));
}
