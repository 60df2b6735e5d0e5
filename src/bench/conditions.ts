import type { Preset } from '../config/preset-schema.js';
import { synthesizerModel } from '../config/synthesizer.js';
import type { CallRecord, TurnRecord } from '../engine/events.js';
import type { BenchAnswerRow, BenchResultRow } from '../store/bench.js';
import type { StoredCall, StoredDebate } from '../store/store.js';
import type { AnswerOutcome } from './answer-call.js';
import type { ParallelCapture } from './parallel-call.js';
import { answersMatch, extractAnswer } from './extract.js';
import { majorityVote } from './stats.js';
import { CLUSTER_VOTE, FINAL_MAJORITY, ROUND0_MAJORITY, SYNTHESIZER } from '../rules/aggregation.js';
import type { Decision, Rule } from '../rules/trajectory.js';
import { callCost, gradedTrajectory, singleAnswer } from './trajectory.js';
import type { SuiteItem } from './suite.js';
import type { SelfCorrectionCapture } from './self-correction.js';

/**
 * The conditions a bench compares, each at the compute it actually spent:
 * - `single`: each panel agent alone, one answer (variant = agent id);
 * - `sc`: self-consistency, k answers from the panel's agents in turn, majority vote,
 *   where k is the number of debater turns the debate made on the same item;
 * - `self-correction`: the isolated control: each agent revises its own round-0 answer alone,
 *   as many times as it took a critique turn in the debate, and the last answers are voted
 *   (src/bench/self-correction.ts): the same agent calls as the debate, without the peers;
 * - `round0-vote`: majority vote of the debate's independent round 0;
 * - `parallel`: the parallel protocol, round 0 and a synthesis over it: charged the round-0
 *   calls and its own synthesis call (or, for a preset whose protocol is parallel, its run);
 * - `debate-vote`: majority vote of the debate's final positions;
 * - `debate-synth`: the synthesizer's recommendation;
 * - `cluster-vote`: the top position of the cluster approval vote (presets with `voting`).
 * The `debate-*` conditions read whatever protocol the preset runs (its final turns, its result).
 */
export const CONDITIONS = ['single', 'sc', 'self-correction', 'round0-vote', 'parallel', 'debate-vote', 'debate-synth', 'cluster-vote'] as const;
export type Condition = (typeof CONDITIONS)[number];

export const CONDITION_LABELS: Record<Condition, string> = {
  single: 'single agent',
  sc: 'self-consistency@k',
  'self-correction': 'self-correction (no peers)',
  'round0-vote': 'round-0 majority',
  parallel: 'parallel + synthesizer',
  'debate-vote': 'debate + majority',
  'debate-synth': 'debate + synthesizer',
  'cluster-vote': 'debate + cluster vote',
};

/** One stand-alone answer of a baseline. */
export interface BaselineAnswer {
  agentId: string;
  model: string;
  outcome: AnswerOutcome;
}

/** What the cluster vote of a debate produced, as seen from its events. */
export interface VoteCapture {
  /** False when the preset has no vote or the vote did not run; `note` says which. */
  available: boolean;
  winnerText: string | null;
  winnerAgent: string | null;
  note: string | null;
}

export interface TrialInput {
  item: SuiteItem;
  preset: Preset;
  debate: StoredDebate;
  singles: BaselineAnswer[];
  samples: BaselineAnswer[];
  vote: VoteCapture;
  /** The parallel condition's synthesis over round 0; null when the preset's protocol gives none to build on. */
  parallel?: ParallelCapture | null;
  /** The isolated self-correction control; null or absent when it was not run. */
  selfCorrection?: SelfCorrectionCapture | null;
}

export interface ScoredTrial {
  roundsRun: number;
  agentTurns: number;
  results: BenchResultRow[];
  answers: BenchAnswerRow[];
}

/** Debater turns the debate made (first attempts, not repairs): the k of self-consistency@k. */
export function agentTurnCount(calls: readonly StoredCall[]): number {
  return calls.filter((c) => (c.stage === 'opening' || c.stage === 'critique' || c.stage === 'subanswer') && c.attempt === 0).length;
}

