import { neverReached } from './call/outage.js';
import type { Preset } from '../config/preset-schema.js';
import { DebateFailedError, InputError, InterruptedError } from '../errors.js';
import type { TranscriptRound } from '../protocol/prompts.js';
import type { SchedulePlan } from '../schedule/plan.js';
import type { StoredDebate } from '../store/store.js';
import type { ResumePoint } from './recorder.js';
import { agentPairs, answerText, answerTokens, batchPairs, type ClashBoard } from '../protocol/tensions.js';
import { protocolFor } from './protocols/index.js';
import { type FallbackStep, fallbackTurn, needsFallback } from './primitives/fallback.js';
import { type DebateResult, type RecordedCalls, type RunDebateOptions, Runner } from './runner.js';
import { builtinStages } from './stages.js';
import { reuseClaims, reuseClashes } from './primitives/clashes.js';
import { RESUMABLE_PROTOCOLS, modelChanged, resumableList } from './resumable.js';

export interface ResumePlan {
  /** The preset as run, with each model's num_ctx pinned to the one the debate ran with. */
  preset: Preset;
  /** The complete rounds reused, oldest first. */
  from: TranscriptRound[];
  /**
   * Calls of the round after `from` (left incomplete) that ended ok, by debater: their turns
   * are read from these replies, and only the other debaters are asked.
   */
  recorded: RecordedCalls;
  /**
   * The clashes mapped on the round-0 answers before the interruption, read back from the record
   * with every clash open (the reused rounds settle them again); undefined when none were mapped
   * to the end, so the resumed run maps them.
   */
  clashes?: ClashBoard;
  /**
   * When no board is reused because a claims or clash call was cut off or never reached its
   * host: the claims that each claims call which finished gave, by agent. The resumed run maps
   * the board again and asks claims only of the other agents.
   */
  claims?: ReadonlyMap<string, readonly string[]>;
  point: ResumePoint;
}

/**
 * What a resumed run starts from, or an InputError saying why the debate cannot be resumed.
 * Complete rounds are those where every debater's turn was recorded; the judge's score is
 * asked again only for the last of them when it was not recorded.
 */
