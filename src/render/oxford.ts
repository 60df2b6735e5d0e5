import type { ProtocolStep } from '../engine/protocol-events.js';
import type { Argument } from '../protocol/oxford.js';
import type { Paint } from './style.js';

/**
 * An Oxford debate's own shape in every view: the motion and its sides, and the judge's verdict
 * with the decisive argument and the losing side's best point (docs/protocol-oxford.md).
 */

export type MotionStep = Extract<ProtocolStep, { kind: 'motion' }>;
export type RulingStep = Extract<ProtocolStep, { kind: 'ruling' }>;

export const OXFORD_TITLES: Readonly<Record<number, string>> = {
  0: 'Openings · each side states its case, every speaker alone',
  1: "Rebuttals · each speaker answers the other side's openings",
  2: "Closings · each speaker sums up against the other side's rebuttals",
};

const ASSIGNED: Record<MotionStep['assigned'], string> = { preset: 'as the preset set them', alternated: 'alternated in panel order', mixed: 'set in the preset, the rest alternated' };

export function sidesText(m: MotionStep): string {
  return `for: ${m.for.join(', ')} · against: ${m.against.join(', ')} (${ASSIGNED[m.assigned]})`;
}

export function argumentText(a: Argument): string {
  return `${a.speaker} (${a.side}): ${a.argument}`;
}

/** `FOR the motion, margin 72/100`, or why there is no verdict. */
export function verdictText(r: RulingStep): string {
  return r.ruling ? `${r.ruling.winner.toUpperCase()} the motion, margin ${Math.round(r.ruling.margin * 100)}/100` : `no verdict (${r.error ?? 'the judge gave none'})`;
}

/** The steps' lines in the live view and replays. */
export function oxfordStepLines(step: MotionStep | RulingStep, paint: Paint, clip: (s: string) => string): string[] {
  if (step.kind === 'motion') return [`  ${paint('bold', 'motion:')} ${clip(step.motion)}`, `  ${paint('dim', sidesText(step))}`];
  if (!step.ruling) return [paint('yellow', `  verdict: ${verdictText(step)}`)];
  return [
    `  ${paint('bold', 'verdict:')} ${paint('green', verdictText(step))} ${paint('dim', `· ${clip(step.ruling.reasons.join('; '))}`)}`,
    `  ${paint('dim', 'decisive:')} ${clip(argumentText(step.ruling.decisive))}`,
    `  ${paint('dim', "losing side's best point:")} ${clip(argumentText(step.ruling.losingBest))}`,
  ];
}

/** The last recorded step of that kind: after a resume, the one the run ended with. */
export function lastOf<K extends 'motion' | 'ruling'>(steps: ProtocolStep[], kind: K): Extract<ProtocolStep, { kind: K }> | undefined {
  return steps.filter((s): s is Extract<ProtocolStep, { kind: K }> => s.kind === kind).at(-1);
}

/** The card's OXFORD DEBATE block. */
export function oxfordCardLines(steps: ProtocolStep[], paint: Paint, width: number, wrap: (text: string, width: number) => string[]): string[] {
  const motion = lastOf(steps, 'motion');
  if (!motion) return [];
  const ruling = lastOf(steps, 'ruling');
  const item = (text: string) => wrap(text, width - 4).map((l, i) => (i === 0 ? `  - ${l}` : `    ${l}`));
  const lines = ['', paint('bold', 'OXFORD DEBATE'), ...wrap(motion.motion, width - 2).map((l) => `  ${l}`), ...wrap(sidesText(motion), width - 2).map((l) => `  ${l}`)];
  if (!ruling) return [...lines, `  ${paint('dim', 'no verdict recorded')}`];
  lines.push('', paint('bold', `VERDICT: ${verdictText(ruling)}`));
  if (!ruling.ruling) return lines;
  for (const r of ruling.ruling.reasons) lines.push(...item(r));
  lines.push(...item(`decisive argument: ${argumentText(ruling.ruling.decisive)}`));
  lines.push(...item(`losing side's best point: ${argumentText(ruling.ruling.losingBest)}`));
  return lines;
}

/** Markdown sections (the steps come escaped). */
export function oxfordMarkdown(steps: ProtocolStep[]): string[] {
  const motion = lastOf(steps, 'motion');
  if (!motion) return [];
  const ruling = lastOf(steps, 'ruling');
  const out = ['## Oxford debate', '', `**Motion:** ${motion.motion}`, '', `Sides: ${sidesText(motion)}.`, ''];
  if (!ruling) return [...out, '_No verdict recorded._', ''];
  out.push(`**Verdict:** ${verdictText(ruling)}.`, '');
  if (!ruling.ruling) return out;
  out.push(...ruling.ruling.reasons.map((r) => `- ${r}`), '');
  out.push(`- **Decisive argument:** ${argumentText(ruling.ruling.decisive)}`, `- **The losing side's best point:** ${argumentText(ruling.ruling.losingBest)}`, '');
  return out;
}

/** ` (for)` after a speaker's id in an Oxford debate's transcript; empty for any other run or agent. */
export function sideTag(steps: ProtocolStep[], agentId: string): string {
  const motion = lastOf(steps, 'motion');
  if (!motion) return '';
  return motion.for.includes(agentId) ? ' (for)' : motion.against.includes(agentId) ? ' (against)' : '';
}
