import { z } from 'zod';
import type { TurnRecord } from './records.js';
import { estimateTokens } from './context.js';
import { idEnum, memoSchema, percent } from './grammar.js';

/**
 * Tension maps (seed 000) as pure functions over plain data: the schemas of what the
 * models return and of the map document, the clash classification bands, the rule
 * that fires a targeted round, and the false-consensus guard. Rules are written out
 * in docs/tensions.md; the tests in test/protocol/tensions.test.ts follow that page.
 */

import { bySeverity, type ClashType, clashTypes, type Round2DecisionOf, TENSION_MAP_FORMAT, TENSION_MAP_VERSION, typeRank } from './tension-order.js';

export { bySeverity, type ClashType, clashTypes, malformedClashesOf, qualifies, resolutionText, round2Decision, round2Defaults, type Round2Rule, TENSION_MAP_FORMAT, TENSION_MAP_VERSION } from './tension-order.js';

/** Whether a map fires the targeted exchange, and on which tension. */
export type Round2Decision = Round2DecisionOf<Tension>;

/** Classify first, then score inside the type's band. */
export const SEVERITY_BANDS: Readonly<Record<ClashType, { readonly min: number; readonly max: number }>> = {
  factual: { min: 8, max: 10 },
  interpretive: { min: 4, max: 7 },
  emphasis: { min: 1, max: 3 },
};

export const stances = ['maintain', 'narrow', 'concede'] as const;
export type Stance = (typeof stances)[number];

/**
 * `open`: still standing and not yet put to a targeted exchange. `resolved`: one side conceded,
 * in a critique round (`resolvedInRound`) or in the targeted exchange. `narrowed` and
 * `unresolved` are the targeted exchange's other outcomes.
 */
export const resolutions = ['open', 'resolved', 'narrowed', 'unresolved'] as const;
export type Resolution = (typeof resolutions)[number];
export type Round2Outcome = Exclude<Resolution, 'open'>;

export const reviewCodes = ['long-answers-no-tensions', 'overconfident-on-contested', 'incomplete-coverage', 'malformed-clashes', 'few-tensions', 'uncovered-topics'] as const;
export type ReviewCode = (typeof reviewCodes)[number];

/** A confidence in the map document, on the engine's 0-to-1 scale; models write it as `percent()`. */
const unit = z.number().min(0).max(1);
const severitySchema = z.number().int().min(1).max(10);
const clashTypeSchema = z.enum(clashTypes);

// ── What the models are asked to return ─────────────────────────────────────

export function claimsReplySchema(maxClaims: number) {
  return z.strictObject({
    claims: z
      .array(z.string().min(1))
      .min(1)
      .max(maxClaims)
      .describe('The load-bearing claims of the answer, most important first, each one self-contained sentence.'),
  });
}
export type ClaimsReply = z.infer<ReturnType<typeof claimsReplySchema>>;

function rawClashShape(claimId: z.ZodType<string>, otherId: z.ZodType<string> = claimId) {
  return z.strictObject({
    claimA: claimId.describe('Id of a claim of the first panelist of the pair, e.g. C2.'),
    claimB: otherId.describe('Id of a claim of the other panelist of the pair.'),
    type: clashTypeSchema,
    severity: severitySchema.describe('factual 8-10, interpretive 4-7, emphasis 1-3.'),
    loadBearing: z.boolean().describe('Would settling it change a conclusion?'),
    resolvable: z.boolean().describe('Could more information or evidence settle it?'),
    recommendation: z.string().min(1).describe('How the person deciding should weigh it.'),
  });
}

export const rawClashSchema = rawClashShape(z.string().min(1));
export type RawClash = z.infer<typeof rawClashSchema>;

function clashReplyShape(claimId: z.ZodType<string>) {
  return z.strictObject({
    clashes: z.array(rawClashShape(claimId)).describe('Real conflicts between the listed pairs; empty when there are none.'),
  });
}

export const clashReplySchema = clashReplyShape(z.string().min(1));
export type ClashReply = z.infer<typeof clashReplySchema>;

/** One clash call's reply: claim ids limited to the claims of the agents in its pairs. */
export const clashReplySchemaFor = memoSchema((claimIds: readonly string[]) => clashReplyShape(idEnum(claimIds)));

/**
 * What a clash call sends as `format`: each clash one of the listed pairs, `claimA` from one of its
 * panelists and `claimB` from the other (either way round), so the grammar cannot pit two claims of
 * one panelist, nor compare a pair it was not asked about. `sides` lists each pair's claim ids.
 */
