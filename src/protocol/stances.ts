import { plural } from '../plural.js';

/**
 * Stances: the judge's per-round grouping of the panel by the position each agent holds,
 * returned by the same call that scores convergence. From the stances of successive rounds
 * this module derives, as pure functions, each agent's trajectory (held, moved, joined the
 * majority, left it) and the per-debate conformity figures (docs/confidence.md).
 */

// Only the shapes read here, so this module sits below records.ts and schemas.ts, which import it. It loads no zod
// (the reply's schema is in schemas.ts): the record's readers (show, export) use its figures.
interface Message {
  role: string;
  content: string;
}
interface CritiquedTurn {
  agentId: string;
  critique: { disagreements: readonly { reason: string }[] } | null;
}

export interface Stance {
  id: string;
  summary: string;
  agents: string[];
}

/** What an agent did between the previous round and this one. */
export type StanceMove = 'opened' | 'held' | 'moved' | 'joined' | 'left' | 'absent';

export interface AgentStance {
  agentId: string;
  /** Its stance's id this round; null when it had no usable turn the judge read. */
  stance: string | null;
  move: StanceMove;
  /** For a change of stance: whether its critique gave a reason (a disagreement with a stated reason); null otherwise. */
  reasoned: boolean | null;
}

/** One round's stances as recorded: normalised so every agent the judge read sits in exactly one. */
export interface RoundStances {
  round: number;
  stances: Stance[];
  /** The stance held by strictly more agents than any other; null on a tie. */
  majority: string | null;
  /** Per stance id, the round-0 stance it descends from (null: a position new since round 0). */
  lineage: Record<string, string | null>;
  agents: AgentStance[];
  /** What normalisation changed in the judge's reply. */
  notes: string[];
}

/** The instruction for the stances, appended to the judge's prompt; it carries the previous round's stances so ids can carry over. */
export function withStanceSection<M extends Message>(messages: M[], agentIds: readonly string[], previous: readonly Stance[] | null): M[] {
  const lines = [
    '',
    'Also give "stances": group the panelists by the position they hold now. Each stance has an "id", a one-line "summary" and the "agents" holding it.',
    `Every panelist (${agentIds.join(', ')}) sits in exactly one stance; panelists with the same central recommendation share a stance.`,
  ];
  if (previous && previous.length > 0) {
    lines.push('Stances of the previous round (reuse an id when its position is still held, whoever holds it now):');
    for (const s of previous) lines.push(`- ${s.id}: ${s.summary}`);
  }
  const out = messages.map((m) => ({ ...m }));
  const last = out.findLastIndex((m) => m.role === 'user');
  if (last >= 0) out[last]!.content = `${out[last]!.content}\n${lines.join('\n')}`;
  return out;
}

/**
 * Brings a schema-valid stances reply to the rule that every agent read sits in exactly one
 * stance, saying what it changed: an agent listed twice keeps its first stance, an agent left
 * out gets a stance of its own, empty stances go, and a repeated stance id gets a suffix.
 */
export function normaliseStances(reply: readonly Stance[] | undefined, agentIds: readonly string[]): { stances: Stance[]; notes: string[] } {
  const notes: string[] = [];
  const expected = new Set(agentIds);
  const placed = new Set<string>();
  const ids = new Set<string>();
  const stances: Stance[] = [];
  for (const s of reply ?? []) {
    const agents: string[] = [];
    for (const a of s.agents) {
      if (!expected.has(a)) notes.push(`stance ${s.id} named ${a}, whose position the judge was not shown: left out`);
      else if (placed.has(a)) notes.push(`${a} was in more than one stance: kept in its first`);
      else {
        placed.add(a);
        agents.push(a);
      }
    }
    if (agents.length === 0) {
      notes.push(`stance ${s.id} had no agent of its own: dropped`);
      continue;
    }
    const id = uniqueId(s.id.trim() || 'S', ids);
    if (id !== s.id) notes.push(`stance id ${JSON.stringify(s.id)} repeated or blank: renamed ${id}`);
    ids.add(id);
    stances.push({ id, summary: s.summary, agents });
  }
  for (const a of agentIds) {
    if (placed.has(a)) continue;
    const id = uniqueId(`unplaced-${a}`, ids);
    ids.add(id);
    stances.push({ id, summary: 'not placed by the judge', agents: [a] });
    notes.push(`${a} was in no stance: given one of its own`);
  }
  return { stances, notes };
}

function uniqueId(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  let n = 2;
  while (taken.has(`${base}-${n}`)) n++;
  return `${base}-${n}`;
}

