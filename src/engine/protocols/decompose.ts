import type { AgentSpec } from '../../config/preset-schema.js';
import { estimateMessagesTokens, fitPeers } from '../../protocol/context.js';
import { blockedBy, fallbackMessages, planSubQuestions, reassemblyMessages, splitMessages, splitSchema, subAnswerMessages, type SubQuestion } from '../../protocol/decompose.js';
import { type PeerView, type TranscriptRound, retryMessages } from '../../protocol/prompts.js';
import { openingSchema } from '../../protocol/schemas.js';
import type { ProtocolStep } from '../protocol-events.js';
import type { ProtocolOutcome, Runner } from '../runner.js';
import { openingQuality } from '../primitives/turns.js';
import type { Protocol } from './types.js';
import { runStages } from '../primitives/optional-stages.js';
import type { TurnRecord } from '../events.js';
import { TENSION_STAGE } from '../stages/tensions.js';
import { briefSection, mergeStated, writeSynthesis } from '../primitives/synthesize.js';

type SubAnswer = Extract<ProtocolStep, { kind: 'subanswer' }>;

/**
 * Hierarchical decomposition: the decomposer (`protocol.decomposer`, default the first agent)
 * splits the question into sub-questions, each naming the earlier ones it depends on. The
 * other agents take them in turn. Independent sub-questions run at once; a dependent one
 * starts when its dependencies are answered, with their answers in its prompt (shortened to
 * fit its num_ctx). When an assignee gives no usable answer, the decomposer writes a fallback
 * analysis of that part, marked as such, and the parts after it run on that; a part is skipped,
 * with the reason, only when a dependency has neither. The decomposer then reassembles the
 * answer from every sub-answer. When the preset maps tensions, the clashes between the parts are
 * mapped before the reassembly (each agent's parts read as its answer), and the decomposer reads
 * the map with them. No judge and no synthesizer.
 * Calls: 1 split, k sub-answers (k ≤ protocol.maxSubQuestions), 1 fallback per failed part, the
 * tension map (docs/tensions.md), 1 reassembly.
 */
export const decompose: Protocol = {
  kind: 'decompose',
  shape: (preset, stages) => ({
    support: [],
    synthesisModels: [decomposerOf(preset.agents, preset.protocol.decomposer).model],
    usesJudge: false,
    // The tension map alone, on the parts: there are no final positions to vote on.
    stages: stages.filter((s) => s.name === TENSION_STAGE),
  }),
  run: runDecompose,
};

function decomposerOf(agents: AgentSpec[], id: string | undefined): AgentSpec {
  return agents.find((a) => a.id === id) ?? agents[0]!;
}

// Its split and parts are steps, not rounds: there is no stored transcript to go on from.
async function runDecompose(runner: Runner, _from: TranscriptRound[]): Promise<ProtocolOutcome> {
  const { preset, question } = runner;
  const lead = decomposerOf(preset.agents, preset.protocol.decomposer);
  const workers = preset.agents.filter((a) => a.id !== lead.id);
  const byId = new Map(preset.agents.map((a) => [a.id, a]));
  const max = preset.protocol.maxSubQuestions ?? 6;

  runner.startRound(0);
  const split = await runner.call({
    stage: 'split',
    round: 0,
    agentId: lead.id,
    model: lead.model,
    messages: splitMessages(question, lead.persona, workers.map((w) => w.id), max),
    options: runner.callOptions(lead.model, lead.options, 'split'),
    schema: splitSchema(max),
    material: { focus: lead.persona ?? '' },
    priority: 'essential',
  });
  runner.checkpoint();
  if (split.status !== 'ok') {
    runner.fail('SPLIT_FAILED', 0, `the decomposer ${lead.id} gave no usable split (${split.error})`, `See the split call with \`conclave show ${runner.id}\`; a larger model for ${lead.id} splits more reliably.`);
  }
  const { subQuestions, notes } = planSubQuestions(split.value, workers.map((w) => w.id));
  for (const note of notes) runner.warn(note);
  runner.step({ kind: 'split', decomposer: lead.id, subQuestions, notes });

  // Every sub-question starts as soon as its dependencies are settled; the slots bound how many run at once.
  const settled = new Map<number, Promise<SubAnswer>>();
  for (const sub of subQuestions) {
    const deps = sub.dependsOn.map((d) => settled.get(d)!);
    settled.set(sub.index, Promise.all(deps).then((inputs) => answerPart(runner, sub, byId.get(sub.assignee)!, inputs, lead)));
  }
  const parts = await Promise.all(settled.values());
  runner.checkpoint();

  const answered = parts.filter((p) => p.status === 'ok').length;
  const detail = `${answered} of ${parts.length} sub-questions answered`;
  runner.exit('reassembled', subQuestions.length, detail);
  // The parts are independent answers to pieces of one question: where they clash is mapped before they are put together.
  const mapped = await runStages(runner, [partsAsRound(parts, subQuestions, byId)]);
  runner.checkpoint();
  const synthesis = await reassemble(runner, lead, subQuestions, parts, mapped);
  runner.checkpoint();
  return { exitReason: 'reassembled', exitDetail: detail, rounds: [], synthesis };
}

