import { estimateMessagesTokens } from '../../protocol/context.js';
import { type StatedConstraint, constraintSection, mergeConstraints, statedInRounds } from '../../protocol/constraints.js';
import type { TranscriptRound } from '../../protocol/prompts.js';
import { type Synthesis, synthesisSchemaFor } from '../../protocol/schemas.js';
import type { ChatMessage, Stage, SynthesisRecord } from '../events.js';
import type { Runner } from '../runner.js';
import { fitSynthesisPrompt, keepSpokenMinorities, synthesisRecordOf } from '../synthesis.js';
import { reportedCall } from './reported-call.js';

/**
 * The synthesizer reads the given rounds (clipping each turn harder until they fit) and
 * `extraSections`, and writes the attributed answer that keeps dissent. Of `panel` (default:
 * every agent), those without a usable turn in the last round are listed as failed.
 */
export async function synthesize(runner: Runner, rounds: readonly TranscriptRound[], extraSections: string[] = [], panel: string[] = runner.preset.agents.map((a) => a.id)): Promise<SynthesisRecord> {
  const model = runner.preset.synthesizer.model ?? '';
  const options = runner.callOptions(model, runner.preset.synthesizer.options, 'synthesis', { temperature: 0.2 });
  const last = rounds.at(-1)!;
  const failed = panel
    .filter((id) => last.turns.find((t) => t.agentId === id)?.status !== 'ok')
    .map((id) => ({ agent: id, reason: last.turns.find((t) => t.agentId === id)?.error ?? 'no answer' }));
  const budget = runner.promptBudget(model, options);
  const merge = mergeStated(runner, 'synthesis', statedInRounds(rounds, panel));
  const sections = [...briefSection(runner), ...extraSections, ...(merge?.section ? [merge.section] : [])];
  const fit = fitSynthesisPrompt(runner.question, [...rounds], panel, failed, sections, budget);
  if (!fit.messages) {
    const result: SynthesisRecord = { status: 'failed', model, synthesis: null, error: `the transcript does not fit num_ctx ${runner.numCtx[model]} for ${model}` };
    runner.emit({ type: 'synthesis.finished', result, at: runner.now() });
    return result;
  }
  const cuts = [
    ...(fit.reasoningTo === null ? [] : [fit.reasoningTo === 0 ? "round 0's reasoning left out" : `round 0's reasoning clipped to ${fit.reasoningTo} characters`]),
    ...(fit.clippedTo === null ? [] : [`each turn clipped to ${fit.clippedTo} characters`]),
  ];
  const truncation = cuts.length ? `${cuts.join(', ')} to fit num_ctx ${runner.numCtx[model]}` : null;
  return writeSynthesis(runner, 'synthesis', last.round, 'synthesizer', model, fit.messages, options, budget, truncation, failed, merge?.collisionIds, keepSpokenMinorities(rounds));
}

/** The run's brief (the advisor's classification, or the preset's own) as a section for the synthesizer or the reassembly. */
export function briefSection(runner: Runner): string[] {
  return runner.preset.protocol.brief ? [`How this question was framed before the panel started:\n${runner.preset.protocol.brief}`] : [];
}

/**
 * Merges what the agents stated (typed constraints and trade-offs) with the user's constraints,
 * records the merge as a step, and returns the prompt section and the collision ids the
 * synthesis must resolve; null when neither the user nor any agent stated anything. The
 * user's constraints reach the synthesizer even when no agent restated them.
 */
export function mergeStated(
  runner: Runner,
  stage: 'synthesis' | 'reassembly',
  stated: { constraints: { author: string; constraint: StatedConstraint }[]; tradeOffs: { agentId: string; tradeOff: string }[] },
): { section: string | null; collisionIds: string[] } | null {
  if (stated.constraints.length === 0 && stated.tradeOffs.length === 0 && (runner.preset.constraints ?? []).length === 0) return null;
  const merge = mergeConstraints(stated.constraints, runner.preset.constraints ?? []);
  runner.step({ kind: 'constraints', stage, constraints: merge.constraints, collisions: merge.collisions, tradeOffs: stated.tradeOffs });
  return { section: constraintSection(merge), collisionIds: merge.collisions.map((c) => c.id) };
}

/**
 * A synthesis-shaped answer written by `agentId` from prepared messages (the synthesizer's,
 * or a decomposer's reassembly); reported as the run's synthesis.
 */
export async function writeSynthesis(
  runner: Runner,
  stage: Stage,
  round: number,
  agentId: string,
  model: string,
  messages: ChatMessage[],
  options: Record<string, unknown>,
  budget: number,
  truncation: string | null,
  failed: { agent: string; reason: string }[],
  collisionIds: string[] = [],
  normalize?: (reply: Synthesis) => string[],
): Promise<SynthesisRecord> {
  if (estimateMessagesTokens(messages) > budget) {
    const result: SynthesisRecord = { status: 'failed', model, synthesis: null, error: `the transcript does not fit num_ctx ${runner.numCtx[model]} for ${model}` };
    runner.emit({ type: 'synthesis.finished', result, at: runner.now() });
    return result;
  }
  if (truncation) runner.warn(`${stage}: ${truncation}`);
  const schema = synthesisSchemaFor(
    runner.preset.agents.map((a) => a.id),
    round,
    collisionIds,
  );
  // The synthesizer's reply and the synthesis read from it are written together.
  return reportedCall(runner, { stage, round, agentId, model, messages, options, schema, truncation, priority: 'essential', ...(normalize ? { normalize } : {}) }, (outcome) => {
    const result = synthesisRecordOf(outcome, failed, model);
    return { value: result, events: [{ type: 'synthesis.finished', result, at: runner.now() }] };
  });
}
