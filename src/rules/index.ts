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

/** The rule of this name; the names do not depend on maxRounds except the per-round ones. */
export function ruleNamed(name: string, ctx: RuleContext): Rule | undefined {
  return allRules(ctx).find((r) => r.name === name);
}
