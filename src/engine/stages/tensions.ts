import type { Preset, TensionsSpec } from '../../config/preset-schema.js';
import { clashMessages, claimsMessages, mapMessages, tensionSynthesisSection } from '../../protocol/tension-prompts.js';
import {
  type ClashBoard,
  type RawClash,
  type Round2Decision,
  type Tension,
  type TargetedExchange,
  type TensionUpdate,
  agentPairs,
  answerText,
  answerTokens,
  assembleTensionMap,
  batchPairs,
  bySeverity,
  claimsFromAnswer,
  claimsReplySchema,
  clashFormatFor,
  clashReplySchemaFor,
  falseConsensusReview,
  mapDraftSchemaFor,
  misnamedClashProblem,
  normalizeClashReply,
  hedgedHeadline,
  normalizeMapDraft,
  numberClaims,
  parseTensionMap,
  round2Decision,
  round2Outcome,
  round2Question,
  tensionsFromClashes,
} from '../../protocol/tensions.js';
import { TENSION_MAP_AGENT } from '../../protocol/tension-order.js';
import type { TurnRecord } from '../events.js';
import type { ExtraStage, StageContext, StageOutput } from '../stage.js';
import { isOutage } from '../call/outage.js';
import { plural } from '../../plural.js';
import { targetedTurn } from './targeted-turn.js';

/** The model that reads claims, compares them and draws the map: the preset's choice, else the judge's. */
export function tensionModel(preset: Preset): string {
  return preset.tensions?.model ?? preset.judge.model;
}

/** Whether the preset maps tensions. */
export function mapsTensions(preset: Preset): boolean {
  return preset.tensions?.enabled === true;
}

/**
 * The tension map (seed 000): each agent's load-bearing claims, every pair of agents
 * compared in batched clash calls, a targeted exchange for the worst clash still open
 * when the rule fires, then the map, validated, with the false-consensus guard's verdict.
 * A debate maps the clashes on the round-0 answers (`mapClashes`, before the first
 * critique round) and hands the board on in `ctx.clashes`; other protocols map their
 * final answers here. A map that cannot be drawn is recorded as failed; the debate goes on.
 * A call of the stage that never reached its host ends the stage with nothing drawn from it:
 * that is an outage, the run stops `interrupted` at its next checkpoint, and `resume` asks again.
 */
/** The stage's name, by which a protocol that runs it alone picks it. */
export const TENSION_STAGE = 'tension map';

export function tensionStage(): ExtraStage {
  return {
    name: TENSION_STAGE,
    enabled: mapsTensions,
    models: (preset) => [tensionModel(preset)],
    run: (ctx) => runTensionStage(ctx),
  };
}

function reporter(ctx: StageContext): (update: TensionUpdate) => void {
  return (update) => ctx.emit({ type: 'tensions.update', update, at: ctx.now() });
}

/**
 * Steps 1 and 2 of the map on the last of `ctx.rounds`: claims, then clashes. Null when the
 * run stopped, when a claims or clash call never reached its host, or when fewer than two
 * agents gave claims (the map is then recorded as failed). A call that never reached its host
 * is an outage, not a gap: the run stops `interrupted` at its next checkpoint and `resume`
 * maps the board again, so after a claims call's outage no clash is looked for on the part of
 * the panel that is left. `recorded` holds, by agent, the claims that a resumed run read from
 * the claims calls that ended ok before the interruption: those agents are not asked again.
 */
