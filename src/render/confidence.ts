import { type ComputedConfidence, computeConfidence } from '../protocol/confidence.js';
import { independenceOf } from '../protocol/stances.js';
import type { StoredDebate } from '../store/store.js';
import { figuresOf } from './panel-record.js';
import { plural } from '../plural.js';

/** The engine's confidence for a stored debate with a synthesis (docs/confidence.md). */
export function confidenceOf(d: StoredDebate): ComputedConfidence | null {
  const s = d.synthesis?.synthesis;
  if (!s) return null;
  const lastRound = Math.max(-1, ...d.turns.map((t) => t.round));
  const okFinal = new Set(d.turns.filter((t) => t.round === lastRound && t.status === 'ok').map((t) => t.agentId));
  const usable = d.agents.filter((a) => a.role === 'debater' && okFinal.has(a.id)).map((a) => a.id);
  const scored = d.rounds.filter((r) => r.convergence !== null).sort((a, b) => a.round - b.round).at(-1);
  const named = new Set(s.restsOn ?? []);
  const figures = figuresOf(d, usable.filter((id) => named.has(id)));
  return computeConfidence({
    judgeScore: scored?.convergence ?? null,
    threshold: d.preset.protocol.convergenceThreshold,
    restsOn: s.restsOn,
    usable,
    independence: figures ? independenceOf(figures) : null,
  });
}

/** `LOW (judge 0.30 < 0.85, rests on 2/3 agents)`. */
export function confidenceText(c: ComputedConfidence): string {
  const judge = c.judgeScore === null ? 'no judge score' : `judge ${c.judgeScore.toFixed(2)} ${c.judgeScore >= c.threshold ? '≥' : '<'} ${c.threshold}`;
  const rests = c.restsOnUnknown ? 'rests on no named agent' : `rests on ${c.restsOn.length}/${c.of} agents`;
  return `${c.level.toUpperCase()} (${judge}, ${rests}${c.capped ? ', not independent' : ''})`;
}

/** The one line saying why HIGH was lowered, or null. */
export function cappedText(c: ComputedConfidence): string | null {
  return c.capped ? `MEDIUM at most: ${c.capped}` : null;
}

/** Whose final positions the synthesis rests on, by id. */
export function restsOnText(c: ComputedConfidence): string | null {
  return c.restsOn.length > 0 ? `final positions of ${c.restsOn.join(', ')}` : null;
}

/** The synthesizer's own statement, labelled as the model's. */
export function modelConfidenceText(level: string, converged: number): string {
  return `the synthesizer's own statement: ${level}, ${plural(converged, 'agent')} converged`;
}
