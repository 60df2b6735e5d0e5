import type { DebateEvent, ExitReason, Stage } from '../engine/events.js';
import { opensRound, stepRound } from '../engine/protocol-events.js';
import type { StoredStep } from '../store/protocols.js';
import { exitDecision } from '../protocol/convergence.js';
import { readSteps } from './panel-record.js';
import type { StoredDebate } from '../store/store.js';
import { tensionEvents } from './tensions.js';
import { votingEvents } from './voting.js';

/**
 * Rebuild the event stream of a stored debate, in the order it happened, so a replay
 * goes through the same renderer as the live run. Needs no model server.
 */
export function storedEvents(d: StoredDebate): DebateEvent[] {
  const events: DebateEvent[] = [];
  events.push({ type: 'debate.started', debateId: d.id, question: d.question, preset: d.preset, agents: d.agents, host: d.host, warnings: [], ...(d.attachments?.length ? { attachments: d.attachments } : {}), at: d.createdAt });
  // The stances and the advocates' effect read as every view reads them now, not as an older engine recorded them.
  const steps = readSteps(d);
  const step = (s: StoredStep): DebateEvent => ({ type: 'protocol.step', step: s.step, at: s.at });
  // Steps tied to no round: the synthesizer's turn opens the replay, the champion closes the rounds.
  const unbound = (s: StoredStep): boolean => s.step.kind === 'synthesizer' || s.step.kind === 'champion';
  for (const s of steps.filter((x) => x.step.kind === 'synthesizer')) events.push(step(s));
  const rounds = [
    ...new Set([...d.turns.map((t) => t.round), ...d.rounds.map((r) => r.round), ...steps.filter((s) => !unbound(s)).map((s) => stepRound(s.step))]),
  ].sort((a, b) => a - b);
  const answering = new Set<Stage>(['opening', 'critique', 'split', 'subanswer']);
  const decisions = d.budgetDecisions ?? [];
  const tensions = tensionEvents(d);
  for (const round of rounds) {
    const roundSteps = steps.filter((s) => !unbound(s) && stepRound(s.step) === round);
    events.push({ type: 'round.started', round, at: d.createdAt });
    for (const s of roundSteps.filter((x) => opensRound(x.step))) events.push(step(s));
    const roundCalls = d.calls.filter((c) => c.round === round && answering.has(c.stage));
    for (const call of roundCalls) {
      events.push({ type: 'turn.started', stage: call.stage, round, agentId: call.agentId, model: call.model, attempt: call.attempt, at: call.startedAt });
      events.push({ type: 'call.finished', call });
    }
    // The budget's cuts and skips in the round they were made, as the live view showed them.
    for (const decision of decisions.filter((x) => x.kind !== 'stop' && x.round === round)) events.push({ type: 'budget.decision', decision, at: d.createdAt });
    for (const rating of (d.quality ?? []).filter((q) => q.round === round)) events.push({ type: 'quality.rated', rating, at: d.createdAt });
    for (const turn of d.turns.filter((t) => t.round === round)) events.push({ type: 'turn.finished', turn, at: d.createdAt });
    // The judge's calls too, as live: a failed one is shown, and each moves the budget's tally.
    for (const call of d.calls.filter((c) => c.round === round && (c.stage === 'judge' || c.stage === 'verdict'))) events.push({ type: 'call.finished', call });
    for (const s of roundSteps.filter((x) => !opensRound(x.step))) events.push(step(s));
    const judgement = d.rounds.find((r) => r.round === round);
    if (judgement) events.push({ type: 'round.judged', judgement, at: d.createdAt });
    for (const t of tensions.filter((x) => x.after === round)) events.push(t.event);
  }
  for (const s of steps.filter((x) => x.step.kind === 'champion')) events.push(step(s));
  // Decisions of no round that was replayed (the optional stages', the synthesis', a stop) come after the rounds.
  for (const decision of decisions.filter((x) => x.kind === 'stop' || !rounds.includes(x.round))) events.push({ type: 'budget.decision', decision, at: d.createdAt });
  if (d.exitReason) {
    const last = rounds.at(-1) ?? 0;
    events.push({ type: 'debate.exit', reason: d.exitReason, round: last, detail: exitDetail(d, d.exitReason, last), at: d.finishedAt ?? d.createdAt });
  }
  for (const t of tensions.filter((x) => x.after === null || !rounds.includes(x.after))) events.push(t.event);
  events.push(...votingEvents(d));
  if (d.synthesis) events.push({ type: 'synthesis.finished', result: d.synthesis, at: d.finishedAt ?? d.createdAt });
  events.push({
    type: 'debate.finished',
    debateId: d.id,
    status: d.status,
    exitReason: d.exitReason ?? 'interrupted',
    error: d.error,
    at: d.finishedAt ?? d.createdAt,
  });
  return events;
}

function exitDetail(d: StoredDebate, reason: ExitReason, round: number): string {
  // Recorded as the live view said it; records written before it was kept derive it where they can.
  if (d.exitDetail !== undefined) return d.exitDetail;
  if (reason === 'converged' || reason === 'max_rounds') {
    const decided = exitDecision({
      round,
      maxRounds: d.preset.protocol.maxRounds,
      convergence: d.rounds.find((r) => r.round === round)?.convergence ?? null,
      threshold: d.preset.protocol.convergenceThreshold,
    });
    if (decided) return decided.detail;
  }
  if (reason === 'budget') return d.budgetDecisions?.find((x) => x.kind === 'stop')?.detail ?? reason;
  return d.error ?? reason;
}