export const clashFormatFor = memoSchema((sides: readonly (readonly [readonly string[], readonly string[]])[]) => {
  const branches = sides.filter(([a, b]) => a.length && b.length).flatMap(([a, b]) => [rawClashShape(idEnum(a), idEnum(b)), rawClashShape(idEnum(b), idEnum(a))]);
  const clash = branches.length >= 2 ? z.union(branches as unknown as [z.ZodType, z.ZodType, ...z.ZodType[]]) : (branches[0] ?? rawClashShape(z.string().min(1)));
  return z.strictObject({ clashes: z.array(clash).describe('Real conflicts between the listed pairs; empty when there are none.') });
});

export const targetedReplySchema = z.strictObject({
  response: z.string().min(1).describe("Your engagement with the other panelist's claim."),
  stance: z.enum(stances),
  revisedClaim: z.string().min(1).describe('Your claim as you hold it now.'),
  confidence: percent().describe('How sure you are now, from 0 to 100.'),
});
export type TargetedReply = z.infer<typeof targetedReplySchema>;

function consensusZoneShape(agent: z.ZodType<string>, confidence: z.ZodType<number>) {
  return z.strictObject({
    claim: z.string().min(1),
    supportingAgents: z.array(agent).min(2),
    confidence,
    loadBearing: z.boolean(),
  });
}

export const consensusZoneSchema = consensusZoneShape(z.string().min(1), unit);
export type ConsensusZone = z.infer<typeof consensusZoneSchema>;

function mapDraftShape(agent: z.ZodType<string>, panel: number | null) {
  const confidence = z.array(z.strictObject({ agent, confidence: percent() }));
  return z.strictObject({
    headline: z.string().min(1),
    consensus: z.array(consensusZoneShape(agent, percent())),
    majorFindings: z.array(z.string().min(1)).min(3).max(5),
    openQuestions: z.array(z.string().min(1)),
    confidence: panel === null ? confidence : confidence.max(panel),
  });
}

export const mapDraftSchema = mapDraftShape(z.string().min(1), null);
export type MapDraft = z.infer<typeof mapDraftSchema>;

/** The map call's reply: agent references limited to the panelists on the map. */
export const mapDraftSchemaFor = memoSchema((agents: readonly string[]) => mapDraftShape(idEnum(agents), agents.length));

// ── The map document ────────────────────────────────────────────────────────

export const claimSchema = z.strictObject({
  id: z.string().min(1),
  agentId: z.string().min(1),
  text: z.string().min(1),
  /** `model`: extracted by a model call; `answer`: listed by the agent's structured answer. */
  source: z.enum(['model', 'answer']),
});
export type Claim = z.infer<typeof claimSchema>;

export const tensionSchema = z.strictObject({
  id: z.string().min(1),
  agentA: z.string().min(1),
  agentB: z.string().min(1),
  claimAId: z.string().min(1),
  claimBId: z.string().min(1),
  claimA: z.string().min(1),
  claimB: z.string().min(1),
  type: clashTypeSchema,
  severity: severitySchema,
  loadBearing: z.boolean(),
  resolvable: z.boolean(),
  recommendation: z.string().min(1),
  resolution: z.enum(resolutions),
  /** The critique round in which one side conceded (resolution `resolved`); absent or null otherwise. */
  resolvedInRound: z.number().int().min(1).nullable().optional(),
  /** The agent who conceded in that round. */
  concededBy: z.string().min(1).nullable().optional(),
});
export type Tension = z.infer<typeof tensionSchema>;

export const reviewReasonSchema = z.strictObject({
  code: z.enum(reviewCodes),
  detail: z.string().min(1),
  /** `malformed-clashes`: how many clashes the map model wrote that could not be read; `uncovered-topics`: how many main points the map left out. */
  count: z.number().int().min(1).optional(),
});
export type ReviewReason = z.infer<typeof reviewReasonSchema>;

export const reviewSchema = z.strictObject({
  flagged: z.boolean(),
  reasons: z.array(reviewReasonSchema),
  /** Estimated tokens of the answers the map was drawn from. */
  answerTokens: z.number().int().min(0),
});
export type Review = z.infer<typeof reviewSchema>;

export const round2TargetSchema = z.strictObject({
  tensionId: z.string().min(1),
  agents: z.tuple([z.string().min(1), z.string().min(1)]),
  /** The clash framed as a question. */
  prompt: z.string().min(1),
  outcome: z.enum(['resolved', 'narrowed', 'unresolved']),
});
export type Round2Target = z.infer<typeof round2TargetSchema>;

