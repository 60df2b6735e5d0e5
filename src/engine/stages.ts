import type { ExtraStage } from './stage.js';

/** The optional stages, in the order they run after the last debate round. Each checks the preset to see if it is on. */
export function builtinStages(): ExtraStage[] {
  return [];
}
