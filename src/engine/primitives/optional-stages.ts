import { StoreError, errorMessage } from '../../errors.js';
import type { TranscriptRound } from '../../protocol/prompts.js';
import type { Runner } from '../runner.js';
import type { StageContext } from '../stage.js';

/** The optional stages (tension map, votes) over the given rounds; returns sections for the synthesizer. A failed stage is skipped with a warning. */
export async function runStages(runner: Runner, rounds: readonly TranscriptRound[]): Promise<string[]> {
  const sections: string[] = [];
  for (const stage of runner.stages) {
    if (runner.interrupted()) break;
    const ctx = stageContext(runner, rounds);
    try {
      const output = await stage.run(ctx);
      sections.push(...(output.synthesisContext ?? []));
    } catch (err) {
      if (runner.interrupted()) break;
      if (err instanceof StoreError) throw err;
      runner.warn(`${stage.name} failed and was skipped: ${errorMessage(err)}`);
    }
  }
  return sections;
}

/** What an optional stage is given: the rounds so far, and a call road that schedules, records and validates. */
export function stageContext(runner: Runner, rounds: readonly TranscriptRound[]): StageContext {
  return {
    debateId: runner.id,
    question: runner.question,
    preset: runner.preset,
    rounds,
    now: runner.now,
    signal: runner.signal,
    ...(runner.clashes === undefined ? {} : { clashes: runner.clashes }),
    emit: (e) => runner.emit(e),
    call: (req) =>
      runner.call({
        stage: req.stage,
        round: req.round,
        agentId: req.agentId,
        model: req.model,
        messages: req.messages,
        options: { ...runner.callOptions(req.model, req.options, req.stage), ...(req.maxTokens ? { num_predict: req.maxTokens } : {}) },
        schema: req.schema,
        ...(req.format ? { format: req.format } : {}),
        ...(req.normalize ? { normalize: req.normalize } : {}),
        ...(req.check ? { check: req.check } : {}),
        ...(req.priority ? { priority: req.priority } : {}),
        ...(req.onCall ? { onRecord: req.onCall } : {}),
      }),
  };
}