/**
 * One sub-question, answered by its assignee with its dependencies' answers; skipped when one of
 * them has none. A failed answer gets the decomposer's fallback, unless the decomposer is the
 * assignee or the run is stopping.
 */
async function answerPart(runner: Runner, sub: SubQuestion, agent: AgentSpec, inputs: SubAnswer[], lead: AgentSpec): Promise<SubAnswer> {
  const base = { kind: 'subanswer' as const, index: sub.index, agentId: agent.id };
  const finish = (part: SubAnswer): SubAnswer => {
    runner.step(part);
    return part;
  };
  const failed = new Map(inputs.filter((p) => p.status !== 'ok').map((p) => [p.index, p.reason ?? p.status]));
  const blocked = blockedBy(sub, failed);
  if (blocked || runner.interrupted()) {
    return finish({ ...base, status: 'skipped', answer: null, confidence: null, reason: blocked ?? 'stopped by the user' });
  }
  const options = runner.callOptions(agent.model, agent.options, 'subanswer');
  const given: PeerView[] = inputs.map((p) => ({ agentId: `sub-question ${p.index} (${p.agentId})`, position: p.answer ?? '' }));
  const fit = fitPeers(estimateMessagesTokens(subAnswerMessages(runner.question, agent.persona, sub, [])), given, runner.agentPromptBudget(agent.model, options));
  if (!fit) {
    return finish({ ...base, status: 'failed', answer: null, confidence: null, reason: `its dependencies' answers do not fit num_ctx ${runner.numCtx[agent.model]} for ${agent.model}` });
  }
  const truncation = fit.droppedChars > 0 ? `dependencies' answers shortened by ${fit.droppedChars} characters to fit num_ctx ${runner.numCtx[agent.model]}` : null;
  if (truncation) runner.warn(`${agent.id}, sub-question ${sub.index}: ${truncation}`);
  const outcome = await runner.call({
    stage: 'subanswer',
    round: sub.index,
    agentId: agent.id,
    model: agent.model,
    messages: subAnswerMessages(runner.question, agent.persona, sub, fit.peers),
    options,
    schema: openingSchema,
    truncation,
    material: { focus: sub.question },
    quality: openingQuality(retryMessages(subAnswerMessages(runner.question, agent.persona, sub, []))),
  });
  if (outcome.status === 'ok') return finish(answered(base, outcome.value));
  const failure = outcome.error;
  if (outcome.status === 'skipped' || lead.id === agent.id || runner.interrupted()) {
    return finish({ ...base, status: outcome.status === 'skipped' ? 'skipped' : 'failed', answer: null, confidence: null, reason: failure });
  }
  runner.warn(`${agent.id}, sub-question ${sub.index}: no usable answer (${failure}); ${lead.id} writes a fallback analysis`);
  const leadOptions = runner.callOptions(lead.model, lead.options, 'subanswer');
  const fallback = await runner.call({
    stage: 'subanswer',
    round: sub.index,
    agentId: lead.id,
    model: lead.model,
    messages: fallbackMessages(runner.question, lead.persona, sub, fit.peers, agent.id, failure),
    options: leadOptions,
    schema: openingSchema,
    truncation,
    material: { focus: sub.question },
    quality: openingQuality(retryMessages(subAnswerMessages(runner.question, lead.persona, sub, []))),
  });
  if (fallback.status !== 'ok') {
    return finish({ ...base, status: 'failed', answer: null, confidence: null, reason: `${failure}; the fallback by ${lead.id} failed too (${fallback.error})` });
  }
  return finish({ ...answered({ ...base, agentId: lead.id }, fallback.value), fallback: { failedAgent: agent.id, failure } });
}