/** The stance held by strictly more agents than any other; null on a tie or with none. */
export function majorityOf(stances: readonly Stance[]): string | null {
  const sorted = [...stances].sort((a, b) => b.agents.length - a.agents.length);
  const [first, second] = sorted;
  if (!first) return null;
  return second && second.agents.length === first.agents.length ? null : first.id;
}

/**
 * Each stance's predecessor: the previous round's stance it continues, matched by the agents the
 * two hold, never by the id the judge gave (a small judge re-letters its stances from round to
 * round). The matching is one to one and exact: it keeps together as many agents as any matching
 * can, so the fewest agents read as having moved. Among matchings that keep as many, the one
 * that pairs more stances with the same summary wins, then more with the same id, then the one
 * that continues larger previous stances (a merge continues the group that brought the most).
 * A stance sharing no agent with any previous one, or left over in a split, is a position new
 * this round (null).
 */
export function predecessorsOf(stances: readonly Stance[], previous: readonly Stance[]): Map<string, string | null> {
  const out = new Map<string, string | null>(stances.map((s) => [s.id, null]));
  if (stances.length === 0 || previous.length === 0) return out;
  const overlap = (s: Stance, p: Stance): number => s.agents.filter((a) => p.agents.includes(a)).length;
  const said = (text: string): string => text.trim().replace(/\s+/g, ' ').toLowerCase();
  // Each criterion's total stays below `base`, so one weight per pair orders matchings by the criteria in turn.
  const base = Math.max(stances.length, previous.length, previous.reduce((n, p) => n + p.agents.length, 0)) + 1;
  const weight = (s: Stance, p: Stance): number => {
    const shared = overlap(s, p);
    if (shared === 0) return 0;
    return ((shared * base + (said(s.summary) === said(p.summary) ? 1 : 0)) * base + (s.id === p.id ? 1 : 0)) * base + p.agents.length;
  };
  const match = maximumMatching(stances.map((s) => previous.map((p) => weight(s, p))));
  stances.forEach((s, i) => {
    const j = match[i];
    if (j !== undefined && j !== null && overlap(s, previous[j]!) > 0) out.set(s.id, previous[j]!.id);
  });
  return out;
}

/**
 * The one-to-one pairing of rows with columns of the largest total weight (the Hungarian method,
 * O(n³)); each row's column, or null when it is left unpaired. Deterministic for a given matrix.
 */
function maximumMatching(weights: readonly (readonly number[])[]): (number | null)[] {
  const rows = weights.length;
  const cols = Math.max(0, ...weights.map((r) => r.length));
  const n = Math.max(rows, cols);
  // A square cost matrix (the weights negated, zero where padded), indexed from 1 as the method is written.
  const cost = (i: number, j: number): number => -(weights[i - 1]?.[j - 1] ?? 0);
  const u = new Array<number>(n + 1).fill(0);
  const v = new Array<number>(n + 1).fill(0);
  const p = new Array<number>(n + 1).fill(0);
  const way = new Array<number>(n + 1).fill(0);
  for (let i = 1; i <= n; i++) {
    p[0] = i;
    let j0 = 0;
    const minv = new Array<number>(n + 1).fill(Number.POSITIVE_INFINITY);
    const used = new Array<boolean>(n + 1).fill(false);
    do {
      used[j0] = true;
      const i0 = p[j0]!;
      let delta = Number.POSITIVE_INFINITY;
      let j1 = 0;
      for (let j = 1; j <= n; j++) {
        if (used[j]) continue;
        const cur = cost(i0, j) - u[i0]! - v[j]!;
        if (cur < minv[j]!) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j]! < delta) {
          delta = minv[j]!;
          j1 = j;
        }
      }
      for (let j = 0; j <= n; j++) {
        if (used[j]) {
          u[p[j]!] = u[p[j]!]! + delta;
          v[j] = v[j]! - delta;
        } else minv[j] = minv[j]! - delta;
      }
      j0 = j1;
    } while (p[j0] !== 0);
    do {
      const j1 = way[j0]!;
      p[j0] = p[j1]!;
      j0 = j1;
    } while (j0 !== 0);
  }
  const out = new Array<number | null>(rows).fill(null);
  for (let j = 1; j <= n; j++) if (p[j]! >= 1 && p[j]! <= rows && j <= cols) out[p[j]! - 1] = j - 1;
  return out;
}

