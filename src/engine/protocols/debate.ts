import { exitDecision, scoreVerdict } from '../../protocol/convergence.js';
import type { TranscriptRound } from '../../protocol/prompts.js';
import type { TurnRecord } from '../events.js';
import type { ProtocolOutcome, RecordedCalls, Runner } from '../runner.js';
import type { Protocol } from './types.js';
import { mapClashes } from '../primitives/clashes.js';
import type { AgentSpec } from '../../config/preset-schema.js';
import { critiqueRequest, critiqueRound } from '../primitives/critique-round.js';
import { answerAll, openingRequest, requireAnswers } from '../primitives/fan-out.js';
import { fillFailedSeats } from '../primitives/fallback.js';
import { judgeConvergence } from '../primitives/judge.js';
import { runStages } from '../primitives/optional-stages.js';
import { synthesize } from '../primitives/synthesize.js';
import { antiConformityBrief } from '../../protocol/anti-conformity.js';
import { trajectoryChoice, trajectorySection } from '../../protocol/trajectory-decision.js';
import { advocateRound, advocateStep, withoutAdvocate } from '../primitives/advocate.js';
import { markAdvocates } from '../../protocol/advocate.js';

/**
 * The debate: every agent answers alone (round 0); when the preset maps tensions, the clashes
 * between those answers are mapped before anyone reads a peer; then critique rounds, each agent
 * reading every peer's last position and the open clashes it is a party to, with the judge
 * scoring convergence after each round, until it converges or the round limit is reached; then
 * the optional stages (the targeted exchange on clashes still open, the map, votes); then the synthesis.
 * With `protocol.advocate`, one agent per critique round, in turn, is briefed to argue against the
 * majority, and the judge scores convergence without its turn (docs/protocol-advocate.md).
 * A seat whose turn failed gets the orchestrator's fallback analysis for that round, marked as
 * such; its agent is asked again the next round.
 * Calls: n + 1 for round 0 and its score, the clash map (docs/tensions.md), n + 1 per critique
 * round, 1 per failed seat, 1 for the synthesis.
 */
export const debate: Protocol = {
  kind: 'debate',
  shape: (preset, stages) => ({
    support: [preset.judge.model, preset.synthesizer.model ?? ''],
    synthesisModels: [preset.synthesizer.model ?? ''],
    usesJudge: true,
    stages,
  }),
  run: runDebateProtocol,
};