interface Read {
  status: BenchAnswerRow['status'];
  answer: string | null;
  method: string | null;
}

function readTurn(turn: TurnRecord | undefined, item: SuiteItem): Read {
  if (turn === undefined) return { status: 'error', answer: null, method: null };
  if (turn.status === 'failed') return { status: 'error', answer: null, method: null };
  if (turn.status !== 'ok' || turn.position === null) return { status: 'unparsed', answer: null, method: null };
  const read = readText(turn.position, item);
  // Small models often put the final answer at the end of their reasoning instead of the position.
  if (read.status === 'unparsed' && turn.opening) return readText(turn.opening.reasoning, item);
  return read;
}

function readText(text: string, item: SuiteItem): Read {
  const found = extractAnswer(text, item.kind, item.choices);
  return found.value === null ? { status: 'unparsed', answer: null, method: 'none' } : { status: 'ok', answer: found.value, method: found.method };
}

function spent(calls: readonly CallRecord[]): Pick<BenchResultRow, 'calls' | 'promptTokens' | 'completionTokens'> {
  let promptTokens = 0;
  let completionTokens = 0;
  for (const c of calls) {
    promptTokens += c.metrics.promptTokens ?? 0;
    completionTokens += c.metrics.completionTokens ?? 0;
  }
  return { calls: calls.length, promptTokens, completionTokens };
}

function baselineSpent(answers: readonly BaselineAnswer[]): Pick<BenchResultRow, 'calls' | 'promptTokens' | 'completionTokens' | 'callIds'> {
  let promptTokens = 0;
  let completionTokens = 0;
  const callIds: number[] = [];
  for (const a of answers) {
    callIds.push(...a.outcome.callIds);
    for (const c of a.outcome.calls) {
      promptTokens += c.metrics.promptTokens ?? 0;
      completionTokens += c.metrics.completionTokens ?? 0;
    }
  }
  return { calls: callIds.length, promptTokens, completionTokens, callIds };
}

/**
 * Scores one item under one preset: reads every answer out of the debate and
 * the baselines, votes, and says what each condition answered and spent. An
 * answer that could not be read is wrong, never right.
 */
