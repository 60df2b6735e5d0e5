import { InputError } from '../errors.js';
import { closest } from '../suggest.js';
import { CONDITIONS, type Condition } from './conditions.js';
import type { ConditionStats } from './report.js';

/** The exit code of a bench whose `--fail-under` gate failed (README, "Exit codes"). */
export const GATE_EXIT = 7;

export interface GateRule {
  condition: Condition;
  /** Accuracy from 0 to 1. */
  floor: number;
}

/** `--fail-under CONDITION=ACCURACY`: an accuracy as 0.8, or 80%. */
export function parseGate(values: readonly string[]): GateRule[] {
  return values.map((raw) => {
    const text = String(raw);
    const eq = text.indexOf('=');
    const name = (eq < 0 ? text : text.slice(0, eq)).trim();
    const figure = eq < 0 ? '' : text.slice(eq + 1).trim();
    if (!(CONDITIONS as readonly string[]).includes(name)) {
      const near = closest(name, CONDITIONS);
      throw new InputError('BAD_FLAG', `--fail-under names the condition \`${name}\`, which the bench does not have.${near ? ` Did you mean \`${near}\`?` : ''}`, {
        hint: `Conditions: ${CONDITIONS.join(', ')}. Write it as CONDITION=ACCURACY, e.g. --fail-under debate-synth=0.8.`,
      });
    }
    const percent = figure.endsWith('%');
    const value = Number(percent ? figure.slice(0, -1) : figure);
    const floor = percent ? value / 100 : value;
    if (figure === '' || !Number.isFinite(value) || floor < 0 || floor > 1) {
      throw new InputError('BAD_FLAG', `--fail-under ${name} needs an accuracy from 0 to 1 (or 0% to 100%); got \`${figure}\`.`, { hint: `For example --fail-under ${name}=0.8 or ${name}=80%.` });
    }
    return { condition: name as Condition, floor };
  });
}

/**
 * What fails the gate, one line each: every row of a gated condition (each preset; each agent for
 * `single`) below its floor, and a gated condition the run could not measure, since a gate that
 * passes on nothing would let a broken run through.
 */
export function gateFailures(rules: readonly GateRule[], rows: readonly ConditionStats[]): string[] {
  const out: string[] = [];
  const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;
  for (const rule of rules) {
    const mine = rows.filter((r) => r.condition === rule.condition);
    if (mine.length === 0) out.push(`${rule.condition}: not measured in this run; it cannot pass a floor of ${pct(rule.floor)}.`);
    for (const r of mine) {
      if (!r.available || r.accuracy === null) out.push(`${r.preset} · ${r.label}: not measured (${r.note ?? 'unavailable'}); it cannot pass a floor of ${pct(rule.floor)}.`);
      else if (r.accuracy < rule.floor) out.push(`${r.preset} · ${r.label}: accuracy ${pct(r.accuracy)} (${r.correct}/${r.n}) is below ${pct(rule.floor)}.`);
    }
  }
  return out;
}
