import { estimateMessagesTokens, fitPeers } from '../../protocol/context.js';
import type { PeerView } from '../../protocol/prompts.js';
import { type MatchSide, type Verdict, verdictMessages, verdictSchema } from '../../protocol/tournament.js';
import type { Runner } from '../runner.js';
import type { StructuredOutcome } from '../structured-call.js';

/** The judge's verdict on one match: the winner (one of the two ids, by the schema) and its reasons. */
export async function judgeMatch(runner: Runner, round: number, sides: [MatchSide, MatchSide]): Promise<StructuredOutcome<Verdict>> {
  const model = runner.preset.judge.model;
  const options = runner.callOptions(model, runner.preset.judge.options, 'verdict', { temperature: 0 });
  const asPeers: PeerView[] = sides.map((s) => ({ agentId: s.agentId, position: `${s.position}\n${s.critique}` }));
  const fixed = estimateMessagesTokens(verdictMessages(runner.question, round, [{ ...sides[0], position: '', critique: '' }, { ...sides[1], position: '', critique: '' }]));
  const fit = fitPeers(fixed, asPeers, runner.promptBudget(model, options));
  if (!fit) return { status: 'failed', error: `the match does not fit num_ctx ${runner.numCtx[model]} for the judge`, code: 'CONTEXT' };
  // Shortening is applied to each side's answer and critique alike, in proportion.
  const fitted = sides.map((s, i) => {
    const p = fit.peers[i]!;
    if (!p.shortened) return s;
    const keep = p.position.length / (s.position.length + s.critique.length + 1);
    return { ...s, position: clipTo(s.position, keep), critique: clipTo(s.critique, keep), shortened: true };
  }) as [MatchSide, MatchSide];
  const truncation = fit.droppedChars > 0 ? `match sides shortened by ${fit.droppedChars} characters for the judge` : null;
  return runner.call({
    stage: 'verdict',
    round,
    agentId: 'judge',
    model,
    messages: verdictMessages(runner.question, round, fitted),
    options,
    schema: verdictSchema(sides[0].agentId, sides[1].agentId),
    truncation,
  });
}

function clipTo(text: string, share: number): string {
  const max = Math.max(40, Math.floor(text.length * share));
  return text.length <= max ? text : `${text.slice(0, max - 1).trimEnd()}…`;
}
