import type { z } from 'zod';
import type { AgentRole, AgentSpec, Preset } from '../../config/preset-schema.js';
import { estimateMessagesTokens, fitPeers } from '../../protocol/context.js';
import {
  BLOCKING_CONFIDENCE,
  type Finding,
  type Observation,
  type PipelinePhase,
  PHASE_ROUND,
  analystMessages,
  applyDowngrade,
  artifactSchema,
  blockingFirst,
  cleanObservations,
  filterMessages,
  findingsSchemaFor,
  observationsSchema,
  planMessages,
  reduceFindings,
  reviewMessages,
  reviewText,
  roleOf,
} from '../../protocol/pipeline.js';
import { type PeerView, type TranscriptRound, openingMessages, retryMessages } from '../../protocol/prompts.js';
import type { Opening, Synthesis } from '../../protocol/schemas.js';
import type { ChatMessage, Stage, SynthesisRecord, TurnRecord } from '../events.js';
import type { ProtocolStep } from '../protocol-events.js';
import type { ProtocolOutcome, QualityHook, Runner } from '../runner.js';
import type { Protocol } from './types.js';
import { runStages } from '../primitives/optional-stages.js';
import { reviewConfidence } from '../../protocol/confidence.js';
import { TENSION_STAGE } from '../stages/tensions.js';
import { plural } from '../../plural.js';
import { DebateFailedError } from '../../errors.js';

type Observed = Extract<ProtocolStep, { kind: 'observations' }>;
type Report = Extract<ProtocolStep, { kind: 'report' }>;

/**
 * The review pipeline (seed 003): agents take roles. Plan: the lead writes a plan of
 * observations to check and the analysts add theirs, all at once. Review: the reviewers, all
 * at once once the plan is in, each with the lead's plan in its prompt (shortened to fit its
 * num_ctx); without a lead they review on their own. Final: the filter (the agent with that
 * role, else the synthesizer model) reads every review and the analysts' observations, and
 * reduces them to one list (F1, F2, …) or writes one document. The engine downgrades every
 * blocking observation below confidence 70 and records each downgrade. No role has a veto. With no
 * usable review the filter is not called and the run fails (exit 5).
 * Calls: 1 per lead, analyst and reviewer, 1 for the filter. No judge.
 */
export const pipeline: Protocol = {
  kind: 'pipeline',
  shape: (preset, stages) => {
    const filter = filterOf(preset);
    // The tension map alone, on the reviews: a pipeline has no final positions to vote on.
    return { support: filter.agent ? [] : [filter.model], synthesisModels: [filter.model], usesJudge: false, stages: stages.filter((s) => s.name === TENSION_STAGE) };
  },
  run: runPipeline,
};

interface FilterSpec {
  id: string;
  model: string;
  agent: AgentSpec | null;
}

/** The filter agent, or the synthesizer model standing in for it. */
function filterOf(preset: Preset): FilterSpec {
  const agent = preset.agents.find((a) => roleOf(a) === 'filter') ?? null;
  return agent ? { id: agent.id, model: agent.model, agent } : { id: 'synthesizer', model: preset.synthesizer.model ?? '', agent: null };
}

// Its phases are steps, not rounds: there is no stored transcript to go on from.
async function runPipeline(runner: Runner, _from: TranscriptRound[]): Promise<ProtocolOutcome> {
  const { preset } = runner;
  const mode = preset.protocol.filterMode ?? 'list';
  const withRole = (role: AgentRole) => preset.agents.filter((a) => roleOf(a) === role);
  const lead = withRole('lead')[0] ?? null;
  const analysts = withRole('analyst');
  const reviewers = withRole('reviewer');
  const filter = filterOf(preset);

  const planners = [...(lead ? [lead] : []), ...analysts];
  let plan: Observed | null = null;
  let perspectives: Observed[] = [];
  if (planners.length) {
    startPhase(runner, 'plan', planners);
    const planned = await Promise.all(planners.map((a) => observe(runner, 'plan', a, null)));
    runner.checkpoint();
    plan = lead ? planned[0]! : null;
    perspectives = planned.filter((s) => s.role === 'analyst');
  }

  startPhase(runner, 'review', reviewers);
  const usablePlan = plan?.status === 'ok' ? plan : null;
  if (lead && !usablePlan) runner.warn(`the lead ${lead.id} gave no usable plan; the reviewers run as generic reviewers`);
  const reviews = await Promise.all(reviewers.map((a) => observe(runner, 'review', a, usablePlan)));
  runner.checkpoint();

  const usable = reviews.filter((r) => r.status === 'ok').length;
  if (usable === 0) noReview(runner, reviews);
  const detail = `${usable} of ${reviews.length} review${reviews.length === 1 ? '' : 's'} usable; ${mode === 'list' ? 'findings reduced to a list' : 'one document written'} by ${filter.id}`;
  startPhase(runner, 'final', filter.agent ? [filter.agent] : [{ id: filter.id, role: 'filter' }]);
  const failed = [...(plan ? [plan] : []), ...perspectives, ...reviews].filter((s) => s.status !== 'ok').map((s) => ({ agent: s.agentId, reason: s.error ?? s.status }));
  // The reviews are independent answers (each reviewer alone, with the plan): where they clash is mapped before the filter reads them.
  const mapped = await runStages(runner, [reviewsAsRound(reviews, preset)]);
  runner.checkpoint();
  const synthesis = await runFilter(runner, filter, mode, reviews, perspectives, failed, mapped);
  runner.checkpoint();
  // Reported once the filter has written (or failed to write) the report, so the live view ends with it.
  runner.exit('filtered', PHASE_ROUND.final, synthesis.status === 'ok' ? detail : `${detail}; the filter gave no report`);
  return { exitReason: 'filtered', exitDetail: detail, rounds: [], synthesis };
}