/**
 * The usable parts as one round the tension map reads: each agent's parts together, as its answer
 * (the map compares agents, so two parts by one agent are read as one answer).
 */
function partsAsRound(parts: SubAnswer[], subs: SubQuestion[], byId: Map<string, AgentSpec>): TranscriptRound {
  const turns: TurnRecord[] = [];
  for (const agentId of [...new Set(parts.filter((p) => p.status === 'ok').map((p) => p.agentId))]) {
    const own = parts.filter((p) => p.status === 'ok' && p.agentId === agentId);
    const position = own.map((p) => `On sub-question ${p.index} (${subs.find((q) => q.index === p.index)?.question ?? ''}): ${p.answer ?? ''}`).join('\n\n');
    const confidences = own.map((p) => p.confidence ?? 0);
    turns.push({
      round: 0,
      agentId,
      model: byId.get(agentId)?.model ?? '',
      status: 'ok',
      position,
      confidence: confidences.reduce((a, b) => a + b, 0) / confidences.length,
      opening: null,
      critique: null,
      error: null,
    });
  }
  return { round: 0, turns, judgement: null };
}

/** A usable sub-answer as its step: the answer, its confidence and what it stated. */
function answered(base: { kind: 'subanswer'; index: number; agentId: string }, value: { position: string; reasoning: string; confidence: number; constraints?: SubAnswer['constraints']; tradeOffs?: string[] }): SubAnswer {
  const { constraints, tradeOffs } = value;
  return {
    ...base,
    status: 'ok',
    answer: `${value.position}\nReasoning: ${value.reasoning}`,
    confidence: value.confidence,
    reason: null,
    ...(constraints?.length ? { constraints } : {}),
    ...(tradeOffs?.length ? { tradeOffs } : {}),
  };
}

/** The decomposer reads every sub-answer (shortened evenly to fit) and writes the answer to the whole question. */
async function reassemble(runner: Runner, lead: AgentSpec, subs: SubQuestion[], parts: SubAnswer[], mapped: string[]) {
  const panel = runner.preset.agents.map((a) => a.id);
  const options = runner.callOptions(lead.model, lead.options, 'reassembly', { temperature: 0.2 });
  const questionOf = (i: number): string => subs.find((s) => s.index === i)?.question ?? '';
  const answers: PeerView[] = parts
    .filter((p) => p.status === 'ok')
    .map((p) => ({
      agentId: `Sub-question ${p.index}: ${questionOf(p.index)}\n${p.fallback ? `Fallback analysis by ${p.agentId} (you), after ${p.fallback.failedAgent} gave no usable answer:` : `Answered by ${p.agentId}:`}`,
      position: p.answer ?? '',
    }));
  const gaps = parts.filter((p) => p.status !== 'ok').map((p) => `sub-question ${p.index} (${p.agentId}), ${p.status}: ${p.reason}`);
  const failed = parts.filter((p) => p.status !== 'ok').map((p) => ({ agent: p.agentId, reason: `sub-question ${p.index} ${p.status}: ${p.reason}` }));
  const budget = runner.promptBudget(lead.model, options);
  // The parts' constraints are checked against each other before the answer is put together.
  const ok = parts.filter((p) => p.status === 'ok');
  const merge = mergeStated(runner, 'reassembly', {
    constraints: ok.flatMap((p) => (p.constraints ?? []).map((constraint) => ({ author: `${p.agentId} (sub-question ${p.index})`, constraint }))),
    tradeOffs: ok.flatMap((p) => (p.tradeOffs ?? []).map((tradeOff) => ({ agentId: `${p.agentId} (sub-question ${p.index})`, tradeOff }))),
  });
  const section = [...briefSection(runner), merge?.section, ...mapped].filter((x): x is string => Boolean(x)).join('\n\n') || null;
  const fixed = estimateMessagesTokens(reassemblyMessages(runner.question, lead.persona, [], gaps, panel, section));
  const fit = fitPeers(fixed, answers, budget) ?? { peers: answers, droppedChars: 0 };
  const truncation = fit.droppedChars > 0 ? `sub-answers shortened by ${fit.droppedChars} characters to fit num_ctx ${runner.numCtx[lead.model]}` : null;
  const messages = reassemblyMessages(runner.question, lead.persona, fit.peers, gaps, panel, section);
  return writeSynthesis(runner, 'reassembly', subs.length + 1, lead.id, lead.model, messages, options, budget, truncation, failed, merge?.collisionIds);
}
