import { aggregationRules } from './aggregation.js';
import { earlyMajorityRules } from './early-majority.js';
import { stoppingRules } from './stopping.js';
import type { Rule, RuleContext, RuleFamilyFactory } from './trajectory.js';

export type { CallCost, Decision, Recorded, Rule, RuleContext, RuleFamily, Spent, Trajectory, TrajectoryRound, Vote } from './trajectory.js';
export { plurality } from './trajectory.js';

/** Every family of rules; a new family is one file and one line here. */
const FAMILIES: RuleFamilyFactory[] = [stoppingRules, aggregationRules, earlyMajorityRules];

/** Every rule, for a panel whose preset allows `maxRounds` critique rounds. */
export function allRules(ctx: RuleContext): Rule[] {
  return FAMILIES.flatMap((family) => family(ctx));
}

const THRESHOLD_NAME = /^stop:threshold@(.*)$/;

/**
 * A rule's name as the rules write it: `stop:threshold@.7` and `stop:threshold@0.700` are
 * `stop:threshold@0.70`. A threshold that is not a number of at most two decimals in (0, 1] is
 * left as typed, for the caller to refuse.
 */
export function canonicalRuleName(name: string): string {
  const x = thresholdOf(name);
  return x === null ? name : `stop:threshold@${x.toFixed(2)}`;
}

/** The judge threshold a rule name asks for, when it is one: in (0, 1], in hundredths. */
export function thresholdOf(name: string): number | null {
  const text = THRESHOLD_NAME.exec(name)?.[1];
  if (text === undefined || !/^(?:0?\.\d+|1(?:\.0*)?|0)$/.test(text)) return null;
  const x = Number(text);
  return x > 0 && x <= 1 && Math.abs(x * 100 - Math.round(x * 100)) < 1e-9 ? x : null;
}

/** The context that makes every rule in `names` exist: the thresholds they ask for beside the swept ones. */
export function ruleContext(maxRounds: number, names: readonly string[] = []): RuleContext {
  const thresholds = names.map(thresholdOf).filter((x): x is number => x !== null);
  return thresholds.length === 0 ? { maxRounds } : { maxRounds, thresholds };
}

/** The rule of this name; the names do not depend on maxRounds except the per-round ones. */
export function ruleNamed(name: string, ctx: RuleContext): Rule | undefined {
  return allRules(ctx).find((r) => r.name === name);
}