/**
 * The previous round's stances with each agent that round did not read (a devil's advocate that
 * round, a failed turn) put back in the stance that continues the one it last held: sitting a
 * round out does not take an agent out of its group. `earlier` are the rounds recorded before
 * `previous`; only the unbroken run of rounds right before it is read.
 */
export function withAbsentees(previous: JudgedRound, earlier: readonly (JudgedRound | null)[]): Stance[] {
  const chain: JudgedRound[] = [previous];
  for (let round = previous.round - 1; ; round--) {
    const r = earlier.find((x) => x?.round === round);
    if (!r) break;
    chain.unshift(r);
  }
  let carried: Stance[] = chain[0]!.stances;
  for (const r of chain.slice(1)) {
    const read = new Set(r.stances.flatMap((s) => s.agents));
    const from = predecessorsOf(r.stances, carried);
    const before = carried;
    carried = r.stances.map((s) => {
      const back = before.find((c) => c.id === from.get(s.id))?.agents.filter((a) => !read.has(a)) ?? [];
      return back.length ? { ...s, agents: [...s.agents, ...back] } : s;
    });
  }
  return carried;
}

/** A round's stances, as the matching across rounds reads them. */
type JudgedRound = Pick<RoundStances, 'round' | 'stances'>;

/**
 * For rules that compare an agent's stance across rounds (rescore's Free-MAD, the trajectory
 * decision): per round, a key for each stance that stays the same while its group continues
 * from round to round (matched as `predecessorsOf` matches them), so a re-lettered stance keeps
 * its key and a real move changes it. A stance new in its round is keyed by its own id, or, when
 * that key is already another position's, by its id and round (`S1@2`).
 */
export function positionKeys(rounds: readonly JudgedRound[]): Map<number, Map<string, string>> {
  const keys = new Map<number, Map<string, string>>();
  const taken = new Set<string>();
  const read: JudgedRound[] = [];
  for (const r of [...rounds].sort((a, b) => a.round - b.round)) {
    const previous = read.find((x) => x.round === r.round - 1);
    const from = previous ? predecessorsOf(r.stances, withAbsentees(previous, read)) : new Map<string, string | null>();
    const own = new Map<string, string>();
    for (const s of r.stances) {
      const p = from.get(s.id);
      let key = p != null ? keys.get(previous!.round)?.get(p) : undefined;
      if (key === undefined) {
        key = taken.has(s.id) ? `${s.id}@${r.round}` : s.id;
        for (let n = 2; taken.has(key); n++) key = `${s.id}@${r.round}-${n}`;
      }
      taken.add(key);
      own.set(s.id, key);
    }
    keys.set(r.round, own);
    read.push(r);
  }
  return keys;
}

/** A critique gives a reason for its change when it states at least one disagreement with a reason. */
export function statesReason(turn: Pick<CritiquedTurn, 'critique'> | undefined): boolean {
  return (turn?.critique?.disagreements ?? []).some((d) => d.reason.trim().length > 0);
}

/**
 * One round's stances as recorded: each panelist's stance and what it did since the
 * previous recorded round (`previous`, null for the first). `panel` is every debater in
 * order; `turns` are this round's turns (for the stated reasons).
 */
export function roundStancesOf(input: {
  round: number;
  stances: Stance[];
  notes: string[];
  panel: readonly string[];
  previous: RoundStances | null;
  /** The rounds recorded before `previous`, so an agent `previous` did not read still counts in its group (`withAbsentees`). */
  earlier?: readonly (RoundStances | null)[];
  turns: readonly CritiquedTurn[];
}): RoundStances {
  const { round, stances, previous } = input;
  const stanceOf = (list: readonly Stance[], agent: string): Stance | undefined => list.find((s) => s.agents.includes(agent));
  const predecessor = previous ? predecessorsOf(stances, withAbsentees(previous, input.earlier ?? [])) : new Map(stances.map((s) => [s.id, null]));
  const lineage: Record<string, string | null> = {};
  for (const s of stances) lineage[s.id] = previous ? (predecessor.get(s.id) !== null ? (previous.lineage[predecessor.get(s.id)!] ?? null) : null) : s.id;
  const agents: AgentStance[] = input.panel.map((agentId) => {
    const now = stanceOf(stances, agentId);
    if (!now) return { agentId, stance: null, move: 'absent', reasoned: null };
    const before = previous ? stanceOf(previous.stances, agentId) : undefined;
    if (!before) return { agentId, stance: now.id, move: 'opened', reasoned: null };
    const from = predecessor.get(now.id) ?? null;
    if (from === before.id) return { agentId, stance: now.id, move: 'held', reasoned: null };
    const reasoned = statesReason(input.turns.find((t) => t.agentId === agentId));
    const move: StanceMove = previous!.majority !== null && from === previous!.majority ? 'joined' : before.id === previous!.majority ? 'left' : 'moved';
    return { agentId, stance: now.id, move, reasoned };
  });
  return { round, stances, majority: majorityOf(stances), lineage, agents, notes: input.notes };
}

