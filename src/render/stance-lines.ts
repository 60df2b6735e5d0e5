import type { ProtocolStep } from '../engine/protocol-events.js';
import type { StanceMove } from '../protocol/stances.js';
import type { Paint } from './style.js';

export const MOVE_WORD: Record<StanceMove, string> = { opened: 'opened', held: 'held', moved: 'moved', joined: 'joined the majority', left: 'left the majority', absent: 'absent' };

/** What the live view and a replay print for a round's stances. */
export function stanceStepLines(step: Extract<ProtocolStep, { kind: 'stances' }>, paint: Paint, clip: (s: string) => string): string[] {
  const lines = [`  ${paint('dim', 'stances:')} ${clip(step.stances.map((s) => `${s.id} (${s.agents.join(', ')})`).join(' · '))}`];
  const moves = step.agents.filter((a) => a.move === 'joined' || a.move === 'left' || a.move === 'moved');
  if (moves.length) lines.push(`  ${paint('dim', 'moves:')} ${moves.map((a) => `${a.agentId} ${MOVE_WORD[a.move]}${a.reasoned === false ? ' (no reason stated)' : ''}`).join(', ')}`);
  for (const n of step.notes) lines.push(paint('yellow', `  note: ${clip(n)}`));
  return lines;
}
