import type { Vote } from './trajectory.js';

/** One stance the judge saw in a round: an id, a one-line summary, and the agents holding it. */
export interface Stance {
  id: string;
  summary: string;
  agents: string[];
}

/** The stances in a judge call's parsed reply, or null when it holds none (records made before the judge named them). */
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
 * Each agent's vote in a round from the judge's stances: the stance that names it. An agent
 * the judge put in no stance, or in more than one, has no vote there.
 */
export function votesFromStances(agents: readonly string[], stances: readonly Stance[]): (Vote | null)[] {
  return agents.map((agent) => {
    const holding = stances.filter((s) => s.agents.includes(agent));
    return holding.length === 1 ? { key: holding[0]!.id, text: holding[0]!.summary } : null;
  });
}
