import { convergenceOf } from '../../protocol/convergence.js';
import { estimateMessagesTokens, fitPeers } from '../../protocol/context.js';
import { type PeerView, judgeMessages } from '../../protocol/prompts.js';
import { judgeSchemaFor } from '../../protocol/schemas.js';
import { type RoundStances, normaliseStances, roundStancesOf, withStanceSection } from '../../protocol/stances.js';
import type { DebateEvent, RoundJudgement, TurnRecord } from '../events.js';
import type { Runner } from '../runner.js';
import { reportedCall } from './reported-call.js';

/**
 * The judge scores how close the usable positions are and groups the agents by stance, in one
 * call; reported as the round's judgement, and the stances (normalised, with each agent's move
 * since `previous`, the last round's stances, reading an agent it did not judge in the group it
 * held before, from `earlier`, the rounds' stances before it) as a `stances` step.
 */
export async function judgeConvergence(runner: Runner, round: number, turns: TurnRecord[], previous: RoundStances | null = null, earlier: readonly (RoundStances | null)[] = []): Promise<RoundJudgement> {
  const model = runner.preset.judge.model;
  const options = runner.callOptions(model, runner.preset.judge.options, 'judge', { temperature: 0 });
  const positions: PeerView[] = turns.filter((t) => t.status === 'ok' && t.position).map((t) => ({ agentId: t.agentId, position: t.position! }));
  const ids = positions.map((p) => p.agentId);
  const messages = (peers: PeerView[]) => withStanceSection(judgeMessages(runner.question, round, peers), ids, previous?.stances ?? null);
  const fixed = estimateMessagesTokens(messages([]));
  const fit = fitPeers(fixed, positions, runner.promptBudget(model, options));
  if (!fit) {
    const judgement: RoundJudgement = { round, status: 'failed', score: null, convergence: null, error: `positions do not fit num_ctx ${runner.numCtx[model]} for the judge` };
    runner.emit({ type: 'round.judged', judgement, at: runner.now() });
    return judgement;
  }
  const truncation = fit.droppedChars > 0 ? `positions shortened by ${fit.droppedChars} characters for the judge` : null;
  // The judge's reply, its score and its stances are written together.
  return reportedCall(runner, { stage: 'judge', round, agentId: 'judge', model, messages: messages(fit.peers), options, schema: judgeSchemaFor(ids), truncation }, (outcome) => {
    let judgement: RoundJudgement;
    if (outcome.status === 'ok') {
      const { stances: reply, ...score } = outcome.value;
      const normal = normaliseStances(reply, ids);
      const stances = roundStancesOf({ round, ...normal, panel: runner.preset.agents.map((a) => a.id), previous, earlier, turns });
      judgement = { round, status: 'ok', score, convergence: convergenceOf(score), error: null, stances };
    } else judgement = { round, status: 'failed', score: null, convergence: null, error: outcome.error };
    const at = runner.now();
    const events: DebateEvent[] = [{ type: 'round.judged', judgement, at }];
    if (judgement.stances) events.push({ type: 'protocol.step', step: { kind: 'stances', ...judgement.stances }, at });
    return { value: judgement, events };
  });
}