async function runDebateProtocol(runner: Runner, from: TranscriptRound[], recorded?: RecordedCalls): Promise<ProtocolOutcome> {
  const { preset, scheduler } = runner;
  const agents = preset.agents;
  const { maxRounds, convergenceThreshold: threshold } = preset.protocol;
  const judge = preset.judge.model;
  const synthesizer = preset.synthesizer.model ?? '';
  // Models to have loaded when a round's last group finishes: the judge, and the synthesizer when it may be next.
  const upNext = (round: number): string[] => (round >= maxRounds || scheduler.plan.allResident ? [judge, synthesizer] : [judge]);
  const rounds: TranscriptRound[] = [...from];

  let current = rounds.at(-1);
  if (!current) {
    runner.startRound(0);
    const answered = await answerAll(runner, agents, 0, upNext(0), recorded);
    runner.checkpoint();
    requireAnswers(runner, answered, 0);
    // A seat whose answer failed gets the orchestrator's fallback, so round 1 has no hole.
    const openings = await fillFailedSeats(runner, 0, answered, (a) => openingRequest(runner, a, 0));
    runner.checkpoint();
    current = { round: 0, turns: openings, judgement: null };
    rounds.push(current);
  }
  if (!current.judgement) {
    // A stored critique round judged again leaves its advocate out, as when it ran.
    const before = rounds.at(-2)?.judgement?.stances ?? null;
    const advocate = preset.protocol.advocate ? advocateRound(runner, current.round, before) : null;
    current.judgement = await judgeConvergence(runner, current.round, withoutAdvocate(current.turns, advocate), before, stancesOf(rounds));
  }
  // Clashes are found while they still stand: on the opening answers, before the first critique round.
  await mapClashes(runner, rounds);
  runner.checkpoint();
  // With early exit off the judge's score is still recorded, but only maxRounds ends the rounds.
  const earlyExit = preset.protocol.earlyExit !== false;
  const stopAt = (convergence: number | null): number | null => (earlyExit ? convergence : null);
  // Anti-conformity: every agent reads the same critique brief; a round's advocate reads its own.
  const critiqueBrief = preset.protocol.critique === 'anti-conformity' ? antiConformityBrief() : null;
  let exit = decideExit(runner, current, stopAt(current.judgement.convergence));

  for (let round = current.round + 1; !exit; round++) {
    runner.checkpoint();
    if (runner.tally.exhausted()) {
      // The budget is spent: no further round; the synthesis (essential) still runs on what exists.
      const detail = `the token budget (${runner.tally.limit?.toLocaleString('en-US')} tokens) was spent after round ${current.round}; ${maxRounds - current.round} critique round${maxRounds - current.round === 1 ? '' : 's'} not held`;
      runner.budgetDecision({ kind: 'stop', stage: null, round: current.round, agentId: null, detail });
      exit = { reason: 'budget', detail };
      break;
    }
    runner.startRound(round);
    const previous: TurnRecord[] = current.turns;
    const stancesBefore = current.judgement?.stances ?? null;
    const advocate = preset.protocol.advocate ? advocateRound(runner, round, stancesBefore) : null;
    // Only the first round asked can have calls recorded before an interruption.
    const briefOf = (a: AgentSpec): string | null => (a.id === advocate?.agentId ? advocate.brief : critiqueBrief);
    const asked = await critiqueRound(runner, round, agents, previous, () => previous, upNext(round), round === from.length ? recorded : undefined, briefOf);
    runner.checkpoint();
    const own = (a: AgentSpec) => previous.find((t) => t.agentId === a.id);
    const turns = await fillFailedSeats(runner, round, asked, (a) => critiqueRequest(runner, a, round, own(a), previous, briefOf(a)));
    runner.checkpoint();
    current = { round, turns, judgement: null };
    rounds.push(current);
    current.judgement = await judgeConvergence(runner, round, withoutAdvocate(turns, advocate), stancesBefore, stancesOf(rounds));
    // The advocate of the round before is reported once this round shows who moved after reading it.
    if (preset.protocol.advocate) advocateStep(runner, rounds.slice(0, -1), current.judgement.stances ?? null);
    exit = decideExit(runner, current, stopAt(current.judgement.convergence));
  }
  runner.checkpoint();
  if (preset.protocol.advocate) advocateStep(runner, rounds, null);
  runner.exit(exit.reason, current.round, exit.detail);

  const sections = await runStages(runner, rounds);
  runner.checkpoint();
  // decision: trajectory: the Free-MAD score over all rounds chooses the position the synthesis writes up.
  const decided = preset.protocol.decision === 'trajectory' ? decideByTrajectory(runner, rounds) : null;
  // The advocates' turns reach the synthesizer marked as advocacy, not as the agents' views.
  const read = preset.protocol.advocate ? markAdvocates(rounds, agents.map((a) => a.id)) : rounds;
  const synthesis = await synthesize(runner, read, decided ? [...sections, decided] : sections);
  runner.checkpoint();
  return { exitReason: exit.reason, exitDetail: exit.detail, rounds, synthesis };
}

/**
 * Whether to stop after `round`: at the threshold, unless the judge's own stances of the round split
 * the panel with no majority (the live view says why it goes on), or at the ceiling.
 */
/** Each round's stances so far, for the judge to read an agent a round left out in the group it held. */
function stancesOf(rounds: readonly TranscriptRound[]) {
  return rounds.map((r) => r.judgement?.stances ?? null);
}

function decideExit(runner: Runner, round: TranscriptRound, convergence: number | null): ReturnType<typeof exitDecision> {
  const { maxRounds, convergenceThreshold: threshold } = runner.preset.protocol;
  const input = { round: round.round, maxRounds, convergence, threshold, stanceSizes: round.judgement?.stances?.stances.map((s) => s.agents.length) ?? null };
  if (convergence !== null && scoreVerdict(input) === 'split') {
    runner.warn(`round ${round.round}: the judge scored ${convergence.toFixed(2)} ≥ ${threshold} but its own stances split the panel ${input.stanceSizes!.join('/')}, with no majority: not taken as convergence`);
  }
  return exitDecision(input);
}

/** Records what the trajectory rule chose and returns the synthesizer's section, or null when it could not choose. */
function decideByTrajectory(runner: Runner, rounds: readonly TranscriptRound[]): string | null {
  const { maxRounds, convergenceThreshold } = runner.preset.protocol;
  const choice = trajectoryChoice(runner.preset.agents.map((a) => a.id), rounds.map((r) => r.judgement?.stances ?? null), maxRounds, convergenceThreshold);
  runner.step({ kind: 'trajectory', ...choice });
  return trajectorySection(choice);
}
