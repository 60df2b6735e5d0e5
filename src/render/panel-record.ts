import { type AgentFamily, type ConformityFigures, type RoundStances, conformityOf, rereadStances } from '../protocol/stances.js';
import { movedAfter } from '../protocol/advocate.js';
import type { SchedulePlan } from '../schedule/plan.js';
import type { StoredStep } from '../store/protocols.js';
import type { StoredDebate } from '../store/store.js';

/** Each recorded `stances` step, in the order recorded, with its moves read as the engine reads them now (`rereadStances`). */
export function stanceSteps(d: Pick<StoredDebate, 'steps' | 'turns'>): RoundStances[] {
  const steps: RoundStances[] = [];
  for (const { step } of d.steps ?? []) {
    if (step.kind !== 'stances') continue;
    const { kind: _, ...round } = step;
    steps.push(round);
  }
  return rereadStances(steps, d.turns);
}

/**
 * The debate's steps as every view reads them: each `stances` step with its moves read again
 * (`stanceSteps`), and each devil's advocate's `moved` read from the reading of the round after
 * it, as recorded when the advocate's step was; every other step as recorded.
 */
export function readSteps(d: Pick<StoredDebate, 'steps' | 'turns'>): StoredStep[] {
  const readings = stanceSteps(d);
  const latest = new Map<number, RoundStances>();
  let at = 0;
  return (d.steps ?? []).map((s) => {
    if (s.step.kind === 'stances') {
      const reading = readings[at++]!;
      latest.set(reading.round, reading);
      return { ...s, step: { kind: 'stances', ...reading } };
    }
    if (s.step.kind === 'advocate' && s.step.moved !== null) {
      const next = latest.get(s.step.round + 1);
      return next ? { ...s, step: { ...s.step, moved: movedAfter(next, s.step.agentId) } } : s;
    }
    return s;
  });
}

/**
 * The stances recorded for each judged round (`stances` steps), in round order, with each agent's
 * move read from the stances as the engine reads them now (`rereadStances`: matched across rounds
 * by the agents they hold, not by the judge's ids); empty for records without them. A resumed
 * round judged again replaces the earlier reading of it.
 */
export function stanceRounds(d: Pick<StoredDebate, 'steps' | 'turns'>): RoundStances[] {
  const latest = new Map(stanceSteps(d).map((r) => [r.round, r]));
  return [...latest.values()].sort((a, b) => a.round - b.round);
}

/** Each debater's model family as sealed with the plan; null for records from before families were. */
export function familiesOf(d: Pick<StoredDebate, 'plan'>): AgentFamily[] | null {
  return (d.plan as SchedulePlan | null | undefined)?.families ?? null;
}

/** The debate's conformity figures, from what was recorded; null when the record has no families. */
export function figuresOf(d: StoredDebate, restsOn: readonly string[]): ConformityFigures | null {
  const families = familiesOf(d);
  return families ? conformityOf(stanceRounds(d), families, restsOn) : null;
}

/**
 * The debate without what the card and the Markdown never print of a call (its prompt, raw reply,
 * schema, options and parse): escaping them cost most of a render's time on a long record.
 */
export function withoutCallBodies(d: StoredDebate): StoredDebate {
  return { ...d, calls: d.calls.map((c) => ({ ...c, messages: [], raw: '', format: null, options: {}, parsed: null })) };
}