export async function mapClashes(ctx: StageContext, recorded?: ReadonlyMap<string, readonly string[]>): Promise<ClashBoard | null> {
  const spec: TensionsSpec = ctx.preset.tensions!;
  const model = tensionModel(ctx.preset);
  const options = { temperature: 0, ...spec.options };
  const last = ctx.rounds.at(-1);
  if (!last) return null;
  const round = last.round;
  const report = reporter(ctx);
  const stopped = (): boolean => ctx.signal?.aborted === true;

  // 1. Claims: from the structured answer when it lists them, else one call per agent.
  const finals = ctx.preset.agents
    .map((agent) => ({ agent, turn: last.turns.find((t) => t.agentId === agent.id && t.status === 'ok' && t.position) }))
    .filter((x): x is { agent: (typeof ctx.preset.agents)[number]; turn: TurnRecord } => x.turn !== undefined);
  const opening = (id: string): TurnRecord | null => ctx.rounds[0]?.turns.find((t) => t.agentId === id) ?? null;
  const answers = finals.map(({ agent, turn }) => ({ agent, text: answerText(turn, opening(agent.id)), turn }));
  const tokens = answerTokens(answers.map((a) => a.text));
  const gaps: string[] = [];
  // One usable answer has nothing to clash with: no claims call is worth its tokens.
  if (answers.length < 2) {
    report({ step: 'claims', agents: [], claims: [], gaps: [], answerTokens: tokens, pairs: 0, clashCalls: 0, round });
    const who = answers.length ? `only ${answers[0]!.agent.id}` : 'no agent';
    report({ step: 'map', result: { status: 'failed', error: `${who} gave a usable answer; a map needs two or more`, gaps } });
    return null;
  }
  let unreached = false;
  const perAgent = await Promise.all(
    answers.map(async ({ agent, text, turn }) => {
      const listed = claimsFromAnswer(turn.opening ?? turn.critique);
      if (listed) return { agentId: agent.id, texts: listed.slice(0, spec.maxClaimsPerAgent), source: 'answer' as const };
      const reread = recorded?.get(agent.id);
      if (reread) return { agentId: agent.id, texts: [...reread], source: 'model' as const };
      const outcome = await ctx.call({
        stage: 'claims',
        round,
        agentId: agent.id,
        model,
        messages: claimsMessages(ctx.question, agent.id, text, spec.maxClaimsPerAgent),
        options,
        schema: claimsReplySchema(spec.maxClaimsPerAgent),
        maxTokens: 150 + 90 * spec.maxClaimsPerAgent,
      });
      if (outcome.status !== 'ok') {
        if (isOutage(outcome)) unreached = true;
        gaps.push(`no claims from ${agent.id} (${outcome.error})`);
        return null;
      }
      return { agentId: agent.id, texts: [...new Set(outcome.value.claims.map((c) => c.trim()).filter(Boolean))], source: 'model' as const };
    }),
  );
  const claims = numberClaims(perAgent.filter((x): x is NonNullable<typeof x> => x !== null && x.texts.length > 0));
  const mapped = [...new Set(claims.map((c) => c.agentId))];
  const pairs = agentPairs(mapped);
  const batches = batchPairs(pairs, spec.pairsPerCall);
  report({ step: 'claims', agents: mapped, claims, gaps: [...gaps], answerTokens: tokens, pairs: pairs.length, clashCalls: batches.length, round });
  // A host that could not be reached says nothing of the agent: comparing the others now would
  // turn the outage into a board that leaves that agent out, or into a failed map.
  if (stopped() || unreached) return null;
  const claimGaps = gaps.length;
  if (mapped.length < 2) {
    report({ step: 'map', result: { status: 'failed', error: `claims came from ${plural(mapped.length, 'agent')}; a map needs two or more`, gaps } });
    return null;
  }

  // 2. Clashes: pairs in batches, each reply checked against the claims and pairs it was given.
  // The format sent holds each clash to a listed pair, one claim from each side. A server that did not
  // enforce it may still pit two claims of one panelist, or a pair not asked about: such a clash is
  // dropped, the reply is sent back once naming it, and what the kept reply still drops is counted.
  const byId = new Map(claims.map((c) => [c.id, c]));
  const dropped = new WeakMap<object, string[]>();
  const replies = await Promise.all(
    batches.map((batch, i) =>
      ctx
        .call({
          stage: 'clash',
          round,
          agentId: `clash-${i + 1}`,
          model,
          messages: clashMessages(ctx.question, claims, batch),
          options,
          schema: clashReplySchemaFor(claimIdsOf(claims, batch)),
          format: clashFormatFor(batch.map(([x, y]) => [claims.filter((c) => c.agentId === x).map((c) => c.id), claims.filter((c) => c.agentId === y).map((c) => c.id)] as const)),
          normalize: (reply) => {
            const notes = normalizeClashReply(reply, byId, batch);
            dropped.set(reply, notes);
            return notes;
          },
          check: (reply) => misnamedClashProblem(dropped.get(reply) ?? []),
          maxTokens: 300 + 250 * batch.length,
        })
        .then((outcome) => ({ batch, outcome })),
    ),
  );
  const raw: RawClash[] = [];
  let pairsCompared = 0;
  let malformed = 0;
  for (const { batch, outcome } of replies) {
    if (isOutage(outcome)) unreached = true;
    if (outcome.status === 'ok') {
      raw.push(...outcome.value.clashes);
      malformed += dropped.get(outcome.value)?.length ?? 0;
      pairsCompared += batch.length;
    } else {
      gaps.push(`pairs ${batch.map(([a, b]) => `${a}–${b}`).join(', ')} not compared (${outcome.error})`);
    }
  }
  const tensions: Tension[] = tensionsFromClashes(raw, byId, mapped);
  // The claims step reported its own gaps: this step lists only the pairs it could not compare.
  report({ step: 'clashes', tensions, gaps: gaps.slice(claimGaps), decision: null, round, ...(malformed ? { malformed } : {}) });
  // Pairs left uncompared by an outage are no finding: nothing is drawn from this board, and `resume` maps it again.
  if (stopped() || unreached) return null;
  return { round, agents: mapped, claims, tensions, gaps, answerTokens: tokens, pairsTotal: pairs.length, pairsCompared, ...(malformed ? { malformedClashes: malformed } : {}) };
}

