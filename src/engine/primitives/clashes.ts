import { StoreError, errorMessage } from '../../errors.js';
import type { TranscriptRound } from '../../protocol/prompts.js';
import { type ClashBoard, type ClashUpdate, type TensionUpdate, agentPairs, batchPairs, settleClashes as settleTensions } from '../../protocol/tensions.js';
import type { TurnRecord } from '../events.js';
import type { Runner } from '../runner.js';
import { mapClashes as mapBoard, mapsTensions } from '../stages/tensions.js';
import { stageContext } from './optional-stages.js';

/**
 * Maps the clashes on the answers of the last given round (a debate: round 0, before the first
 * critique round) when the preset maps tensions. Each critique round then shows every agent the
 * open clashes it is a party to, and settles those it concedes. Critique rounds already recorded
 * (a resumed run) are settled again from their stored replies, on the board read back from the
 * record when the run before the interruption had mapped it. A failure leaves no board.
 */
export async function mapClashes(runner: Runner, rounds: readonly TranscriptRound[]): Promise<void> {
  if (!mapsTensions(runner.preset) || runner.interrupted()) return;
  try {
    // Clashes are the panel's own: a seat the orchestrator filled has no claims an agent would defend.
    const own = rounds.slice(0, 1).map((r) => ({ ...r, turns: r.turns.filter((t) => !t.fallback) }));
    if (runner.clashes === undefined) runner.clashes = await mapBoard(stageContext(runner, own), runner.recordedClaims);
  } catch (err) {
    if (err instanceof StoreError) throw err;
    runner.clashes = null;
    runner.warn(`mapping the clashes failed: ${errorMessage(err)}`);
  }
  for (const r of rounds.slice(1)) settleClashes(runner, r.round, r.turns);
}

/**
 * Hands a resumed debate whose clash board was not mapped to the end (a claims or clash call
 * cut off, or one that never reached its host) the claims its finished claims calls gave: the
 * board is mapped again, and only the agents without them are asked for claims.
 */
export function reuseClaims(runner: Runner, claims: ReadonlyMap<string, readonly string[]>): void {
  runner.recordedClaims = claims;
}

/**
 * Takes the clash board a resumed debate had mapped before its interruption, so its claim and
 * clash calls are not sent again, and records its claims and clashes anew (a resumption clears
 * the stage rows, which the reused rounds then settle again).
 */
export function reuseClashes(runner: Runner, board: ClashBoard): void {
  runner.clashes = board;
  const clashCalls = batchPairs(agentPairs(board.agents), runner.preset.tensions?.pairsPerCall ?? 1).length;
  const claimGaps = board.gaps.filter((g) => g.startsWith('no claims from'));
  const update = (u: TensionUpdate): void => runner.emit({ type: 'tensions.update', update: u, at: runner.now() });
  update({ step: 'claims', agents: board.agents, claims: board.claims, gaps: claimGaps, answerTokens: board.answerTokens, pairs: board.pairsTotal, clashCalls, round: board.round });
  update({ step: 'clashes', tensions: board.tensions, gaps: board.gaps.filter((g) => !claimGaps.includes(g)), decision: null, round: board.round });
}

/** After a critique round: the clashes a party conceded in it are resolved in that round. */
export function settleClashes(runner: Runner, round: number, turns: readonly TurnRecord[]): void {
  const board = runner.clashes;
  if (!board || !board.tensions.some((t) => t.resolution === 'open')) return;
  const updates = turns
    .filter((t) => t.status === 'ok' && t.critique?.clashUpdates?.length)
    .map((t) => ({ agentId: t.agentId, updates: t.critique!.clashUpdates as ClashUpdate[] }));
  const settled = settleTensions(board.tensions, round, updates);
  board.tensions = settled.tensions;
  const open = board.tensions.filter((t) => t.resolution === 'open').map((t) => t.id);
  runner.emit({ type: 'tensions.update', update: { step: 'settled', round, resolved: settled.resolved, open }, at: runner.now() });
}