/**
 * Ends the run as failed when no review is usable: a filter with no review to read would write a
 * report of its own, and credit itself with findings no reviewer raised. Exit 5, as a round 0 with
 * too few usable answers; every plan and review is kept.
 */
function noReview(runner: Runner, reviews: Observed[]): never {
  const detail = `0 of ${plural(reviews.length, 'review')} usable, so the filter was not run`;
  runner.emit({ type: 'debate.exit', reason: 'too_few_answers', round: PHASE_ROUND.review, detail, at: runner.now() });
  runner.finish('failed', 'too_few_answers', detail);
  const gaps = reviews.map((r) => `${r.agentId}: ${r.error ?? r.status}`);
  const budget = reviews.some((r) => r.status === 'skipped' && r.error?.startsWith('skipped by the token budget'));
  throw new DebateFailedError('TOO_FEW_ANSWERS', `The review ${runner.id} failed: ${detail}.\n${gaps.map((g) => `  - ${g}`).join('\n')}`, {
    hint: budget
      ? `The token budget (${runner.tally.limit?.toLocaleString('en-US')} tokens) does not cover one review: raise --token-budget (or protocol.tokenBudget), or give a reviewer priority: high.`
      : `Check the failures above (model errors, timeouts or invalid JSON); the plan and the reviews are stored, see \`conclave show ${runner.id}\`.`,
  });
}

function startPhase(runner: Runner, phase: PipelinePhase, agents: Pick<AgentSpec, 'id' | 'role'>[]): void {
  runner.startRound(PHASE_ROUND[phase]);
  runner.step({ kind: 'phase', phase, agents: agents.map((a) => ({ id: a.id, role: roleOf(a) })) });
}

const STAGE: Record<Exclude<AgentRole, 'filter'>, Stage> = { lead: 'plan', analyst: 'observe', reviewer: 'review' };

