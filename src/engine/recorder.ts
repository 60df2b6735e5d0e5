import { recordAttachments, recordBudgetDecision } from '../store/material.js';
import { recordProtocolStep } from '../store/protocols.js';
import { recordQuality } from '../store/quality.js';
import type { Store } from '../store/store.js';
import { recordTensionUpdate } from '../store/tensions.js';
import { recordBallot, recordVoteArtifacts, recordVoteTiers } from '../store/voting.js';
import { VERSION } from '../version.js';
import type { CallRecord, DebateEvent, DebateListener } from './events.js';

/** Where a resumed debate goes on from, and what its record already holds. */
export interface ResumePoint {
  /** The last complete round reused; -1 when none was. */
  fromRound: number;
  roundsCompleted: number;
  finalConvergence: number | null;
}

/**
 * Writes a debate to the store as it happens: each call as soon as it ends, each in
 * its own transaction. Errors propagate: the runner stops rather than lose records.
 */
export function recorder(store: Store, options: { resume?: ResumePoint } = {}): DebateListener {
  return Object.assign(recordEvents(store, options), { progress: false });
}

function recordEvents(store: Store, options: { resume?: ResumePoint }): (event: DebateEvent) => void {
  const resume = options.resume;
  let debateId = '';
  let roundsCompleted = resume?.roundsCompleted ?? 0;
  let finalConvergence: number | null = resume?.finalConvergence ?? null;
  // Row ids of the calls stored so far, so feature rows (votes) can point at the calls behind them.
  const callIds = new WeakMap<CallRecord, number>();
  let lastCallId: number | null = null;
  return (event: DebateEvent): void => {
    switch (event.type) {
      case 'debate.started':
        debateId = event.debateId;
        if (resume) {
          // The debate's row, preset and panel are already recorded: mark where it goes on.
          store.resumeDebate(event.debateId, { fromRound: resume.fromRound, host: event.host, plan: event.plan, at: event.at });
          break;
        }
        store.createDebate({
          id: event.debateId,
          question: event.question,
          preset: event.preset,
          engineVersion: VERSION,
          host: event.host,
          agents: event.agents,
          createdAt: event.at,
        });
        if (event.plan !== undefined) store.setPlan(event.debateId, event.plan);
        recordAttachments(store, event.debateId, event.attachments ?? []);
        break;
      case 'budget.decision':
        recordBudgetDecision(store, debateId, event.decision, event.at);
        break;
      case 'call.finished':
        lastCallId = store.recordCall(event.call);
        callIds.set(event.call, lastCallId);
        break;
      case 'turn.finished':
        store.recordTurn(debateId, event.turn);
        break;
      case 'quality.rated':
        recordQuality(store, debateId, event.rating, event.at);
        break;
      case 'turn.reused':
        store.recordReusedTurn(debateId, { round: event.round, agentId: event.agentId, call: event.callNumber });
        break;
      case 'round.judged':
        store.recordJudgement(debateId, event.judgement);
        roundsCompleted = event.judgement.round;
        if (event.judgement.convergence !== null) finalConvergence = event.judgement.convergence;
        break;
      case 'vote.artifacts':
        recordVoteArtifacts(store, debateId, event.artifacts);
        break;
      case 'vote.cast':
        recordBallot(store, debateId, event.ballot, event.calls.map((c) => callIds.get(c) ?? null));
        break;
      case 'vote.tiers':
        recordVoteTiers(store, debateId, event.tiers);
        break;
      case 'tensions.update':
        recordTensionUpdate(store, debateId, event.update, event.at);
        break;
      case 'protocol.step':
        recordProtocolStep(store, debateId, event.step, lastCallId, event.at);
        break;
      case 'synthesis.finished':
        store.recordSynthesis(debateId, event.result, event.at);
        break;
      case 'debate.finished':
        store.finishDebate(debateId, {
          status: event.status,
          exitReason: event.exitReason,
          error: event.error,
          roundsCompleted,
          finalConvergence,
          finishedAt: event.at,
        });
        break;
      default:
        break;
    }
  };
}
