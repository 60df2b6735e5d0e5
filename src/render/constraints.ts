import { type ProtocolStep, lastStep } from '../engine/protocol-events.js';
import { type Collision, type MergedConstraint, collisionText, constraintText, userRuling } from '../protocol/constraints.js';
import type { StoredDebate } from '../store/reader.js';
import type { Paint } from './style.js';

type ConstraintsStep = Extract<ProtocolStep, { kind: 'constraints' }>;

/** A collision with what the synthesis said of it: its resolution, or null when it gave none. */
export interface CollisionView extends Collision {
  resolution: string | null;
}

export interface ConstraintsView {
  stage: ConstraintsStep['stage'];
  constraints: MergedConstraint[];
  collisions: CollisionView[];
  tradeOffs: { agentId: string; tradeOff: string }[];
}

/** The merged constraints the synthesis (or reassembly) was given, with its resolution of each collision; null when neither the user nor any agent stated any. */
export function constraintsView(d: StoredDebate): ConstraintsView | null {
  const step = lastStep(d.steps, 'constraints');
  if (!step) return null;
  const resolutions = d.synthesis?.synthesis?.collisionResolutions ?? [];
  return {
    stage: step.stage,
    constraints: step.constraints,
    collisions: step.collisions.map((c) => ({ ...c, resolution: resolutions.find((r) => r.collision === c.id)?.resolution ?? null })),
    tradeOffs: step.tradeOffs,
  };
}

/** The card's CONFLICTS section: each collision of the panel's constraints and how the synthesis resolved it. */
export function constraintCardLines(d: StoredDebate, paint: Paint, width: number, wrap: (text: string, width: number) => string[]): string[] {
  const view = constraintsView(d);
  if (!view || view.collisions.length === 0) return [];
  const lines = ['', paint('bold', `CONFLICTS (${view.collisions.length} between the constraints the agents stated; ${view.constraints.length} merged)`)];
  for (const c of view.collisions) {
    lines.push(...wrap(`${c.id} ${collisionText(c)}`, width - 4).map((l, i) => (i === 0 ? `  ${paint('yellow', l)}` : `    ${l}`)));
    const how = c.resolution ? `Resolved: ${c.resolution}` : 'The synthesis did not say how it resolves this.';
    lines.push(...wrap(how, width - 4).map((l) => `    ${paint(c.resolution ? 'dim' : 'red', l)}`));
    if (c.userBinding) lines.push(`    ${paint('dim', `${userRuling(c)} The user outranks the agents.`)}`);
  }
  return lines;
}

/** The Markdown section of `show` and `export --format md` (of a debate whose strings are escaped already). */
export function constraintMarkdown(d: StoredDebate): string[] {
  const view = constraintsView(d);
  if (!view) return [];
  const out = ['## Constraints and trade-offs', '', `Merged from what the agents stated, as the ${view.stage} was given them (the user's first):`, ''];
  for (const c of view.constraints) out.push(`- ${constraintText(c)}`);
  if (view.collisions.length) {
    out.push('', '### Conflicts', '');
    for (const c of view.collisions) {
      out.push(`- **${c.id}** ${collisionText(c)}${c.userBinding ? ` (${userWords(c)})` : ''}`);
      out.push(`  - ${c.resolution ? `Resolved: ${c.resolution}` : 'The synthesis did not say how it resolves this.'}`);
    }
  }
  if (view.tradeOffs.length) {
    out.push('', '### Trade-offs', '');
    for (const t of view.tradeOffs) out.push(`- ${t.agentId}: ${t.tradeOff}`);
  }
  out.push('');
  return out;
}

/** The short note beside a collision the user is party to, in Markdown and the viewer. */
export function userWords(c: Collision): string {
  return (c.userSide ?? 'requires') === 'requires' ? 'the user requires it' : 'the user prohibits it';
}

export { collisionText, constraintText };