/** One lead, analyst or reviewer call; its observations cleaned, downgraded where the rule says, and recorded. */
async function observe(runner: Runner, phase: PipelinePhase, agent: AgentSpec, plan: Observed | null): Promise<Observed> {
  const role = roleOf(agent) as Exclude<AgentRole, 'filter'>;
  const stage = STAGE[role];
  const base = { kind: 'observations' as const, phase, agentId: agent.id, role, withPlan: plan !== null };
  const finish = (step: Observed): Observed => {
    runner.step(step);
    return step;
  };
  if (runner.interrupted()) return finish({ ...base, status: 'skipped', summary: null, observations: [], notes: [], error: 'stopped by the user' });
  const options = runner.callOptions(agent.model, agent.options, stage);
  let messages: ChatMessage[];
  let truncation: string | null = null;
  if (role === 'lead') messages = planMessages(runner.question, agent.persona, Math.max(1, runner.preset.agents.filter((a) => roleOf(a) === 'reviewer').length));
  else if (role === 'analyst') messages = analystMessages(runner.question, agent.persona);
  else {
    const view: PeerView | null = plan ? { agentId: plan.agentId, position: reviewText(plan.summary ?? '', plan.observations, plan.agentId) } : null;
    const fit = view ? fitPeers(estimateMessagesTokens(reviewMessages(runner.question, agent.persona, { ...view, position: '' })), [view], runner.agentPromptBudget(agent.model, options)) : null;
    if (view && !fit) {
      return finish({ ...base, status: 'failed', summary: null, observations: [], notes: [], error: `the lead's plan does not fit num_ctx ${runner.numCtx[agent.model]} for ${agent.model}` });
    }
    if (fit && fit.droppedChars > 0) {
      truncation = `the lead's plan shortened by ${fit.droppedChars} characters to fit num_ctx ${runner.numCtx[agent.model]}`;
      runner.warn(`${agent.id}: ${truncation}`);
    }
    messages = reviewMessages(runner.question, agent.persona, fit ? fit.peers[0]! : null);
  }
  // Attached material is excerpted for the agent's role, and for a reviewer for the plan it checks.
  const focus = [agent.persona ?? '', role === 'reviewer' && plan ? reviewText(plan.summary ?? '', plan.observations, plan.agentId) : ''].join('\n');
  const outcome = await runner.call({
    stage,
    round: PHASE_ROUND[phase],
    agentId: agent.id,
    model: agent.model,
    messages,
    options,
    schema: observationsSchema,
    truncation,
    material: { focus },
    quality: observationsQuality(retryMessages(openingMessages(runner.question, agent.persona))),
  });
  if (outcome.status !== 'ok') return finish({ ...base, status: outcome.status === 'skipped' ? 'skipped' : 'failed', summary: null, observations: [], notes: [], error: outcome.error });
  const { observations, notes } = cleanObservations(outcome.value.observations, agent.id);
  const judged: Observation[] = observations.map(applyDowngrade);
  for (const o of judged) {
    if (o.downgraded) runner.step({ kind: 'downgrade', phase, agentId: agent.id, observationId: o.id, confidence: o.confidence, threshold: BLOCKING_CONFIDENCE, text: o.text });
  }
  return finish({ ...base, status: 'ok', summary: outcome.value.summary.trim(), observations: judged, notes, error: null });
}

type Observations = z.infer<typeof observationsSchema>;

/**
 * The quality hook of a plan, a perspective or a review: rated on its summary and observations
 * (their evidence as its reasoning, their mean confidence as its own). Its retry is a plain
 * answer to the question, kept as one non-blocking observation.
 */
function observationsQuality(retry: ChatMessage[]): QualityHook<Observations> {
  return {
    facts: (v) => {
      const confidences = v.observations.map((o) => o.confidence);
      return {
        position: [v.summary, ...v.observations.map((o) => o.text)].join('\n'),
        reasoning: v.observations.map((o) => o.evidence).join('\n'),
        ...(confidences.length ? { confidence: confidences.reduce((a, b) => a + b, 0) / confidences.length / 100 } : {}),
      };
    },
    retry,
    fromRetry: (o: Opening) => ({
      summary: o.position,
      observations: [{ id: 'O1', text: o.position, confidence: Math.round(o.confidence * 100), blocking: false, evidence: o.reasoning }],
    }),
  };
}

/**
 * The Final phase: the filter reads every review and the analysts' observations (each shortened
 * evenly to fit) and writes the report, recorded as a `report` step and as the run's synthesis.
 */