async function runTensionStage(ctx: StageContext): Promise<StageOutput> {
  const spec: TensionsSpec = ctx.preset.tensions!;
  const model = tensionModel(ctx.preset);
  const options = { temperature: 0, ...spec.options };
  const report = reporter(ctx);
  const stopped = (): boolean => ctx.signal?.aborted === true;
  // A debate mapped its clashes on the round-0 answers; otherwise map the final answers now.
  const board = ctx.clashes === undefined ? await mapClashes(ctx) : ctx.clashes;
  if (!board || stopped()) return {};
  const { agents: mapped, claims, gaps, answerTokens: tokens, pairsCompared, malformedClashes } = board;
  const round = ctx.rounds.at(-1)?.round ?? board.round;
  let tensions = board.tensions;

  // 3. Targeted exchange: only for a clash still open, and only its two agents, each facing the other's exact claim.
  const decision: Round2Decision = spec.round2.enabled
    ? round2Decision(tensions, spec.round2)
    : { fire: false, qualifying: [], target: null, reason: 'the targeted exchange is switched off in the preset' };
  report({ step: 'decision', decision });
  let exchange: TargetedExchange | null = null;
  const target = decision.fire ? decision.target : null;
  if (target) {
    const asked = await Promise.all([target.agentA, target.agentB].map((id) => targetedTurn(ctx, target, id, round)));
    // A side that never reached its host did not answer: no outcome is drawn from its silence.
    if (asked.some((a) => a.unreached)) return {};
    const turns = asked.map((a) => a.turn);
    const outcome = round2Outcome(turns[0]?.reply?.stance ?? null, turns[1]?.reply?.stance ?? null);
    exchange = { tensionId: target.id, agents: [target.agentA, target.agentB], question: round2Question(target), reason: decision.reason, turns, outcome };
    report({ step: 'targeted', exchange });
    tensions = tensions.map((t) => (t.id === target.id ? { ...t, resolution: outcome } : t));
    if (stopped()) return {};
  }

  // 4. The map: consensus and synthesis from the model, tensions as detected, checked as a whole.
  const draft = await ctx.call({
    stage: 'clash',
    round,
    agentId: TENSION_MAP_AGENT,
    model,
    messages: mapMessages(ctx.question, mapped, claims, tensions, exchange),
    options,
    schema: mapDraftSchemaFor(mapped),
    normalize: (d) => normalizeMapDraft(d, { agents: mapped, round2Outcome: exchange?.outcome ?? null, round2Question: exchange?.question ?? null }),
    // A headline that hedges is sent back once; the repaired map is kept even if it still hedges, noted.
    check: (d) => hedgedHeadline(d.headline),
    maxTokens: 1500,
  });
  // A map call that never reached its host is an outage, not a failed map: the run stops interrupted and `resume` draws it.
  if (stopped() || isOutage(draft)) return {};
  if (draft.status !== 'ok') {
    report({ step: 'map', result: { status: 'failed', error: `the map could not be drawn: ${draft.error}`, gaps } });
    return { synthesisContext: tensions.length ? [detectedOnlySection(tensions)] : [] };
  }
  const confidence = Object.fromEntries(draft.value.confidence.map((c) => [c.agent, c.confidence]));
  // Contested: the judge scored round 0 below the threshold (the panel did not start out agreeing).
  const opening = ctx.rounds.find((r) => r.round === 0)?.judgement?.convergence;
  const contested = opening === null || opening === undefined ? undefined : opening < ctx.preset.protocol.convergenceThreshold;
  const review = falseConsensusReview(
    { answerTokens: tokens, tensions, confidence, gaps, malformedClashes: malformedClashes ?? 0, claims, consensus: draft.value.consensus, ...(contested === undefined ? {} : { contested }) },
    spec.guard,
  );
  const map = assembleTensionMap({
    debateId: ctx.debateId,
    generatedAt: ctx.now(),
    agents: mapped,
    claims,
    tensions,
    draft: draft.value,
    exchange,
    review,
    pairsCompared,
    pairsTotal: board.pairsTotal,
    gaps,
  });
  const checked = parseTensionMap(map, { agents: ctx.preset.agents.map((a) => a.id), claimIds: claims.map((c) => c.id) });
  if (!checked.ok) {
    report({ step: 'map', result: { status: 'failed', error: `the assembled map is invalid: ${checked.problems.join('; ')}`, gaps } });
    return { synthesisContext: tensions.length ? [detectedOnlySection(tensions)] : [] };
  }
  report({ step: 'map', result: { status: 'ok', map: checked.map } });
  return { synthesisContext: [tensionSynthesisSection(checked.map, exchange)] };
}

/** The ids of the claims of the agents in a batch of pairs: all a clash call may cite. */
function claimIdsOf(claims: readonly { id: string; agentId: string }[], batch: readonly (readonly [string, string])[]): string[] {
  const agents = new Set(batch.flat());
  return claims.filter((c) => agents.has(c.agentId)).map((c) => c.id);
}

/** When the map fails, the synthesizer still sees the clashes that were found, marked as such. */
function detectedOnlySection(tensions: Tension[]): string {
  const lines = ['Clashes found between panelists (the tension map itself could not be drawn):'];
  for (const t of bySeverity(tensions)) {
    lines.push(`- ${t.id} ${t.type}, severity ${t.severity}: ${t.agentA} holds "${t.claimA}"; ${t.agentB} holds "${t.claimB}". ${t.recommendation}`);
  }
  lines.push('Keep these conflicts in your answer; do not describe the panel as agreeing on them.');
  return lines.join('\n');
}
