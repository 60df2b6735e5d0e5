import type { Preset } from '../config/preset-schema.js';
import { estimateMessagesTokens } from '../protocol/context.js';
import { type TranscriptRound, renderTranscript, synthesisMessages } from '../protocol/prompts.js';
import { type Synthesis, synthesisSchemaFor } from '../protocol/schemas.js';
import type { ChatMessage, SynthesisRecord } from './events.js';
import type { StructuredOutcome } from './structured-call.js';

/** How far round 0's reasoning is clipped, in characters, before the positions are: 0 leaves it out. */
const REASONING_STEPS = [1500, 600, 0];

/** The agents without a usable answer in the last round, with the reason the engine knows. */
export function failedAgentsOf(preset: Preset, last: TranscriptRound): { agent: string; reason: string }[] {
  return preset.agents
    .filter((a) => last.turns.find((t) => t.agentId === a.id)?.status !== 'ok')
    .map((a) => ({ agent: a.id, reason: last.turns.find((t) => t.agentId === a.id)?.error ?? 'no answer' }));
}

/**
 * The synthesizer's prompt for the transcript, fitted to `budget` tokens: round 0's reasoning is
 * clipped, then left out, before the positions themselves are clipped harder and harder.
 * `messages` is null when even the most clipped transcript does not fit.
 */
export function fitSynthesisPrompt(
  question: string,
  rounds: TranscriptRound[],
  agentIds: string[],
  failed: { agent: string; reason: string }[],
  extraSections: string[],
  budget: number,
): { messages: ChatMessage[] | null; clippedTo: number | null; reasoningTo: number | null } {
  let perTurn = Infinity;
  const build = (reasoning: number) => synthesisMessages(question, renderTranscript(rounds, perTurn, reasoning), agentIds, failed, extraSections);
  let messages = build(Infinity);
  let reasoningTo: number | null = null;
  for (const reasoning of REASONING_STEPS) {
    if (estimateMessagesTokens(messages) <= budget) break;
    reasoningTo = reasoning;
    messages = build(reasoning);
  }
  while (estimateMessagesTokens(messages) > budget && perTurn > 200) {
    perTurn = perTurn === Infinity ? 4000 : Math.floor(perTurn * 0.7);
    messages = build(0);
  }
  if (estimateMessagesTokens(messages) > budget) return { messages: null, clippedTo: perTurn, reasoningTo };
  return { messages, clippedTo: perTurn === Infinity ? null : perTurn, reasoningTo };
}

/** The schema the synthesizer gets: panelist ids, the rounds held and the panel size bound its fields. */
export function synthesisSchemaOf(preset: Preset, lastRound: number, collisionIds: readonly string[] = []) {
  return synthesisSchemaFor(
    preset.agents.map((a) => a.id),
    lastRound,
    collisionIds,
  );
}

/** The synthesis as recorded: the engine's list of failed agents wins over the model's. */
export function synthesisRecordOf(outcome: StructuredOutcome<Synthesis>, failed: { agent: string; reason: string }[], model: string): SynthesisRecord {
  if (outcome.status !== 'ok') return { status: 'failed', model, synthesis: null, error: outcome.error };
  return { status: 'ok', model, synthesis: { ...outcome.value, failedAgents: mergeFailed(outcome.value.failedAgents, failed) }, error: null };
}

/** The engine knows which agents failed; the synthesizer's list is kept only for agents it adds reasons to. */
function mergeFailed(fromModel: Synthesis['failedAgents'], known: { agent: string; reason: string }[]): Synthesis['failedAgents'] {
  return known.map((k) => ({ agent: k.agent, reason: k.reason || fromModel.find((f) => f.agent === k.agent)?.reason || 'no answer' }));
}

/**
 * Keeps the minority positions the transcript can back: the grammar bounds a position's agent and
 * round to the panel and the rounds held, not to the turns that were usable, so a synthesizer may
 * credit an argument to an agent that failed that round. Those are dropped, each with a note on the
 * call. `rounds`: what the synthesizer read.
 */
export function keepSpokenMinorities(rounds: readonly { round: number; turns: readonly { agentId: string; status: string }[] }[]): (reply: Synthesis) => string[] {
  const spoke = new Set(rounds.flatMap((r) => r.turns.filter((t) => t.status === 'ok').map((t) => `${t.agentId}@${r.round}`)));
  return (reply) => {
    const notes: string[] = [];
    reply.minorityPositions = reply.minorityPositions.filter((m) => {
      if (spoke.has(`${m.agent}@${m.round}`)) return true;
      notes.push(`minorityPositions: the position credited to ${m.agent} in round ${m.round} was dropped; ${m.agent} gave no usable answer that round`);
      return false;
    });
    return notes;
  };
}