export function planResume(d: StoredDebate): ResumePlan {
  if (d.status !== 'interrupted') {
    const why =
      d.status === 'running'
        ? `it is still running (process ${d.pid} on ${d.hostname})`
        : `it is ${d.status}${d.exitReason ? ` (${d.exitReason})` : ''}: there is nothing left to run`;
    throw new InputError('DEBATE_NOT_RESUMABLE', `Debate \`${d.id}\` cannot be resumed: ${why}.`, {
      hint: 'Only an interrupted debate (killed, stopped with Ctrl-C, or cut off from its host) can be resumed. Run `conclave list --status interrupted`.',
    });
  }
  const kind = (d.preset.protocol as { kind?: string }).kind ?? 'debate';
  if (!RESUMABLE_PROTOCOLS.has(kind)) {
    throw new InputError('PROTOCOL_NOT_RESUMABLE', `Debate \`${d.id}\` ran the ${kind} protocol, which cannot go on from a stored point.`, {
      hint: `Resume works for the ${resumableList()} protocols. Run the question again with \`conclave run\`.`,
    });
  }
  const debaters = d.agents.filter((a) => a.role === 'debater').map((a) => a.id);
  // Each debater's calls in a round, oldest first: round 0 holds the answers, later rounds the critiques.
  const callsOf = (round: number) => d.calls.filter((c) => c.round === round && c.stage === (round === 0 ? 'opening' : 'critique') && debaters.includes(c.agentId));
  const from: TranscriptRound[] = [];
  for (let round = 0; ; round++) {
    const turns = d.turns.filter((t) => t.round === round);
    // A round is complete when every debater's turn is recorded and one at least is usable: a round
    // whose every call failed (its host went down) is asked again, and so is one in which a
    // debater's last call was cut off by the interruption or never reached its host (its turn is
    // no answer of the model).
    const lastCall = new Map(callsOf(round).map((c) => [c.agentId, c]));
    // The judge's score counts the same way: "no score" because its call never reached a model is asked again.
    const lastJudge = d.calls.filter((c) => c.round === round && c.stage === 'judge').at(-1);
    const cutOff = [...lastCall.values(), ...(lastJudge ? [lastJudge] : [])].some((c) => c.status === 'aborted' || neverReached(c));
    if (turns.length === 0 || !debaters.every((id) => turns.some((t) => t.agentId === id)) || !turns.some((t) => t.status === 'ok') || cutOff) break;
    const judgement = d.rounds.find((r) => r.round === round) ?? null;
    // The round's recorded stances, so the next round's moves are measured from them.
    const stances = d.steps?.map((s) => s.step).find((s) => s.kind === 'stances' && s.round === round);
    // A seat the orchestrator filled reads as its fallback again, as it did when the round ran.
    const filled = (d.steps ?? []).map((s) => s.step).filter((s): s is FallbackStep => s.kind === 'fallback' && s.round === round && s.status === 'ok');
    const seated = turns.map((t) => {
      const f = filled.find((s) => s.agentId === t.agentId);
      return f && needsFallback(t) ? fallbackTurn(f, t) : t;
    });
    from.push({ round, turns: seated, judgement: judgement && stances?.kind === 'stances' ? { ...judgement, stances: (({ kind: _, ...rest }) => rest)(stances) } : judgement });
  }
  // The round left incomplete: each debater's last call in it that ended ok.
  const recorded = new Map(callsOf(from.length).filter((c) => c.status === 'ok').map((c) => [c.agentId, c]));
  const judged = from.filter((r) => r.judgement !== null);
  const convergences = judged.map((r) => r.judgement!.convergence).filter((c): c is number => c !== null);
  // A Delphi run on a numeric question judges no round: its own steps count the rounds it held.
  const fromRound = from.at(-1)?.round ?? -1;
  const delphiRounds = (d.steps ?? []).map((s) => s.step).flatMap((s) => (s.kind === 'delphi' && s.round <= fromRound ? [s.round] : []));
  return {
    preset: pinNumCtx(d.preset, d.plan as SchedulePlan | null),
    from,
    recorded,
    ...(from.length > 0 ? recordedClashes(d, from[0]!) : {}),
    point: {
      fromRound,
      roundsCompleted: Math.max(judged.at(-1)?.round ?? 0, ...delphiRounds),
      finalConvergence: convergences.at(-1) ?? null,
    },
  };
}

/**
 * The clash board a debate mapped on its round-0 answers, as recorded: its claims, every clash
 * batch's call finished, the clashes found. Its claim and clash calls are not sent again. A
 * claims or clash call cut off by the interruption, or one that never reached its host, left
 * the board unfinished, not a gap: it is mapped again, reading the claims of the claims calls
 * that finished (`claims`), so that only the others are asked.
 */
function recordedClashes(d: StoredDebate, opening: TranscriptRound): Pick<ResumePlan, 'clashes' | 'claims'> {
  const spec = d.preset.tensions;
  const stored = d.tensions;
  if (!spec?.enabled || !stored || (stored.earlyRound ?? 0) !== opening.round) return {};
  const round = opening.round;
  const agents = stored.agents;
  const pairs = agentPairs(agents);
  const batches = batchPairs(pairs, spec.pairsPerCall);
  const lastCall = (stage: string, agentId: string) => d.calls.filter((c) => c.stage === stage && c.round === round && c.agentId === agentId).at(-1);
  const unfinished = (c: StoredDebate['calls'][number]): boolean => c.status === 'aborted' || neverReached(c);
  const debaters = d.agents.filter((a) => a.role === 'debater').map((a) => a.id);
  const claimsCalls = debaters.flatMap((id) => lastCall('claims', id) ?? []);
  const clashCalls = batches.map((_, i) => lastCall('clash', `clash-${i + 1}`));
  // Every claims call must have been answered or refused by a model, and every batch asked to the end.
  if (agents.length < 2 || claimsCalls.some(unfinished) || clashCalls.some((c) => !c || unfinished(c))) {
    const claims = new Map(claimsCalls.filter((c) => c.status === 'ok').map((c) => [c.agentId, stored.claims.filter((x) => x.agentId === c.agentId && x.source === 'model').map((x) => x.text)]));
    return claims.size > 0 ? { claims } : {};
  }
  const gaps = d.agents
    .filter((a) => a.role === 'debater' && !agents.includes(a.id))
    .flatMap((a) => {
      const call = lastCall('claims', a.id);
      return call && call.status !== 'ok' ? [`no claims from ${a.id} (${call.error ?? call.status})`] : [];
    });
  let pairsCompared = 0;
  batches.forEach((batch, i) => {
    const call = clashCalls[i];
    if (call?.status === 'ok') pairsCompared += batch.length;
    else gaps.push(`pairs ${batch.map(([a, b]) => `${a}–${b}`).join(', ')} not compared (${call?.error ?? 'not asked'})`);
  });
  const texts = opening.turns.filter((t) => agents.includes(t.agentId) && t.status === 'ok').map((t) => answerText(t, t));
  const tensions = stored.tensions.map(({ resolvedInRound: _r, concededBy: _c, ...t }) => ({ ...t, resolution: 'open' as const }));
  return { clashes: { round, agents, claims: stored.claims, tensions, gaps, answerTokens: answerTokens(texts), pairsTotal: pairs.length, pairsCompared } };
}