/** The versioned tension map. Validated with zod and `validateTensionMap` every time one is produced. */
export const tensionMapSchema = z.strictObject({
  format: z.literal(TENSION_MAP_FORMAT),
  version: z.literal(TENSION_MAP_VERSION),
  debateId: z.string().min(1),
  generatedAt: z.string().min(1),
  /** 2 when a targeted round ran before the map was drawn. */
  round: z.union([z.literal(1), z.literal(2)]),
  agents: z.array(z.string().min(1)),
  claims: z.array(claimSchema),
  consensus: z.array(consensusZoneSchema),
  tensions: z.array(tensionSchema),
  synthesis: z.strictObject({
    headline: z.string().min(1),
    majorFindings: z.array(z.string().min(1)).min(3).max(5),
    openQuestions: z.array(z.string().min(1)),
    /** Per agent, never one overall score. */
    confidenceProfile: z.record(z.string(), unit),
  }),
  round2Target: round2TargetSchema.nullable(),
  review: reviewSchema,
  coverage: z.strictObject({
    pairsCompared: z.number().int().min(0),
    pairsTotal: z.number().int().min(0),
    gaps: z.array(z.string()),
  }),
});
export type TensionMap = z.infer<typeof tensionMapSchema>;

/**
 * Checks zod cannot express: every agent and claim the map names exists in the
 * debate, each tension's claims belong to its two agents, severities sit in their
 * type's band. Returns the problems found (empty when the map is sound).
 */
export function validateTensionMap(map: TensionMap, known: { agents: readonly string[]; claimIds?: readonly string[] }): string[] {
  const problems: string[] = [];
  const agents = new Set(known.agents);
  const unknownAgent = (id: string, where: string): void => {
    if (!agents.has(id)) problems.push(`${where} names agent "${id}", which is not in this debate (${[...agents].join(', ')})`);
  };
  map.agents.forEach((a, i) => unknownAgent(a, `agents[${i}]`));
  const claims = new Map<string, Claim>();
  const extracted = known.claimIds ? new Set(known.claimIds) : null;
  map.claims.forEach((c, i) => {
    unknownAgent(c.agentId, `claims[${i}]`);
    if (claims.has(c.id)) problems.push(`claims[${i}] repeats claim id "${c.id}"`);
    if (extracted && !extracted.has(c.id)) problems.push(`claims[${i}] has id "${c.id}", which no extraction produced`);
    claims.set(c.id, c);
  });
  const tensionIds = new Set<string>();
  map.tensions.forEach((t, i) => {
    const at = `tensions[${i}] (${t.id})`;
    if (tensionIds.has(t.id)) problems.push(`${at} repeats tension id "${t.id}"`);
    tensionIds.add(t.id);
    unknownAgent(t.agentA, `${at}.agentA`);
    unknownAgent(t.agentB, `${at}.agentB`);
    if (t.agentA === t.agentB) problems.push(`${at} sets one agent against itself`);
    for (const [side, id, agent] of [
      ['claimAId', t.claimAId, t.agentA],
      ['claimBId', t.claimBId, t.agentB],
    ] as const) {
      const claim = claims.get(id);
      if (!claim) problems.push(`${at}.${side} names claim "${id}", which is not in this debate`);
      else if (claim.agentId !== agent) problems.push(`${at}.${side}: claim "${id}" belongs to ${claim.agentId}, not ${agent}`);
    }
    const band = SEVERITY_BANDS[t.type];
    if (t.severity < band.min || t.severity > band.max) problems.push(`${at}: a ${t.type} clash scores ${band.min}-${band.max}, got ${t.severity}`);
  });
  map.consensus.forEach((z, i) => {
    z.supportingAgents.forEach((a, j) => unknownAgent(a, `consensus[${i}].supportingAgents[${j}]`));
    if (new Set(z.supportingAgents).size !== z.supportingAgents.length) problems.push(`consensus[${i}] lists an agent twice`);
  });
  for (const agent of Object.keys(map.synthesis.confidenceProfile)) unknownAgent(agent, 'synthesis.confidenceProfile');
  const target = map.round2Target;
  if (target) {
    const t = map.tensions.find((x) => x.id === target.tensionId);
    if (!t) problems.push(`round2Target names tension "${target.tensionId}", which is not on the map`);
    else if (new Set([t.agentA, t.agentB, ...target.agents]).size !== 2) problems.push(`round2Target.agents must be the two agents of ${t.id}`);
  }
  return problems;
}

export type ParsedMap = { ok: true; map: TensionMap } | { ok: false; problems: string[] };

