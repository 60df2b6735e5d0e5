import type { Preset } from './preset-schema.js';

/** Models that may write the synthesis: the fixed one, or the rotation list (default: the panel's models). */
export function synthesizerCandidates(preset: Preset): string[] {
  const s = preset.synthesizer;
  if (!s.rotate) return s.model ? [s.model] : [];
  return s.models ?? [...new Set(preset.agents.map((a) => a.model))];
}

/** How the synthesizer of one debate was chosen; recorded with the debate. */
export interface SynthesizerChoice {
  model: string;
  rotate: boolean;
  /** The debate's turn in the rotation (0 for a fixed synthesizer). */
  turn: number;
  candidates: string[];
  /** Panel agents that run the same model: their arguments may weigh more in the synthesis. */
  panelAgents: string[];
}

/**
 * Picks the synthesizer for the `turn`-th debate with this preset and returns the preset
 * with that model filled in, so everything downstream reads one `synthesizer.model`.
 */
export function pickSynthesizer(preset: Preset, turn: number): { preset: Preset; choice: SynthesizerChoice } {
  const candidates = synthesizerCandidates(preset);
  const rotate = preset.synthesizer.rotate === true;
  const index = rotate ? ((turn % candidates.length) + candidates.length) % candidates.length : 0;
  const model = candidates[index] ?? preset.synthesizer.model ?? '';
  const panelAgents = preset.agents.filter((a) => a.model === model).map((a) => a.id);
  return {
    preset: { ...preset, synthesizer: { ...preset.synthesizer, model } },
    choice: { model, rotate, turn: rotate ? turn : 0, candidates, panelAgents },
  };
}

/** The synthesizer model of a preset whose choice has been made (a recorded one, or a fixed one). */
export function synthesizerModel(preset: Preset): string {
  return preset.synthesizer.model ?? synthesizerCandidates(preset)[0] ?? '';
}