/**
 * The recorded `stances` steps read again (`steps` in the order they were recorded, `turns` the
 * debate's turns): each step's moves, lineage and majority derived anew from the stances it holds,
 * against the latest reading of the round before, as the engine derives them now. What is read is
 * the record as written: the stances, the notes and the rows are unchanged, so a record made when
 * stances were carried over by the judge's ids reads as a new one does. A stated reason the
 * engine recorded for a change is kept (it read a seat the fallback filled as its fallback).
 * Returns one reading per step, in the same order.
 */
export function rereadStances(steps: readonly RoundStances[], turns: readonly (CritiquedTurn & { round: number })[]): RoundStances[] {
  const latest = new Map<number, RoundStances>();
  return steps.map((step) => {
    const read = roundStancesOf({
      round: step.round,
      stances: step.stances,
      notes: step.notes,
      panel: step.agents.map((a) => a.agentId),
      previous: latest.get(step.round - 1) ?? null,
      earlier: [...latest.values()],
      turns: turns.filter((t) => t.round === step.round),
    });
    const agents = read.agents.map((a) => {
      const recorded = step.agents.find((x) => x.agentId === a.agentId)?.reasoned ?? null;
      return a.reasoned !== null && recorded !== null ? { ...a, reasoned: recorded } : a;
    });
    const reading = { ...read, agents };
    latest.set(step.round, reading);
    return reading;
  });
}

/** The effective number of distinct positions: the inverse Simpson index 1/Σpᵢ² of the stance shares. */
export function inverseSimpson(stances: readonly Stance[]): number | null {
  const total = stances.reduce((n, s) => n + s.agents.length, 0);
  if (total === 0) return null;
  return 1 / stances.reduce((sum, s) => sum + (s.agents.length / total) ** 2, 0);
}

/** A model family as the panel record keeps it (from the server, the preset, or unknown). */
export interface AgentFamily {
  agentId: string;
  model: string;
  /** The family as reported, e.g. `llama`, `qwen2`; null when unknown. */
  family: string | null;
  families: string[] | null;
  parameterSize: string | null;
  quantization: string | null;
  /** Where the family came from. */
  source: 'server' | 'preset' | 'host' | 'unknown';
}

/**
 * The lineage a family name belongs to, for telling families apart: lower case, without a
 * trailing mixture-of-experts or vision mark and version (`qwen2`, `qwen3` and `qwen3moe` are one
 * lineage, as are `gemma3` and `gemma3n`, `granite` and `granitemoe`; `Llama` and `llama` one family).
 */
export function familyKey(family: string | null): string | null {
  if (family === null) return null;
  const name = family.trim().toLowerCase();
  const key = name.replace(/[._-]?(moe|vl)$/, '').replace(/[\d._-]+[a-z]?$/, '').replace(/[._-]+$/, '');
  return key === '' ? name || null : key;
}

/** The distinct families (by lineage) of the given agents, in order; agents of unknown family counted apart. */
export function familiesAmong(families: readonly AgentFamily[], agentIds: readonly string[]): { families: string[]; unknown: number } {
  const out: string[] = [];
  let unknown = 0;
  for (const id of agentIds) {
    const f = families.find((x) => x.agentId === id);
    const key = familyKey(f?.family ?? null);
    if (key === null) unknown++;
    else if (!out.includes(key)) out.push(key);
  }
  return { families: out, unknown };
}

/** The per-debate figures on independence and conformity (docs/confidence.md). */
export interface ConformityFigures {
  /** Stances at round 0 and in the last round with stances; null when none were recorded. */
  stancesAtStart: number | null;
  stancesAtEnd: number | null;
  /** 1/Σpᵢ² over the round-0 stance shares. */
  effectivePositions: number | null;
  /** The round-0 majority stance, and the agents outside it that hold its lineage at the end (each read at the last round it had a stance in). */
  startMajority: string | null;
  outsideMajority: string[];
  joinedMajority: string[];
  /** joined / outside; null when there was no unique round-0 majority or nobody outside it. */
  majorityAdoption: number | null;
  /** Each agent's move into the majority, by round. */
  joins: { agentId: string; round: number; reasoned: boolean | null }[];
  /** Agents that changed stance at least once. */
  movers: string[];
  /** Every agent the judge read sat in one stance at round 0, and none changed since. */
  heldFromStart: boolean;
  familiesAll: { families: string[]; unknown: number };
  familiesRestsOn: { families: string[]; unknown: number };
}