export function scoreTrial(input: TrialInput): ScoredTrial {
  const { item, preset, debate } = input;
  const gold = item.answer;
  const right = (answer: string | null): boolean => answer !== null && answersMatch(answer, gold, item.kind);
  const answers: BenchAnswerRow[] = [];
  const results: BenchResultRow[] = [];

  const roundsRun = Math.max(0, ...debate.turns.map((t) => t.round));
  const agentIds = preset.agents.map((a) => a.id);
  const turnAt = (round: number, agentId: string): TurnRecord | undefined => debate.turns.find((t) => t.round === round && t.agentId === agentId);
  const reads = new Map<string, Read>();
  for (let round = 0; round <= roundsRun; round++) {
    for (const agent of preset.agents) {
      const turn = turnAt(round, agent.id);
      // An agent with no turn in a round the debate reached had no usable turn there.
      const read = readTurn(turn, item);
      reads.set(`${round}/${agent.id}`, read);
      answers.push({ source: 'debate', round, slot: agent.id, agentId: agent.id, model: agent.model, ...read, correct: right(read.answer) });
    }
  }
  const roundAnswers = (round: number): (string | null)[] => agentIds.map((id) => reads.get(`${round}/${id}`)?.answer ?? null);

  const callsWhere = (keep: (c: StoredCall) => boolean): StoredCall[] => debate.calls.filter(keep);
  const debateCondition = (condition: Condition, answer: string | null, calls: StoredCall[], note: string | null = null): BenchResultRow => ({
    condition,
    variant: '',
    available: true,
    answer,
    correct: right(answer),
    ...spent(calls),
    callIds: [],
    note,
  });

  // Baselines first in the table order: single, then self-consistency.
  for (const single of input.singles) {
    const o = single.outcome;
    answers.push({ source: 'single', round: 0, slot: single.agentId, agentId: single.agentId, model: single.model, status: o.status, answer: o.answer, method: o.status === 'error' ? null : o.method, correct: right(o.answer) });
    results.push({ condition: 'single', variant: single.agentId, available: true, answer: o.answer, correct: right(o.answer), ...baselineSpent([single]), note: null });
  }
  input.samples.forEach((sample, i) => {
    const o = sample.outcome;
    answers.push({ source: 'sc', round: 0, slot: String(i), agentId: sample.agentId, model: sample.model, status: o.status, answer: o.answer, method: o.status === 'error' ? null : o.method, correct: right(o.answer) });
  });
  const scAnswer = majorityVote(
    input.samples.map((s) => s.outcome.answer),
    item.kind,
  );
  results.push({
    condition: 'sc',
    variant: '',
    available: input.samples.length > 0,
    answer: scAnswer,
    correct: right(scAnswer),
    ...baselineSpent(input.samples),
    note: `k=${input.samples.length}`,
  });

  results.push(selfCorrectionCondition(input.selfCorrection ?? null, debate, reads, answers, item, right));

  // The protocol the debate ran: with `auto`, the advisor's choice for this item.
  const kind = debate.preset.protocol.kind ?? 'debate';
  const synthesis = debate.synthesis?.synthesis ?? null;
  const synthRead: Read = synthesis ? readText(synthesis.recommendation, item) : { status: 'error', answer: null, method: null };
  const vote = input.vote;
  // The debate's own conditions are rules over its trajectory, the very functions `conclave rescore` applies.
  const trajectory = gradedTrajectory({
    agents: agentIds,
    protocol: kind,
    maxRounds: debate.preset.protocol.maxRounds,
    threshold: debate.preset.protocol.convergenceThreshold,
    status: debate.status,
    exitReason: debate.exitReason,
    roundsRun,
    kind: item.kind,
    answer: (round, agentId) => reads.get(`${round}/${agentId}`)?.answer ?? null,
    convergence: (round) => debate.rounds.find((r) => r.round === round)?.convergence ?? null,
    synthesis: { recorded: true, vote: singleAnswer(synthRead.answer, item.kind), note: synthesis ? null : `no synthesis (${debate.synthesis?.error ?? debate.error ?? debate.status})` },
    clusterVote: vote.available
      ? { recorded: true, vote: vote.winnerText === null ? null : singleAnswer(readText(vote.winnerText, item).answer, item.kind), note: vote.note ?? (vote.winnerAgent ? `winner: ${vote.winnerAgent}` : null) }
      : { recorded: false, why: vote.note ?? 'no cluster vote' },
    calls: debate.calls.map(callCost),
  });
  const byRule = (condition: Condition, rule: Rule): BenchResultRow => resultOfDecision(condition, rule.decide(trajectory), right);
  results.push(byRule('round0-vote', ROUND0_MAJORITY));
  results.push(parallelCondition(kind, input.parallel ?? null, debate, (text) => readText(text, item).answer, right));
  results.push(byRule('debate-vote', FINAL_MAJORITY));
  answers.push({ source: 'synthesis', round: roundsRun, slot: 'synthesizer', agentId: 'synthesizer', model: synthesizerModel(preset), ...synthRead, correct: right(synthRead.answer) });
  results.push(byRule('debate-synth', SYNTHESIZER));

  const seen = new Set<string>();
  for (const minority of synthesis?.minorityPositions ?? []) {
    const key = `${minority.round}/${minority.agent}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const agent = preset.agents.find((a) => a.id === minority.agent);
    // The agent's own words at that round; the synthesizer's summary only when the turn is missing.
    const read = reads.get(key) ?? readText(minority.argument, item);
    answers.push({ source: 'minority', round: minority.round, slot: minority.agent, agentId: minority.agent, model: agent?.model ?? '', ...read, correct: right(read.answer) });
  }

  results.push(byRule('cluster-vote', CLUSTER_VOTE));

  return { roundsRun, agentTurns: agentTurnCount(debate.calls), results, answers };
}

/** A bench result row from a rule's decision: the same answer, correctness and spend `rescore` reports. */
export function resultOfDecision(condition: Condition, decision: Decision, right: (answer: string | null) => boolean): BenchResultRow {
  if (!decision.available) return unavailable(condition, decision.why);
  const answer = decision.vote?.text ?? null;
  const { calls, promptTokens, completionTokens } = decision.spent;
  return { condition, variant: '', available: true, answer, correct: right(answer), calls, promptTokens, completionTokens, callIds: [], note: decision.note };
}

function unavailable(condition: Condition, note: string): BenchResultRow {
  return { condition, variant: '', available: false, answer: null, correct: false, calls: 0, promptTokens: 0, completionTokens: 0, callIds: [], note };
}

/**
 * The self-correction control's vote: each agent's last revision (its round-0 answer when it
 * made none), majority-voted; charged the debate's round-0 calls it reuses and its revisions.
 */
function selfCorrectionCondition(
  capture: SelfCorrectionCapture | null,
  debate: StoredDebate,
  reads: ReadonlyMap<string, Read>,
  answers: BenchAnswerRow[],
  item: SuiteItem,
  right: (answer: string | null) => boolean,
): BenchResultRow {
  if (capture === null) return unavailable('self-correction', 'not run');
  if (!capture.available) return unavailable('self-correction', capture.note ?? 'not available');
  const finals: (string | null)[] = [];
  const revisions: BaselineAnswer[] = [];
  for (const agent of capture.agents) {
    agent.revisions.forEach((o, i) => {
      answers.push({ source: 'self-correction', round: i + 1, slot: agent.agentId, agentId: agent.agentId, model: agent.model, status: o.status, answer: o.answer, method: o.status === 'error' ? null : o.method, correct: right(o.answer) });
      revisions.push({ agentId: agent.agentId, model: agent.model, outcome: o });
    });
    const last = agent.revisions.at(-1);
    finals.push(last === undefined ? (reads.get(`0/${agent.agentId}`)?.answer ?? null) : last.answer);
  }
  const answer = majorityVote(finals, item.kind);
  const openings = spent(debate.calls.filter((c) => c.stage === 'opening'));
  const own = baselineSpent(revisions);
  const counts = capture.agents.map((a) => a.revisions.length);
  return {
    condition: 'self-correction',
    variant: '',
    available: true,
    answer,
    correct: right(answer),
    calls: openings.calls + own.calls,
    promptTokens: openings.promptTokens + own.promptTokens,
    completionTokens: openings.completionTokens + own.completionTokens,
    callIds: own.callIds,
    note: `revisions per agent: ${new Set(counts).size === 1 ? String(counts[0] ?? 0) : counts.join('/')}`,
  };
}

/** The parallel protocol's answer and what it cost: round 0 plus its own synthesis, or the whole run of a parallel preset. */
function parallelCondition(
  kind: Preset['protocol']['kind'],
  capture: ParallelCapture | null,
  debate: StoredDebate,
  read: (text: string) => string | null,
  right: (answer: string | null) => boolean,
): BenchResultRow {
  if (kind === 'parallel') {
    const text = debate.synthesis?.synthesis?.recommendation ?? null;
    const answer = text === null ? null : read(text);
    return { condition: 'parallel', variant: '', available: true, answer, correct: right(answer), ...spent(debate.calls), callIds: [], note: text === null ? 'no synthesis' : null };
  }
  if (capture === null) return unavailable('parallel', kind === 'decompose' ? 'a decomposition has no independent answers' : kind === 'pipeline' ? 'a review pipeline has no independent answers' : 'not run');
  const answer = capture.recommendation === null ? null : read(capture.recommendation);
  const openings = spent(debate.calls.filter((c) => c.stage === 'opening'));
  const own = spent(capture.calls);
  return {
    condition: 'parallel',
    variant: '',
    available: true,
    answer,
    correct: right(answer),
    calls: openings.calls + own.calls,
    promptTokens: openings.promptTokens + own.promptTokens,
    completionTokens: openings.completionTokens + own.completionTokens,
    callIds: capture.callIds,
    note: capture.note,
  };
}
