import type { ExtraStage } from './stage.js';
import { tensionStage } from './stages/tensions.js';
import { votingStage } from './stages/voting.js';

/** The optional stages, in the order they run after the last debate round. Each checks the preset to see if it is on. */
export function builtinStages(): ExtraStage[] {
  // The tension map comes first: it reads the debate as it ended, before any vote reshapes it.
  return [tensionStage(), votingStage()];
}