export function conformityOf(rounds: readonly RoundStances[], families: readonly AgentFamily[], restsOn: readonly string[]): ConformityFigures {
  const ordered = [...rounds].sort((a, b) => a.round - b.round);
  const start = ordered.find((r) => r.round === 0) ?? null;
  const end = ordered.at(-1) ?? null;
  const startMajority = start?.majority ?? null;
  const outside = start && startMajority ? start.agents.filter((a) => a.stance !== null && a.stance !== startMajority).map((a) => a.agentId) : [];
  // Each agent is read at the last round it had a stance in: a round it sat out (a devil's advocate's, a failed turn) leaves its view where it was.
  const lastHeld = (id: string): boolean => {
    for (const r of [...ordered].reverse()) {
      const s = r.agents.find((a) => a.agentId === id)?.stance;
      if (s != null) return r.lineage[s] === startMajority;
    }
    return false;
  };
  const joined = end && startMajority ? outside.filter(lastHeld) : [];
  const moves = ordered.flatMap((r) => r.agents.map((a) => ({ ...a, round: r.round })));
  // An agent back after a round without a stance is recorded as `opened`: it moved if its stance does not descend from the one it had.
  // (A position new since round 0 has no lineage: it is compared by its id.)
  const last = new Map<string, { lineage: string | null; stance: string }>();
  const returned = new Set<string>();
  for (const r of ordered) {
    for (const a of r.agents) {
      if (a.stance === null) continue;
      const now = { lineage: r.lineage[a.stance] ?? null, stance: a.stance };
      const before = last.get(a.agentId);
      if (a.move === 'opened' && before && (now.lineage !== before.lineage || (now.lineage === null && now.stance !== before.stance))) returned.add(a.agentId);
      last.set(a.agentId, now);
    }
  }
  const movers = [...new Set(moves.filter((m) => m.move === 'moved' || m.move === 'joined' || m.move === 'left' || returned.has(m.agentId)).map((m) => m.agentId))];
  const allIds = families.map((f) => f.agentId);
  return {
    stancesAtStart: start ? start.stances.length : null,
    stancesAtEnd: end ? end.stances.length : null,
    effectivePositions: start ? inverseSimpson(start.stances) : null,
    startMajority,
    outsideMajority: outside,
    joinedMajority: joined,
    majorityAdoption: startMajority && outside.length > 0 ? joined.length / outside.length : null,
    joins: moves.filter((m) => m.move === 'joined').map((m) => ({ agentId: m.agentId, round: m.round, reasoned: m.reasoned })),
    movers,
    // Held: one stance at round 0, and every stance any agent held since descends from it (an agent first judged later may open apart).
    heldFromStart: start !== null && start.stances.length === 1 && movers.length === 0 && ordered.every((r) => r.agents.every((a) => a.stance === null || r.lineage[a.stance] === start.stances[0]!.id)),
    familiesAll: familiesAmong(families, allIds),
    familiesRestsOn: familiesAmong(families, restsOn),
  };
}

/** Whether the support for the synthesis is independent enough for HIGH confidence, and why not when it is not. */
export function independenceOf(figures: ConformityFigures): { independent: boolean; reason: string } {
  const rests = figures.familiesRestsOn;
  if (rests.families.length >= 2) return { independent: true, reason: `rests on ${rests.families.length} model families (${rests.families.join(', ')})` };
  if (figures.heldFromStart) return { independent: true, reason: 'the panel agreed from round 0 and no agent moved' };
  const which =
    rests.families.length === 1
      ? `one model family (${rests.families[0]}${rests.unknown ? `, and ${rests.unknown} of unknown family` : ''})`
      : 'agents of unknown model family';
  const how = figures.stancesAtStart === null ? 'with no stance record from round 0' : figures.movers.length > 0 ? `after ${figures.movers.length} agent${figures.movers.length === 1 ? '' : 's'} moved` : `from ${plural(figures.stancesAtStart, 'stance')} at round 0`;
  return { independent: false, reason: `agreement ${how} rests on ${which}: not independent support` };
}
