// The tension map's format and ordering, without its schemas: what the record's readers need
// (store/tensions.ts), so a command that only reads the record never loads zod.
import { plural } from '../plural.js';

export const TENSION_MAP_FORMAT = 'conclave.tension-map';
export const TENSION_MAP_VERSION = 1;
/** The agent id the map's own call is recorded under; the board's clash calls are `clash-1`, `clash-2`, …. */
export const TENSION_MAP_AGENT = 'tension-map';

export const clashTypes = ['factual', 'interpretive', 'emphasis'] as const;
export type ClashType = (typeof clashTypes)[number];

export const typeRank: Record<ClashType, number> = { factual: 0, interpretive: 1, emphasis: 2 };

/** Tensions most severe first; at equal severity factual before interpretive before emphasis, then by id. */
export function bySeverity<T extends { severity: number; type: ClashType; id: string }>(tensions: readonly T[]): T[] {
  return [...tensions].sort((a, b) => b.severity - a.severity || typeRank[a.type] - typeRank[b.type] || idNumber(a.id) - idNumber(b.id));
}

function idNumber(id: string): number {
  const n = Number(/\d+/.exec(id)?.[0]);
  return Number.isFinite(n) ? n : Number.MAX_SAFE_INTEGER;
}

/** What the targeted-exchange rule reads of a tension. */
export interface RankedClash {
  id: string;
  severity: number;
  type: ClashType;
  loadBearing: boolean;
  resolvable: boolean;
  /** `open` until a side concedes in a critique round (or the targeted exchange settles it). */
  resolution: string;
}

export interface Round2Rule {
  /** How many qualifying clashes fire the targeted round. */
  minClashes: number;
  /** The severity a load-bearing, non-emphasis clash needs to qualify. */
  minSeverity: number;
}

export const round2Defaults: Round2Rule = { minClashes: 2, minSeverity: 6 };

export interface Round2DecisionOf<T extends RankedClash> {
  fire: boolean;
  /** Ids of the clashes that count toward the rule. */
  qualifying: string[];
  /** The clash re-put to its two agents, when the round fires. */
  target: T | null;
  reason: string;
}

/** Still open, load-bearing, not emphasis, and severe enough. Emphasis never qualifies, whatever its score. */
export function qualifies(t: RankedClash, rule: Round2Rule): boolean {
  return t.resolution === 'open' && t.loadBearing && t.type !== 'emphasis' && t.severity >= rule.minSeverity;
}

/**
 * Fire a targeted round when at least `minClashes` clashes qualify. The target is
 * the most severe qualifying clash; at equal severity one that more information
 * could settle, since that is what a targeted round can do.
 */
export function round2Decision<T extends RankedClash>(tensions: readonly T[], rule: Round2Rule = round2Defaults): Round2DecisionOf<T> {
  const qualifying = bySeverity(tensions.filter((t) => qualifies(t, rule)));
  const ids = qualifying.map((t) => t.id);
  const need = `${rule.minClashes} open load-bearing factual or interpretive clash${rule.minClashes === 1 ? '' : 'es'} at severity ${rule.minSeverity} or more`;
  if (qualifying.length < rule.minClashes) {
    return { fire: false, qualifying: ids, target: null, reason: `${qualifying.length} of the needed ${need}` };
  }
  const top = qualifying[0]!.severity;
  const target = qualifying.find((t) => t.severity === top && t.resolvable) ?? qualifying[0]!;
  return { fire: true, qualifying: ids, target, reason: `${plural(qualifying.length, 'clash', 'clashes')} ${qualifying.length === 1 ? 'meets' : 'meet'} the rule (${need}): ${ids.join(', ')}` };
}


/** How a clash stands, in words for every view: "open", "resolved in round 2 (architect conceded)", … */
export function resolutionText(t: { resolution: string; resolvedInRound?: number | null | undefined; concededBy?: string | null | undefined }): string {
  if (t.resolution === 'resolved' && t.resolvedInRound) return `resolved in round ${t.resolvedInRound}${t.concededBy ? ` (${t.concededBy} conceded)` : ''}`;
  switch (t.resolution) {
    case 'open':
      return 'open';
    case 'resolved':
      return 'resolved in the targeted exchange';
    case 'narrowed':
      return 'narrowed in the targeted exchange, not resolved';
    default:
      return 'not resolved by the targeted exchange';
  }
}

/** How many clashes were dropped as malformed, read from a map's review (0 for a map recorded before they were counted). */
export function malformedClashesOf(review: { readonly reasons: readonly { readonly code: string; readonly count?: number | undefined }[] }): number {
  return review.reasons.find((r) => r.code === 'malformed-clashes')?.count ?? 0;
}
