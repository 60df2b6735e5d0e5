import type { Preset, ProtocolKind } from '../../config/preset-schema.js';
import type { TranscriptRound } from '../../protocol/prompts.js';
import type { ProtocolOutcome, RecordedCalls, Runner, RunShape } from '../runner.js';
import type { ExtraStage } from '../stage.js';

/** A protocol: a small program over the runner's primitives, one file each. */
export interface Protocol {
  kind: ProtocolKind;
  /** What the runner schedules for it: models beyond the panel, who needs room for a synthesis, its optional stages. */
  shape(preset: Preset, stages: ExtraStage[]): Omit<RunShape, 'synthesizer'>;
  /**
   * Runs it. `from` holds rounds already recorded (a transcript so far), oldest first; a
   * fresh run passes none. The debate goes on from its last stored round, parallel and
   * tournament reuse stored round-0 answers, a decomposition starts over. `recorded` holds the
   * calls that finished in the round after those, which was left incomplete: the agents behind
   * them are not asked again in that round.
   */
  run(runner: Runner, from: TranscriptRound[], recorded?: RecordedCalls): Promise<ProtocolOutcome>;
}
