import type { AgentSpec } from '../../config/preset-schema.js';
import { estimateMessagesTokens, fitPeers } from '../../protocol/context.js';
import { type Motion, type Side, type SpeechView, answerSpeechMessages, openingSpeechMessages, rulingMessages, rulingSchema, type RulingReply, type Sides } from '../../protocol/oxford.js';
import { type PeerView, retryMessages } from '../../protocol/prompts.js';
import { type Critique, critiqueSchemaFor, type Opening, openingSchema } from '../../protocol/schemas.js';
import type { CallRequest } from '../call/request.js';
import type { TurnRecord } from '../events.js';
import type { RecordedCalls } from '../run-types.js';
import type { Runner } from '../runner.js';
import type { StructuredOutcome } from '../structured-call.js';
import { askRound, type Prepared } from './ask-round.js';
import { critiqueQuality, critiqueTurnFrom, openingQuality, peerText, turnFrom } from './turns.js';

/**
 * Speeches for a side (`protocol.kind: oxford`): an opening made alone, and the answering
 * speeches (rebuttal, closing) that read the other side's last speeches, fitted to num_ctx; and
 * the judge's verdict over every speech. A round's speeches run together within the slots; a
 * speech recorded before an interruption that asked exactly this is read again, not asked.
 */

type Speech = Opening | Critique;

/** One phase's speeches: `prepare` builds each speaker's call (or its failed turn when the prompt cannot fit). */
export async function speechRound(runner: Runner, round: number, agents: AgentSpec[], prepare: (agent: AgentSpec) => Prepared<Opening> | Prepared<Critique>, upNext: string[], recorded?: RecordedCalls): Promise<TurnRecord[]> {
  const turnOf = (agent: AgentSpec, req: CallRequest<Speech>, outcome: StructuredOutcome<Speech>): TurnRecord =>
    req.stage === 'opening'
      ? turnFrom(agent, round, outcome as StructuredOutcome<Opening>, (v) => ({ position: v.position, confidence: v.confidence, opening: v, critique: null }))
      : critiqueTurnFrom(agent, round, outcome as StructuredOutcome<Critique>);
  const prepared = new Map(agents.map((agent) => [agent.id, prepare(agent) as Prepared<Speech>]));
  return askRound(runner, agents, prepared, turnOf, upNext, recorded);
}

/** An opening speech for `side`, stage `opening` in round 0. */
export function openingSpeech(runner: Runner, motion: Motion, side: Side, agent: AgentSpec): CallRequest<Opening> {
  const messages = openingSpeechMessages(motion, side, agent.persona);
  return {
    stage: 'opening',
    round: 0,
    agentId: agent.id,
    model: agent.model,
    messages,
    options: runner.callOptions(agent.model, agent.options, 'opening'),
    schema: openingSchema,
    material: { focus: `${agent.persona ?? ''}\n${motion.motion}` },
    quality: openingQuality(retryMessages(messages)),
  };
}

/** A rebuttal or closing for `side`, answering `others` (the other side's last speeches), stage `critique`. */
export function answerSpeech(runner: Runner, phase: 'rebuttal' | 'closing', round: number, motion: Motion, side: Side, agent: AgentSpec, own: TurnRecord | undefined, others: TurnRecord[]): Prepared<Critique> {
  const usable = others.filter((t) => t.status === 'ok' && t.position);
  const peers: PeerView[] = usable.map((t) => ({ agentId: t.agentId, position: runner.tally.pressure().dropReasoning ? (t.position ?? '') : peerText(t) }));
  const ownText = own?.status === 'ok' ? own.position : null;
  const options = runner.callOptions(agent.model, agent.options, 'critique');
  const build = (fitted: PeerView[]) => answerSpeechMessages(phase, motion, side, agent.persona, ownText, fitted);
  const fit = fitPeers(estimateMessagesTokens(build([])), peers, runner.agentPromptBudget(agent.model, options));
  if (!fit) {
    const error = `the ${phase} prompt does not fit num_ctx ${runner.numCtx[agent.model]} for ${agent.model} even with the other side's speeches shortened`;
    runner.warn(`${agent.id}, ${phase}: ${error}`);
    return { round, agentId: agent.id, model: agent.model, status: 'failed', position: null, confidence: null, opening: null, critique: null, error };
  }
  const truncation = fit.droppedChars > 0 ? `the other side's speeches shortened by ${fit.droppedChars} characters to fit num_ctx ${runner.numCtx[agent.model]}` : null;
  if (truncation) runner.warn(`${agent.id}, ${phase}: ${truncation}`);
  const otherIds = runner.preset.agents.filter((a) => others.some((t) => t.agentId === a.id)).map((a) => a.id);
  return {
    stage: 'critique',
    round,
    agentId: agent.id,
    model: agent.model,
    messages: build(fit.peers),
    options,
    schema: critiqueSchemaFor(
      peers.map((p) => p.agentId),
      otherIds,
    ),
    truncation,
    material: { focus: `${agent.persona ?? ''}\n${ownText ?? ''}` },
    // A thin speech is retried as a fresh opening for its side, kept as a speech that answers no one.
    quality: critiqueQuality(retryMessages(openingSpeechMessages(motion, side, agent.persona)), fit.peers.length),
  };
}

/** The judge's verdict over every usable speech, grouped by side and phase; speeches are shortened alike to fit. */
export async function judgeMotion(runner: Runner, round: number, motion: Motion, sides: Sides, speeches: SpeechView[]): Promise<StructuredOutcome<RulingReply>> {
  const model = runner.preset.judge.model;
  const options = runner.callOptions(model, runner.preset.judge.options, 'verdict', { temperature: 0 });
  const fit = fitPeers(estimateMessagesTokens(rulingMessages(motion, [])), speeches, runner.promptBudget(model, options));
  if (!fit) return { status: 'failed', error: `the speeches do not fit num_ctx ${runner.numCtx[model]} for the judge`, code: 'CONTEXT' };
  const fitted = fit.peers.map((p, i) => ({ ...speeches[i]!, ...p }));
  // Each side's best argument is named among its speakers who gave a usable speech, never one who made none.
  const named = { for: spoke(sides.for, speeches), against: spoke(sides.against, speeches) };
  const silent = (['for', 'against'] as const).filter((side) => named[side].length === 0);
  if (silent.length) return { status: 'failed', error: `the ${silent.join(' and the ')} side gave no usable speech, so no argument can be credited to it`, code: 'NO_SPEECH' };
  return runner.call({
    stage: 'verdict',
    round,
    agentId: 'judge',
    model,
    messages: rulingMessages(motion, fitted),
    options,
    schema: rulingSchema(named),
    // The verdict is the run's result, like a synthesis: the token budget never skips it.
    priority: 'essential',
    truncation: fit.droppedChars > 0 ? `speeches shortened by ${fit.droppedChars} characters for the judge` : null,
  });
}

/** The speakers of a side who gave at least one usable speech (`speeches` holds only usable ones). */
function spoke(side: string[], speeches: SpeechView[]): string[] {
  return side.filter((id) => speeches.some((s) => s.agentId === id));
}