/** Zod validation plus `validateTensionMap`, for any map from any source. */
export function parseTensionMap(value: unknown, known: { agents: readonly string[]; claimIds?: readonly string[] }): ParsedMap {
  const result = tensionMapSchema.safeParse(value);
  if (!result.success) {
    return { ok: false, problems: result.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(top level)'}: ${i.message}`) };
  }
  const problems = validateTensionMap(result.data, known);
  return problems.length ? { ok: false, problems } : { ok: true, map: result.data };
}

// ── Claims ──────────────────────────────────────────────────────────────────

/**
 * Claims an answer already lists, when its structured form carries them
 * (`claims` or `loadBearingClaims`: strings, or objects with `text` or `claim`).
 * Null when it lists none, so the caller asks a model instead.
 */
export function claimsFromAnswer(body: unknown): string[] | null {
  if (!body || typeof body !== 'object') return null;
  const record = body as Record<string, unknown>;
  const list = record.loadBearingClaims ?? record.claims;
  if (!Array.isArray(list)) return null;
  const texts = list
    .map((item) => {
      if (typeof item === 'string') return item;
      if (item && typeof item === 'object') {
        const o = item as Record<string, unknown>;
        const text = o.text ?? o.claim;
        if (typeof text === 'string') return text;
      }
      return '';
    })
    .map((t) => t.trim())
    .filter((t) => t !== '');
  return texts.length ? texts : null;
}

/** Global claim ids C1, C2, … in the order given: short ids small models copy reliably. */
export function numberClaims(perAgent: { agentId: string; texts: string[]; source: Claim['source'] }[]): Claim[] {
  const out: Claim[] = [];
  for (const a of perAgent) for (const text of a.texts) out.push({ id: `C${out.length + 1}`, agentId: a.agentId, text, source: a.source });
  return out;
}

/**
 * What a claims extractor reads of an agent: its final position, with the reasoning
 * and disagreements that back it. `opening` is the agent's round-0 turn.
 */
export function answerText(final: TurnRecord, opening?: TurnRecord | null): string {
  const parts: string[] = [];
  if (final.opening) {
    parts.push(final.opening.position, `Reasoning: ${final.opening.reasoning}`);
  } else {
    parts.push(final.position ?? '');
    for (const d of final.critique?.disagreements ?? []) parts.push(`Disagrees with ${d.with} on ${d.on}: ${d.reason}`);
    if (opening?.opening?.reasoning) parts.push(`Reasoning given in round 0: ${opening.opening.reasoning}`);
  }
  return parts.filter((p) => p.trim() !== '').join('\n');
}

export function answerTokens(texts: readonly string[]): number {
  return texts.reduce((sum, t) => sum + estimateTokens(t), 0);
}

// ── Pairs and batching ──────────────────────────────────────────────────────

export type Pair = readonly [string, string];

/** Every unordered pair, in panel order: (a,b), (a,c), …, (b,c), … */
export function agentPairs(agents: readonly string[]): Pair[] {
  const pairs: Pair[] = [];
  for (let i = 0; i < agents.length; i++) for (let j = i + 1; j < agents.length; j++) pairs.push([agents[i]!, agents[j]!]);
  return pairs;
}

/** Pairs cut into batches of at most `perCall`, one clash call each. */
export function batchPairs(pairs: readonly Pair[], perCall: number): Pair[][] {
  const size = Math.max(1, Math.floor(perCall));
  const out: Pair[][] = [];
  for (let i = 0; i < pairs.length; i += size) out.push(pairs.slice(i, i + size));
  return out;
}

export function pairKey(a: string, b: string): string {
  return a < b ? `${a}\u0000${b}` : `${b}\u0000${a}`;
}

/** Model calls one map costs, before repairs (each call may be repaired once, at most doubling it). */
export function mapCallCount(agentCount: number, pairsPerCall: number, opts: { claimsListed?: number; round2?: boolean } = {}): {
  claims: number;
  clashes: number;
  targeted: number;
  map: number;
  total: number;
} {
  const claims = Math.max(0, agentCount - (opts.claimsListed ?? 0));
  const pairs = (agentCount * (agentCount - 1)) / 2;
  const clashes = Math.ceil(pairs / Math.max(1, Math.floor(pairsPerCall)));
  const targeted = opts.round2 ? 2 : 0;
  return { claims, clashes, targeted, map: 1, total: claims + clashes + targeted + 1 };
}

// ── Clashes ─────────────────────────────────────────────────────────────────

/**
 * What the grammar cannot say about one clash call's reply: a clash must set two
 * panelists of a pair the call listed against each other. Any other is dropped, with
 * a note; the rest of the reply stands.
 */
/**
 * The fault worth the one repair in a clash reply: the notes of the clashes `normalizeClashReply`
 * dropped, worded for the model with the rule they broke; null when none was dropped.
 */
export function misnamedClashProblem(dropped: readonly string[]): string | null {
  if (dropped.length === 0) return null;
  return `${dropped.length} clash${dropped.length === 1 ? '' : 'es'} could not be read: ${dropped.join('; ')}. Each clash names one claim of each panelist of a listed pair ("claimA" from one, "claimB" from the other); reply again with every clash named that way, and leave out any that is not.`;
}

export function normalizeClashReply(reply: ClashReply, claims: ReadonlyMap<string, Claim>, pairs: readonly Pair[]): string[] {
  const asked = new Set(pairs.map(([a, b]) => pairKey(a, b)));
  const notes: string[] = [];
  reply.clashes = reply.clashes.filter((c, i) => {
    const a = claims.get(c.claimA);
    const b = claims.get(c.claimB);
    let problem: string | null = null;
    if (!a || !b) problem = `names a claim id that is not listed (${!a ? c.claimA : c.claimB})`;
    else if (a.agentId === b.agentId) problem = `compares two claims of ${a.agentId}`;
    else if (!asked.has(pairKey(a.agentId, b.agentId))) problem = `compares ${a.agentId} and ${b.agentId}, a pair this call did not list`;
    if (problem) notes.push(`clashes[${i}] (${c.claimA}, ${c.claimB}) dropped: it ${problem}`);
    return problem === null;
  });
  return notes;
}

/** A severity moved into its type's band: the type is decided first and bounds the score. */
export function severityInBand(type: ClashType, severity: number): number {
  const band = SEVERITY_BANDS[type];
  return Math.min(band.max, Math.max(band.min, Math.round(severity)));
}


/**
 * Turns checked clash replies into tensions: agents taken from the claims, severity
 * kept in its band, a claim pair reported twice kept once (the more severe),
 * sorted by severity and numbered T1, T2, … from the most severe.
 */
export function tensionsFromClashes(raw: readonly RawClash[], claims: ReadonlyMap<string, Claim>, agentOrder: readonly string[]): Tension[] {
  const order = (id: string): number => {
    const i = agentOrder.indexOf(id);
    return i < 0 ? Number.MAX_SAFE_INTEGER : i;
  };
  const byPair = new Map<string, Omit<Tension, 'id'>>();
  for (const c of raw) {
    let a = claims.get(c.claimA);
    let b = claims.get(c.claimB);
    if (!a || !b || a.agentId === b.agentId) continue;
    if (order(a.agentId) > order(b.agentId)) [a, b] = [b, a];
    const tension: Omit<Tension, 'id'> = {
      agentA: a.agentId,
      agentB: b.agentId,
      claimAId: a.id,
      claimBId: b.id,
      claimA: a.text,
      claimB: b.text,
      type: c.type,
      severity: severityInBand(c.type, c.severity),
      loadBearing: c.loadBearing,
      resolvable: c.resolvable,
      recommendation: c.recommendation,
      resolution: 'open',
    };
    const key = `${a.id}\u0000${b.id}`;
    const seen = byPair.get(key);
    if (!seen || tension.severity > seen.severity) byPair.set(key, tension);
  }
  return [...byPair.values()]
    .map((t, i) => ({ t, i }))
    .sort((x, y) => y.t.severity - x.t.severity || typeRank[x.t.type] - typeRank[y.t.type] || x.i - y.i)
    .map(({ t }, i) => ({ id: `T${i + 1}`, ...t }));
}

// ── The targeted exchange (its rule: tension-order.ts) ─────────────────────────────────────────────────────────────────

/** Resolved when either side concedes; narrowed when either narrows; otherwise (or if a side gave no answer) unresolved. */
export function round2Outcome(a: Stance | null, b: Stance | null): Round2Outcome {
  if (a === null || b === null) return 'unresolved';
  if (a === 'concede' || b === 'concede') return 'resolved';
  if (a === 'narrow' || b === 'narrow') return 'narrowed';
  return 'unresolved';
}

/** The clash as one question, for the record and the map. */
export function round2Question(t: Tension): string {
  const bare = (claim: string): string => claim.trim().replace(/[.!?]+$/, '');
  return `Which holds: ${t.agentA}'s claim that "${bare(t.claimA)}", or ${t.agentB}'s claim that "${bare(t.claimB)}"?`;
}

// ── Clashes carried through the critique rounds ─────────────────────────────

/** Open clashes shown to one agent in a critique round, most severe first. */
export const MAX_CLASHES_PER_AGENT = 5;

/** The clashes still open that `agentId` is a party to, most severe first, at most `max`. */
export function openClashesOf(tensions: readonly Tension[], agentId: string, max = MAX_CLASHES_PER_AGENT): Tension[] {
  return bySeverity(tensions.filter((t) => t.resolution === 'open' && (t.agentA === agentId || t.agentB === agentId))).slice(0, max);
}

/** The clashes found on a set of answers, carried through the critique rounds until the map is drawn. */
export interface ClashBoard {
  /** The round whose answers the claims were read from (0 in a debate). */
  round: number;
  agents: string[];
  claims: Claim[];
  tensions: Tension[];
  gaps: string[];
  answerTokens: number;
  pairsTotal: number;
  pairsCompared: number;
  /** Clashes the map model wrote that could not be read even after the repair (absent: none). */
  malformedClashes?: number;
}

/** What an agent says of an open clash it was shown, in its critique (`clashUpdates`). */
export type ClashUpdate = { tension: string; stance: Stance };

/**
 * Keeps one stance per clash in a critique's `clashUpdates`, the first: the grammar bounds the
 * list's length and ids but not their repeats, so `[{T1, maintain}, {T1, concede}]` is a reply it
 * allows, and read as it stands the second would settle a clash the agent said it maintains.
 * Changes `reply` in place; returns a note for each entry dropped.
 */
export function normalizeClashUpdates(reply: { clashUpdates?: ClashUpdate[] }): string[] {
  const list = reply.clashUpdates;
  if (!list) return [];
  const seen = new Map<string, Stance>();
  const notes: string[] = [];
  reply.clashUpdates = list.filter((u) => {
    const first = seen.get(u.tension);
    if (first === undefined) {
      seen.set(u.tension, u.stance);
      return true;
    }
    notes.push(`clashUpdates: a second stance on ${u.tension} ("${u.stance}") was dropped; the first ("${first}") stands`);
    return false;
  });
  return notes;
}

/**
 * Settles the clashes after a critique round from what each party said: a clash is resolved
 * in this round when either of its two agents concedes it (the rule of the targeted exchange).
 * Updates naming a clash the agent is not party to, or a clash already settled, change nothing.
 * Returns the tensions as they now stand and the clashes resolved in this round.
 */
export function settleClashes(
  tensions: readonly Tension[],
  round: number,
  updates: readonly { agentId: string; updates: readonly ClashUpdate[] }[],
): { tensions: Tension[]; resolved: { id: string; by: string }[] } {
  const conceded = new Map<string, string>();
  for (const { agentId, updates: list } of updates) {
    // An agent's first stance on a clash counts (a reply recorded before repeats were dropped may hold two).
    const first = new Set<string>();
    for (const u of list) {
      if (first.has(u.tension)) continue;
      first.add(u.tension);
      if (u.stance !== 'concede' || conceded.has(u.tension)) continue;
      const t = tensions.find((x) => x.id === u.tension);
      if (!t || t.resolution !== 'open' || (t.agentA !== agentId && t.agentB !== agentId)) continue;
      conceded.set(u.tension, agentId);
    }
  }
  const resolved = [...conceded].map(([id, by]) => ({ id, by }));
  return {
    tensions: tensions.map((t) => (conceded.has(t.id) ? { ...t, resolution: 'resolved' as const, resolvedInRound: round, concededBy: conceded.get(t.id)! } : t)),
    resolved,
  };
}


// ── The map draft from the model ────────────────────────────────────────────

const HEDGED_OPENINGS = /^\s*(it depends|it all depends|both (sides|perspectives|views|positions|panelists|agents)|there are (good |valid )?(arguments|points|merits) on both|on the one hand|opinions (differ|vary))/i;

/** A headline must commit: no "it depends", no "both perspectives", and short. */
export function headlineProblem(headline: string): string | null {
  if (HEDGED_OPENINGS.test(headline)) return `"headline" hedges ("${headline.slice(0, 40)}…"); state the state of play plainly in one sentence`;
  if (headline.length > 300) return `"headline" is ${headline.length} characters; keep it to one sentence`;
  return null;
}

/** The hedge in a headline, worded for the repair request, or null when it commits. */
export function hedgedHeadline(headline: string): string | null {
  const problem = headlineProblem(headline);
  return problem?.includes('hedges') ? problem : null;
}

/**
 * What the grammar cannot say about the map model's draft, settled in place with a
 * note per change: a panelist listed twice in a zone or rated twice is kept once, a
 * zone left with fewer than two panelists is dropped, a panelist without a rating is
 * noted, a headline that still hedges after its repair is noted, and a targeted round that did not resolve its
 * clash leaves its question open.
 */
export function normalizeMapDraft(
  draft: MapDraft,
  ctx: { agents: readonly string[]; round2Outcome: Round2Outcome | null; round2Question?: string | null },
): string[] {
  const agents = new Set(ctx.agents);
  const notes: string[] = [];
  if (draft.headline.trim() === '') {
    draft.headline = 'The map model gave no headline; read the tensions below.';
    notes.push('headline was blank; a placeholder stands in');
  }
  const hedge = headlineProblem(draft.headline);
  if (hedge) notes.push(hedge.includes('hedges') ? 'headline kept as written although it hedges' : 'headline kept as written although it runs past one sentence');
  draft.consensus = draft.consensus.flatMap((zone, i) => {
    const named = [...new Set(zone.supportingAgents.filter((a) => agents.has(a)))];
    if (named.length !== zone.supportingAgents.length) notes.push(`consensus[${i}].supportingAgents: repeated or unknown panelists removed`);
    if (named.length < 2) {
      notes.push(`consensus[${i}] dropped: fewer than two panelists support it`);
      return [];
    }
    return [{ ...zone, supportingAgents: named }];
  });
  const rated = new Set<string>();
  draft.confidence = draft.confidence.filter((c) => {
    if (!agents.has(c.agent) || rated.has(c.agent)) {
      notes.push(`confidence for ${c.agent} given twice or for no panelist on the map; the first kept`);
      return false;
    }
    rated.add(c.agent);
    return true;
  });
  const missing = [...agents].filter((a) => !rated.has(a));
  if (missing.length) notes.push(`no confidence given for ${missing.join(', ')}`);
  if (ctx.round2Outcome && ctx.round2Outcome !== 'resolved' && draft.openQuestions.length === 0) {
    const question = ctx.round2Question?.trim() || 'The clash re-put in the targeted round is still open.';
    draft.openQuestions = [question];
    notes.push(`openQuestions was empty although the targeted round left its clash ${ctx.round2Outcome}; its question added`);
  }
  return notes;
}

// ── False-consensus guard ───────────────────────────────────────────────────

export interface GuardRule {
  /** Answers longer than this together, with zero tensions on the map, are suspicious. */
  longAnswerTokens: number;
  /** Every per-agent confidence above this, on a contested question, is suspicious. */
  maxConfidence: number;
  /** Fewer tensions than this on a long, contested debate are suspicious (seed 000: 3-8 for a complex query). */
  minTensions: number;
}

export const guardDefaults: GuardRule = { longAnswerTokens: 800, maxConfidence: 0.85, minTensions: 3 };

/** What the guard reads of the debate besides the map. */
export interface GuardInput {
  answerTokens: number;
  tensions: readonly Tension[];
  confidence: Readonly<Record<string, number>>;
  gaps: readonly string[];
  malformedClashes?: number;
  /** The panel disagreed at the start: the judge's round-0 convergence was below the threshold. Absent when no judge scored round 0. */
  contested?: boolean;
  /** The claims the map was drawn from (each agent's, most important first) and its consensus zones, for the topic check. */
  claims?: readonly Claim[];
  consensus?: readonly ConsensusZone[];
}

const STOP = new Set(
  'about also been before being both could does down each even every from have into just make more most much must need only other over same should since some such than that their them then there these they this those through under very were what when where which while will with would your'.split(' '),
);

/** The content words of a sentence: lower case, four letters or more, without the commonest function words. */
export function contentWords(text: string): Set<string> {
  return new Set((text.toLowerCase().match(/[\p{L}\p{N}]{4,}/gu) ?? []).filter((w) => !STOP.has(w)));
}

/**
 * The main topics of a debate are its agents' first claims (claims come most important first).
 * A topic is covered when a tension names that claim, or a consensus zone the agent supports
 * shares a content word with it. Returns the claims the map says nothing about.
 */
export function uncoveredTopics(claims: readonly Claim[], tensions: readonly Tension[], consensus: readonly ConsensusZone[]): Claim[] {
  const first = new Map<string, Claim>();
  for (const c of claims) if (!first.has(c.agentId)) first.set(c.agentId, c);
  const contested = new Set(tensions.flatMap((t) => [t.claimAId, t.claimBId]));
  return [...first.values()].filter((topic) => {
    if (contested.has(topic.id)) return false;
    const words = contentWords(topic.text);
    return !consensus.some((z) => z.supportingAgents.includes(topic.agentId) && [...contentWords(z.claim)].some((w) => words.has(w)));
  });
}

/**
 * Flags a map for human review when it looks more settled than its inputs allow:
 * long answers with no tension at all; too few tensions for a long, contested debate;
 * an agent's main point on which the map records neither consensus nor tension; every
 * agent rated above `maxConfidence` while a factual or interpretive clash stands (a
 * contested question); pairs that were never compared; or clashes the map model wrote
 * but that could not be read.
 */
export function falseConsensusReview(input: GuardInput, rule: GuardRule = guardDefaults): Review {
  const reasons: ReviewReason[] = [];
  const malformed = input.malformedClashes ?? 0;
  if (malformed > 0) {
    const some = `${malformed} clash${malformed === 1 ? ' was' : 'es were'} dropped as malformed (a repair did not make ${malformed === 1 ? 'it' : 'them'} readable)`;
    reasons.push({
      code: 'malformed-clashes',
      count: malformed,
      detail: input.tensions.length === 0 ? `${some} and the map shows no tension: possible false consensus` : some,
    });
  }
  if (input.tensions.length === 0 && input.answerTokens > rule.longAnswerTokens) {
    reasons.push({
      code: 'long-answers-no-tensions',
      detail: `the answers run to about ${input.answerTokens} tokens (over ${rule.longAnswerTokens}) and the map shows no tension at all`,
    });
  }
  const n = input.tensions.length;
  if (n > 0 && n < rule.minTensions && input.contested === true && input.answerTokens > rule.longAnswerTokens) {
    reasons.push({
      code: 'few-tensions',
      detail: `the panel disagreed at round 0 and the answers run to about ${input.answerTokens} tokens, yet the map shows only ${n} tension${n === 1 ? '' : 's'} (a contested question usually has ${rule.minTensions} or more)`,
    });
  }
  const silent = uncoveredTopics(input.claims ?? [], input.tensions, input.consensus ?? []);
  if (silent.length > 0) {
    reasons.push({
      code: 'uncovered-topics',
      count: silent.length,
      detail: `the map records neither consensus nor tension on the main point of ${silent.map((c) => `${c.agentId} (${c.id}: "${c.text.length > 80 ? `${c.text.slice(0, 79)}…` : c.text}")`).join(', ')}`,
    });
  }
  const values = Object.values(input.confidence);
  const contested = input.tensions.filter((t) => t.type !== 'emphasis');
  if (contested.length > 0 && values.length > 0 && values.every((v) => v > rule.maxConfidence)) {
    reasons.push({
      code: 'overconfident-on-contested',
      detail: `every agent is rated above ${rule.maxConfidence} although ${contested.length} factual or interpretive clash${contested.length === 1 ? '' : 'es'} stand${contested.length === 1 ? 's' : ''} (${contested.map((t) => t.id).join(', ')})`,
    });
  }
  if (input.gaps.length > 0) {
    reasons.push({ code: 'incomplete-coverage', detail: `parts of the panel were not compared: ${input.gaps.join('; ')}` });
  }
  return { flagged: reasons.length > 0, reasons, answerTokens: input.answerTokens };
}

// ── Assembly ────────────────────────────────────────────────────────────────

export interface TargetedTurn {
  agentId: string;
  opponentId: string;
  ownClaim: string;
  opposingClaim: string;
  /** The exact user prompt the agent received. */
  prompt: string;
  status: 'ok' | 'failed';
  reply: TargetedReply | null;
  error: string | null;
}

export interface TargetedExchange {
  tensionId: string;
  agents: [string, string];
  question: string;
  /** Why the round fired. */
  reason: string;
  turns: TargetedTurn[];
  outcome: Round2Outcome;
}

/** The map document from its parts; the caller validates it with `parseTensionMap`. */
export function assembleTensionMap(input: {
  debateId: string;
  generatedAt: number;
  agents: readonly string[];
  claims: readonly Claim[];
  tensions: readonly Tension[];
  draft: MapDraft;
  exchange: TargetedExchange | null;
  review: Review;
  pairsCompared: number;
  pairsTotal: number;
  gaps: readonly string[];
}): TensionMap {
  const resolution = new Map(input.exchange ? [[input.exchange.tensionId, input.exchange.outcome]] : []);
  return {
    format: TENSION_MAP_FORMAT,
    version: TENSION_MAP_VERSION,
    debateId: input.debateId,
    generatedAt: new Date(input.generatedAt).toISOString(),
    round: input.exchange ? 2 : 1,
    agents: [...input.agents],
    claims: [...input.claims],
    consensus: input.draft.consensus,
    tensions: bySeverity(input.tensions).map((t) => ({ ...t, resolution: resolution.get(t.id) ?? t.resolution })),
    synthesis: {
      headline: input.draft.headline.trim(),
      majorFindings: input.draft.majorFindings,
      openQuestions: input.draft.openQuestions,
      confidenceProfile: Object.fromEntries(input.draft.confidence.map((c) => [c.agent, c.confidence])),
    },
    round2Target: input.exchange
      ? { tensionId: input.exchange.tensionId, agents: input.exchange.agents, prompt: input.exchange.question, outcome: input.exchange.outcome }
      : null,
    review: input.review,
    coverage: { pairsCompared: input.pairsCompared, pairsTotal: input.pairsTotal, gaps: [...input.gaps] },
  };
}

/** What the tension stage reports as it goes; the recorder stores each step, the renderer prints it. */
export type TensionUpdate =
  | { step: 'claims'; agents: string[]; claims: Claim[]; gaps: string[]; answerTokens: number; pairs: number; clashCalls: number; round?: number }
  | { step: 'clashes'; tensions: Tension[]; gaps: string[]; decision: Round2Decision | null; round?: number; malformed?: number }
  /** After a critique round: the clashes one side conceded in it. */
  | { step: 'settled'; round: number; resolved: { id: string; by: string }[]; open: string[] }
  /** After the last critique round: whether the targeted exchange fires on the clashes still open. */
  | { step: 'decision'; decision: Round2Decision }
  | { step: 'targeted'; exchange: TargetedExchange }
  | { step: 'map'; result: TensionMapOutcome };

export type TensionMapOutcome = { status: 'ok'; map: TensionMap } | { status: 'failed'; error: string; gaps: string[] };
