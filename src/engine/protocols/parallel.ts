import type { TranscriptRound } from '../../protocol/prompts.js';
import type { ProtocolOutcome, RecordedCalls, Runner } from '../runner.js';
import type { Protocol } from './types.js';
import { answerAll, openingRequest, requireAnswers } from '../primitives/fan-out.js';
import { fillFailedSeats } from '../primitives/fallback.js';
import { runStages } from '../primitives/optional-stages.js';
import { synthesize } from '../primitives/synthesize.js';

/**
 * Parallel answers only: every agent answers once, all at once; the optional stages, if the
 * preset turns any on; then the synthesizer reads every answer and keeps the dissent.
 * A seat whose answer failed gets the orchestrator's fallback analysis, marked as such.
 * No critique and no judge. Calls: n + 1 (and 1 per failed seat). It is the compute baseline for the other protocols.
 */
export const parallel: Protocol = {
  kind: 'parallel',
  shape: (preset, stages) => ({
    support: [preset.synthesizer.model ?? ''],
    synthesisModels: [preset.synthesizer.model ?? ''],
    usesJudge: false,
    stages,
  }),
  run: runParallel,
};

async function runParallel(runner: Runner, from: TranscriptRound[], recorded?: RecordedCalls): Promise<ProtocolOutcome> {
  const { preset } = runner;
  let answers = from[0];
  if (!answers) {
    runner.startRound(0);
    const answered = await answerAll(runner, preset.agents, 0, [preset.synthesizer.model ?? ''], recorded);
    runner.checkpoint();
    requireAnswers(runner, answered, 0);
    const turns = await fillFailedSeats(runner, 0, answered, (a) => openingRequest(runner, a, 0));
    runner.checkpoint();
    answers = { round: 0, turns, judgement: null };
  }
  const rounds = [answers];
  const usable = answers.turns.filter((t) => t.status === 'ok' && !t.fallback).length;
  const filled = answers.turns.filter((t) => t.fallback).length;
  const detail = `${usable} of ${preset.agents.length} agents answered${filled ? `, ${filled} seat${filled === 1 ? '' : 's'} by fallback` : ''}; no critique rounds in this protocol`;
  runner.exit('answered', 0, detail);

  const sections = await runStages(runner, rounds);
  runner.checkpoint();
  const synthesis = await synthesize(runner, rounds, sections);
  runner.checkpoint();
  return { exitReason: 'answered', exitDetail: detail, rounds, synthesis };
}