/** The preset with every model's num_ctx set to the plan's, so the resumed run sizes nothing anew. */
function pinNumCtx(preset: Preset, plan: SchedulePlan | null): Preset {
  const numCtx = new Map((plan?.models ?? []).map((m) => [m.model, m.numCtx]));
  const pin = <T extends { model?: string; options?: Record<string, unknown> }>(role: T): T => {
    const n = role.model ? numCtx.get(role.model) : undefined;
    return n === undefined ? role : { ...role, options: { ...role.options, num_ctx: n } };
  };
  return { ...preset, agents: preset.agents.map(pin), judge: pin(preset.judge), synthesizer: pin(preset.synthesizer) } as Preset;
}

/**
 * Goes on with an interrupted debate from its last complete round, under its own id and
 * preset as run: stored turns and scores are reused, never asked again, and so are the
 * calls that finished in the round left incomplete. Pass a recorder
 * made with `recorder(store, { resume: plan.point })`, which marks the record as resumed.
 */
export async function resumeDebate(
  stored: StoredDebate,
  opts: Omit<RunDebateOptions, 'question' | 'preset' | 'id'>,
  plan: ResumePlan = planResume(stored),
): Promise<DebateResult> {
  const protocol = protocolFor((plan.preset.protocol as { kind?: Parameters<typeof protocolFor>[0] }).kind);
  const stages = (opts.stages ?? builtinStages()).filter((s) => s.enabled(plan.preset));
  const shape = protocol.shape(plan.preset, stages);
  // The same material the panel read before the interruption, from the record.
  const runner = await Runner.start({ ...opts, question: stored.question, preset: plan.preset, attachments: stored.attachments ?? [], tokensSpent: spentBy(stored) }, stored.id, {
    ...shape,
    support: shape.support.filter((m) => m !== ''),
    synthesisModels: shape.synthesisModels.filter((m) => m !== ''),
    synthesizer: null,
    checkModels: sameModels(stored),
  });
  if (plan.clashes) reuseClashes(runner, plan.clashes);
  else if (plan.claims) reuseClaims(runner, plan.claims);
  try {
    return runner.complete(await protocol.run(runner, plan.from, plan.recorded));
  } catch (err) {
    if (err instanceof DebateFailedError || err instanceof InterruptedError) throw err;
    if (runner.interrupted()) runner.stopInterrupted();
    throw err;
  }
}

/**
 * Refuses to go on with a model that is not the one the debate ran: its record names each agent's
 * model by digest (an embedded model by its file's sha256), and answers of another model would be
 * recorded under it.
 */
function sameModels(stored: StoredDebate): (digestOf: (model: string) => string | null) => void {
  return (digestOf) => {
    for (const agent of stored.agents) {
      const now = agent.digest && agent.model ? digestOf(agent.model) : null;
      if (!now || now === agent.digest) continue;
      throw modelChanged(agent.model, stored.id, agent.digest!, now, 'ask the question again with `conclave run`');
    }
  };
}

/** Prompt plus reply tokens of the calls recorded so far, as the budget counted them. */
function spentBy(stored: StoredDebate): number {
  return stored.calls.reduce((sum, c) => sum + (c.budget?.actual ?? (c.metrics.promptTokens ?? 0) + (c.metrics.completionTokens ?? 0)), 0);
}
