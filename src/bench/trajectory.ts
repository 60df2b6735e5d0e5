import type { CallMetrics, CallRecord } from '../engine/call-record.js';
import type { Recorded, Trajectory, Vote } from '../rules/trajectory.js';
import type { CallCost } from '../rules/trajectory.js';
import { type AnswerKind, answerKey } from './extract.js';

/** What a recorded call cost: its tokens, and the server's total duration (else its wall time) as GPU time. */
export function callCost(
  c: Pick<CallRecord, 'stage' | 'round' | 'agentId' | 'startedAt' | 'finishedAt'> & { metrics: Pick<CallMetrics, 'promptTokens' | 'completionTokens' | 'totalDurationNs'> },
): CallCost {
  return {
    stage: c.stage,
    round: c.round,
    agentId: c.agentId,
    promptTokens: c.metrics.promptTokens ?? 0,
    completionTokens: c.metrics.completionTokens ?? 0,
    gpuMs: c.metrics.totalDurationNs !== null ? c.metrics.totalDurationNs / 1e6 : Math.max(0, c.finishedAt - c.startedAt),
  };
}

/** A graded answer as a vote: grouped as the bench's majority groups it; an answer that cannot be grouped is no vote. */
export function gradedVote(answer: string | null, kind: AnswerKind): Vote | null {
  if (answer === null) return null;
  const key = answerKey(answer, kind);
  return key === null ? null : { key, text: answer };
}

/** A single recorded answer (synthesis, vote winner): kept even when it cannot be grouped, since it is not counted with others. */
export function singleAnswer(answer: string | null, kind: AnswerKind): Vote | null {
  if (answer === null) return null;
  return { key: answerKey(answer, kind) ?? `text:${answer}`, text: answer };
}

export interface GradedDebate {
  agents: string[];
  protocol: string;
  maxRounds: number;
  threshold: number;
  status: string;
  exitReason: string | null;
  /** The last round with a turn; rounds 0 to it are read. */
  roundsRun: number;
  kind: AnswerKind;
  /** The answer read from an agent's turn in a round, null when none could be. */
  answer(round: number, agentId: string): string | null;
  convergence(round: number): number | null;
  synthesis: Recorded;
  clusterVote: Recorded;
  calls: CallCost[];
  reliability?: Record<string, number>;
}

/** The trajectory of a bench item: answers graded as the bench read them. The bench's scoring and `rescore` both build it here. */
export function gradedTrajectory(d: GradedDebate): Trajectory {
  const rounds: Trajectory['rounds'] = [];
  for (let round = 0; round <= d.roundsRun; round++) {
    rounds.push({ round, votes: d.agents.map((id) => gradedVote(d.answer(round, id), d.kind)), convergence: d.convergence(round) });
  }
  return {
    agents: d.agents,
    protocol: d.protocol,
    maxRounds: d.maxRounds,
    threshold: d.threshold,
    rounds,
    status: d.status,
    exitReason: d.exitReason,
    basis: { kind: 'answers' },
    synthesis: d.synthesis,
    clusterVote: d.clusterVote,
    calls: d.calls,
    ...(d.reliability ? { reliability: d.reliability } : {}),
  };
}