async function runFilter(
  runner: Runner,
  filter: FilterSpec,
  mode: 'list' | 'artifact',
  reviews: Observed[],
  perspectives: Observed[],
  failed: { agent: string; reason: string }[],
  mapped: string[] = [],
): Promise<SynthesisRecord> {
  const { preset } = runner;
  const persona = filter.agent?.persona;
  const options = runner.callOptions(filter.model, filter.agent?.options ?? preset.synthesizer.options, 'filter', { temperature: 0.2 });
  const asView = (s: Observed): PeerView => ({ agentId: `${s.agentId} (${s.role})`, position: reviewText(s.summary ?? '', s.observations, s.agentId) });
  const ok = (list: Observed[]) => list.filter((s) => s.status === 'ok');
  const views = [...ok(reviews), ...ok(perspectives)].map(asView);
  const gaps = failed.map((f) => `${f.agent}: ${f.reason}`);
  const nReviews = ok(reviews).length;
  const build = (peers: PeerView[]) => filterMessages(runner.question, persona, mode, peers.slice(0, nReviews), peers.slice(nReviews), gaps, mapped);
  const fit = fitPeers(estimateMessagesTokens(build([])), views, runner.promptBudget(filter.model, options));
  const known = new Map<string, { agentId: string; observation: Observation }>();
  for (const s of [...ok(reviews), ...ok(perspectives)]) for (const o of s.observations) known.set(`${s.agentId}/${o.id}`, { agentId: s.agentId, observation: o });
  const base = { kind: 'report' as const, mode, filter: filter.id, model: filter.model };
  const fail = (error: string): SynthesisRecord => {
    runner.step({ ...base, status: 'failed', summary: null, findings: [], artifact: null, notes: [], error });
    const result: SynthesisRecord = { status: 'failed', model: filter.model, synthesis: null, error };
    runner.emit({ type: 'synthesis.finished', result, at: runner.now() });
    return result;
  };
  if (!fit) return fail(`the reviews do not fit num_ctx ${runner.numCtx[filter.model]} for ${filter.model}`);
  const truncation = fit.droppedChars > 0 ? `reviews shortened by ${fit.droppedChars} characters to fit num_ctx ${runner.numCtx[filter.model]}` : null;
  if (truncation) runner.warn(`filter: ${truncation}`);
  // The report is the run's result: the token budget never skips it.
  const call = { stage: 'filter' as const, round: PHASE_ROUND.final, agentId: filter.id, model: filter.model, messages: build(fit.peers), options, truncation, priority: 'essential' as const };

  let report: Report;
  if (mode === 'list') {
    const outcome = await runner.call({ ...call, schema: findingsSchemaFor([...known.keys()]) });
    if (outcome.status !== 'ok') return fail(outcome.error);
    const { findings, downgraded, notes } = reduceFindings(outcome.value, known, filter.id);
    for (const f of downgraded) runner.step({ kind: 'downgrade', phase: 'final', agentId: filter.id, observationId: f.id, confidence: f.confidence, threshold: BLOCKING_CONFIDENCE, text: f.text });
    report = { ...base, status: 'ok', summary: outcome.value.summary.trim(), findings, artifact: null, notes, error: null };
  } else {
    const outcome = await runner.call({ ...call, schema: artifactSchema });
    if (outcome.status !== 'ok') return fail(outcome.error);
    const artifact = { title: outcome.value.title.trim() || 'Review', document: outcome.value.document.trim() };
    const notes = artifact.document ? [] : ['the filter wrote an empty document'];
    report = { ...base, status: 'ok', summary: null, findings: everyObservation(ok(reviews), ok(perspectives)), artifact, notes, error: null };
  }
  for (const n of report.notes) runner.warn(`filter: ${n}`);
  runner.step(report);
  const result: SynthesisRecord = { status: 'ok', model: filter.model, synthesis: synthesisOf(report, reviews, failed, preset.protocol.convergenceThreshold), error: null };
  runner.emit({ type: 'synthesis.finished', result, at: runner.now() });
  return result;
}

/** The usable reviews as one round the tension map reads: each reviewer's summary and observations as its answer. */
function reviewsAsRound(reviews: Observed[], preset: Preset): TranscriptRound {
  const turns: TurnRecord[] = reviews
    .filter((r) => r.status === 'ok')
    .map((r) => {
      const confidences = r.observations.map((o) => o.confidence);
      return {
        round: 0,
        agentId: r.agentId,
        model: preset.agents.find((a) => a.id === r.agentId)?.model ?? '',
        status: 'ok' as const,
        position: reviewText(r.summary ?? '', r.observations, r.agentId),
        confidence: confidences.length ? confidences.reduce((a, b) => a + b, 0) / confidences.length / 100 : null,
        opening: null,
        critique: null,
        error: null,
      };
    });
  return { round: 0, turns, judgement: null };
}

/** Artifact mode keeps every observation in the report, blocking first, each with who raised it. */
function everyObservation(reviews: Observed[], perspectives: Observed[]): Finding[] {
  const all = [...reviews, ...perspectives].flatMap((s) => s.observations.map((o) => ({ ...o, raisedBy: [s.agentId], sources: [`${s.agentId}/${o.id}`] })));
  return blockingFirst(all).map((f, i) => ({ ...f, id: `F${i + 1}` }));
}

/** The report in the synthesis shape every view and export reads: the verdict as the recommendation, blocking findings as what to revisit. */
function synthesisOf(report: Report, reviews: Observed[], failed: { agent: string; reason: string }[], threshold: number): Synthesis {
  const blocking = report.findings.filter((f) => f.blocking);
  const verdict = report.artifact ? `${report.artifact.title}\n\n${report.artifact.document || '(empty document)'}` : report.summary || `${plural(report.findings.length, 'finding')}, ${blocking.length} blocking.`;
  // The same rule every view applies to the record (docs/confidence.md).
  const { level } = reviewConfidence({ reviews, report: { ok: true, findings: report.findings }, threshold });
  return {
    recommendation: verdict,
    triggersToRevisit: blocking.map((f) => `${f.id}: ${f.text}`),
    confidence: { level, converged: reviews.filter((r) => r.status === 'ok').length },
    minorityPositions: [],
    failedAgents: failed,
  };
}
