import type { StoredDebate } from '../store/reader.js';
import type { BenchData, StoredTrial } from '../store/bench.js';
import type { RescoreRecord } from '../store/rescore-read.js';
import { allRules, ruleContext } from '../rules/index.js';
import { type Stance, judgedIdsOf, normalisedStancesOf, votesByPosition } from '../rules/stances.js';
import { stanceRounds } from '../render/panel-record.js';
import type { Decision, Recorded, Rule, Trajectory } from '../rules/trajectory.js';
import { answersMatch } from './extract.js';
import { bootstrapCI, mean, pairedBootstrapDiff } from './stats.js';
import type { SuiteItem } from './suite.js';
import { callCost, gradedTrajectory, singleAnswer } from './trajectory.js';

/** Bumped when a field changes meaning or disappears. */
export const RESCORE_VERSION = 1;

/** One rule over one preset's items of a bench run. */
export interface RuleFigure {
  preset: string;
  rule: string;
  family: Rule['family'];
  label: string;
  source: string;
  /** The bench condition this rule reproduces, when it does. */
  condition: string | null;
  /** Items where the rule could decide. */
  n: number;
  /** Items of the preset in the run. */
  items: number;
  /** Why it could not decide on the others (the most frequent reason), or null. */
  unavailable: string | null;
  correct: number;
  accuracy: number | null;
  ciLow: number | null;
  ciHigh: number | null;
  /** This rule minus the run's own scoring, on the items both decided, with a paired bootstrap interval. */
  vsOwn: { own: string; n: number; diff: number; ciLow: number; ciHigh: number } | null;
  callsPerItem: number | null;
  tokensPerItem: number | null;
  gpuSecondsPerItem: number | null;
  meanStopRound: number | null;
}

export interface RunRescore {
  format: 'conclave-rescore';
  version: number;
  run: { id: string; suite: string; items: number; presets: string[] };
  bootstrap: { iterations: number; seed: number; level: number };
  /** Per preset, the rule that is the run's own scoring: the synthesizer, else the final majority. */
  own: Record<string, string>;
  /** Per preset, the most accurate rule that decided every item at no more tokens per item than the run's own; null when none did. */
  best: Record<string, { rule: string; label: string; accuracy: number; tokensPerItem: number; ownAccuracy: number | null; ownTokensPerItem: number | null } | null>;
  rules: RuleFigure[];
}

export interface RescoreOptions {
  /** Only these rules (by name); default every rule. */
  rules?: readonly string[];
  iterations?: number;
}

/** Rules selected by name, out of `rules`; an unknown name is the caller's to report. */
function selectRules(maxRounds: number, names: readonly string[] | undefined, rules: readonly Rule[] = allRules(ruleContext(maxRounds, names))): Rule[] {
  return names === undefined || names.length === 0 ? [...rules] : rules.filter((r) => names.includes(r.name));
}

/** The rules a run's own scoring can be: the synthesizer where the run has one, else the final majority. */
const OWN_RULES: readonly string[] = ['synthesizer', 'majority:final'];

const readRecorded = (row: StoredTrial['results'][number] | undefined, kind: SuiteItem['kind'], missing: string): Recorded =>
  row === undefined ? { recorded: false, why: missing } : row.available ? { recorded: true, vote: singleAnswer(row.answer, kind), note: row.note } : { recorded: false, why: row.note ?? missing };

/** A bench item's trajectory from the record: the answers as the bench read them, the calls' costs, the judge's convergence. */
export function trialTrajectory(trial: StoredTrial, item: SuiteItem, agents: string[], record: RescoreRecord | undefined, reliability?: Record<string, number>): Trajectory {
  const answers = new Map(trial.answers.filter((a) => a.source === 'debate').map((a) => [`${a.round}/${a.slot}`, a.answer]));
  const protocol = record?.preset.protocol;
  return gradedTrajectory({
    agents,
    protocol: protocol?.kind ?? 'debate',
    maxRounds: protocol?.maxRounds ?? trial.maxRounds,
    threshold: protocol?.convergenceThreshold ?? 1,
    status: record?.status ?? trial.debateStatus ?? 'failed',
    exitReason: record?.exitReason ?? trial.exitReason,
    roundsRun: trial.roundsRun ?? 0,
    kind: item.kind,
    answer: (round, agentId) => answers.get(`${round}/${agentId}`) ?? null,
    convergence: (round) => record?.convergence.get(round) ?? null,
    synthesis: readRecorded(trial.results.find((r) => r.condition === 'debate-synth'), item.kind, 'no synthesis recorded'),
    clusterVote: readRecorded(trial.results.find((r) => r.condition === 'cluster-vote'), item.kind, 'no cluster vote recorded'),
    calls: (record?.calls ?? []).map(callCost),
    ...(reliability ? { reliability } : {}),
  });
}

const mostFrequent = (values: readonly string[]): string | null => {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best: string | null = null;
  for (const [v, n] of counts) if (best === null || n > counts.get(best)!) best = v;
  return best;
};

/**
 * Re-scores every finished item of a bench run under every rule, from the record alone.
 * Pure over its inputs: the same data give the same figures, intervals included.
 */
export function rescoreRun(data: BenchData, records: ReadonlyMap<string, RescoreRecord>, options: RescoreOptions = {}): RunRescore {
  const boot = { iterations: options.iterations ?? 2000, seed: data.run.seed, level: 0.95 };
  const itemById = new Map(data.items.map((i) => [i.id, i]));
  const figures: RuleFigure[] = [];
  const own: RunRescore['own'] = {};
  const best: RunRescore['best'] = {};
  for (const snapshot of data.run.presets) {
    const agents = snapshot.preset.agents.map((a) => a.id);
    const trials = data.trials.filter((t) => t.preset === snapshot.name && itemById.has(t.itemId));
    const every = allRules(ruleContext(snapshot.preset.protocol.maxRounds, options.rules));
    const shown = selectRules(snapshot.preset.protocol.maxRounds, options.rules, every);
    // The own scoring is reported, and measured against, whichever rules --rule shows: its candidates are always decided.
    const rules = every.filter((r) => shown.includes(r) || OWN_RULES.includes(r.name));
    // Reliability for the early majority: each agent's round-0 accuracy on the items before this one.
    const seen = new Map<string, { right: number; n: number }>();
    const decisions = trials.map((trial) => {
      const item = itemById.get(trial.itemId)!;
      const reliability = seen.size === 0 ? undefined : Object.fromEntries([...seen].map(([id, s]) => [id, s.right / s.n]));
      const t = trialTrajectory(trial, item, agents, trial.debateId === null ? undefined : records.get(trial.debateId), reliability);
      for (const a of trial.answers) {
        if (a.source !== 'debate' || a.round !== 0) continue;
        const s = seen.get(a.slot) ?? { right: 0, n: 0 };
        s.n += 1;
        if (a.correct) s.right += 1;
        seen.set(a.slot, s);
      }
      const right = (d: Decision): boolean => d.available && d.vote !== null && answersMatch(d.vote.text, item.answer, item.kind);
      return { itemId: trial.itemId, byRule: new Map(rules.map((rule) => { const d = rule.decide(t); return [rule.name, { d, correct: right(d) }] as const; })) };
    });
    const ownRule = decisions.some((x) => x.byRule.get('synthesizer')?.d.available) ? 'synthesizer' : 'majority:final';
    own[snapshot.name] = ownRule;
    const ownByItem = new Map(decisions.flatMap((x) => { const o = x.byRule.get(ownRule); return o?.d.available ? [[x.itemId, o.correct] as const] : []; }));
    const figureOf = (rule: Rule): RuleFigure => {
      const rows = decisions.map((x) => ({ itemId: x.itemId, ...x.byRule.get(rule.name)! }));
      const usable = rows.filter((r) => r.d.available);
      const whys = rows.flatMap((r) => (r.d.available ? [] : [r.d.why]));
      const base = { preset: snapshot.name, rule: rule.name, family: rule.family, label: rule.label, source: rule.source, condition: rule.condition ?? null, items: rows.length, unavailable: mostFrequent(whys) };
      if (usable.length === 0) {
        return { ...base, n: 0, correct: 0, accuracy: null, ciLow: null, ciHigh: null, vsOwn: null, callsPerItem: null, tokensPerItem: null, gpuSecondsPerItem: null, meanStopRound: null };
      }
      const correct = usable.map((r) => r.correct);
      const ci = bootstrapCI(correct, boot);
      const spent = usable.map((r) => (r.d.available ? r.d : null)!).filter((d) => d !== null);
      const paired = usable.filter((r) => ownByItem.has(r.itemId));
      const d = paired.length > 0 ? pairedBootstrapDiff(paired.map((r) => r.correct), paired.map((r) => ownByItem.get(r.itemId)!), boot) : null;
      return {
        ...base,
        n: usable.length,
        correct: correct.filter(Boolean).length,
        accuracy: ci.accuracy,
        ciLow: ci.low,
        ciHigh: ci.high,
        vsOwn: d === null ? null : { own: ownRule, n: paired.length, diff: d.diff, ciLow: d.low, ciHigh: d.high },
        callsPerItem: mean(spent.map((s) => s.spent.calls)),
        tokensPerItem: mean(spent.map((s) => s.spent.promptTokens + s.spent.completionTokens)),
        gpuSecondsPerItem: mean(spent.map((s) => s.spent.gpuSeconds)),
        meanStopRound: mean(spent.map((s) => s.stopRound)),
      };
    };
    const shownFigures = shown.map(figureOf);
    figures.push(...shownFigures);
    const ownFigure = shownFigures.find((f) => f.rule === ownRule) ?? figureOf(every.find((r) => r.name === ownRule)!);
    best[snapshot.name] = bestAtOwnCompute(shownFigures, ownFigure);
  }
  return {
    format: 'conclave-rescore',
    version: RESCORE_VERSION,
    run: { id: data.run.id, suite: data.run.suite, items: data.items.length, presets: data.run.presets.map((p) => p.name) },
    bootstrap: boot,
    own,
    best,
    rules: figures,
  };
}

/**
 * The most accurate rule that decided every item, at no more tokens per item than the run's own
 * (fewer tokens break a tie); null when none did, or when the own scoring decided no item, so
 * there is no budget to hold them to.
 */
export function bestAtOwnCompute(figures: readonly RuleFigure[], own: RuleFigure): RunRescore['best'][string] {
  const budget = own.tokensPerItem;
  if (budget === null) return null;
  let best: RuleFigure | null = null;
  for (const f of figures) {
    if (f.accuracy === null || f.tokensPerItem === null || f.n < f.items || f.tokensPerItem > budget) continue;
    if (best === null || f.accuracy > best.accuracy! || (f.accuracy === best.accuracy && f.tokensPerItem < best.tokensPerItem!)) best = f;
  }
  return best === null
    ? null
    : { rule: best.rule, label: best.label, accuracy: best.accuracy!, tokensPerItem: best.tokensPerItem!, ownAccuracy: own.accuracy, ownTokensPerItem: budget };
}

/** The rules on one debate: where each stops, what it decides and what it would have spent. */
export interface DebateRescore {
  format: 'conclave-rescore-debate';
  version: number;
  debate: { id: string; question: string; preset: string; protocol: string; status: string; exitReason: string | null; roundsRun: number; maxRounds: number; threshold: number };
  /** What the majority rules count: graded answers (a bench item), the judge's stances, or nothing (`why`). */
  basis: { kind: 'answers' | 'stances' | 'none'; why: string | null };
  /** The bench item this debate answered, when it was one. */
  item: { runId: string; itemId: string; gold: string } | null;
  rules: {
    rule: string;
    family: Rule['family'];
    label: string;
    available: boolean;
    why: string | null;
    stopRound: number | null;
    decision: string | null;
    correct: boolean | null;
    spent: { calls: number; promptTokens: number; completionTokens: number; gpuSeconds: number } | null;
    note: string | null;
  }[];
}

/** Applies the rules to one trajectory, with the gold answer when the debate was a bench item. */
export function rescoreTrajectory(
  t: Trajectory,
  head: DebateRescore['debate'],
  item: { runId: string; item: SuiteItem } | null,
  names?: readonly string[],
): DebateRescore {
  return {
    format: 'conclave-rescore-debate',
    version: RESCORE_VERSION,
    debate: head,
    basis: { kind: t.basis.kind, why: t.basis.kind === 'none' ? t.basis.why : null },
    item: item === null ? null : { runId: item.runId, itemId: item.item.id, gold: item.item.answer },
    rules: selectRules(t.maxRounds, names).map((rule) => {
      const d = rule.decide(t);
      if (!d.available) return { rule: rule.name, family: rule.family, label: rule.label, available: false, why: d.why, stopRound: null, decision: null, correct: null, spent: null, note: null };
      return {
        rule: rule.name,
        family: rule.family,
        label: rule.label,
        available: true,
        why: null,
        stopRound: d.stopRound,
        decision: d.vote?.text ?? null,
        correct: item === null ? null : d.vote !== null && answersMatch(d.vote.text, item.item.answer, item.item.kind),
        spent: d.spent,
        note: d.note,
      };
    }),
  };
}

/**
 * Each judged round's stances as the engine decided on them. Those are the normalised stances
 * sealed as the round's `stances` step, which `protocol.decision: trajectory` scored. A round
 * with no such step (a record from before they were written) reads its judge's reply normalised
 * the same way over the agents the judge read: those its schema named, else those whose turn
 * gave a position.
 */
export function judgedStances(debate: Pick<StoredDebate, 'steps' | 'calls' | 'turns'>, panel: readonly string[]): Map<number, Stance[]> {
  const byRound = new Map<number, Stance[]>(stanceRounds(debate).map((r) => [r.round, r.stances]));
  const recorded = new Set(byRound.keys());
  for (const call of debate.calls) {
    if (call.stage !== 'judge' || call.status !== 'ok' || recorded.has(call.round)) continue;
    const read = (agentId: string) => debate.turns.some((t) => t.round === call.round && t.agentId === agentId && t.status === 'ok' && t.position);
    const stances = normalisedStancesOf(call.parsed, judgedIdsOf(call.format) ?? panel.filter(read));
    // A round judged again (a resumed debate) reads its last judge.
    if (stances !== null) byRound.set(call.round, stances);
  }
  return byRound;
}

/**
 * The trajectory of a debate asked outside a bench: open answers cannot be graded, so the
 * majority rules count the judge's stances, as the engine decided on them, when the record has
 * them, and say why not otherwise.
 */
export function openTrajectory(debate: StoredDebate): Trajectory {
  const agents = debate.agents.filter((a) => a.role === 'debater').map((a) => a.id);
  const roundsRun = Math.max(-1, ...debate.turns.map((t) => t.round));
  const stancesByRound = judgedStances(debate, agents);
  // A stance keeps its key while its group continues, so a judge that re-letters its stances is not read as the panel changing its votes.
  const votes = votesByPosition(agents, stancesByRound);
  const rounds: Trajectory['rounds'] = [];
  for (let round = 0; round <= roundsRun; round++) {
    rounds.push({ round, votes: votes.get(round) ?? agents.map(() => null), convergence: debate.rounds.find((r) => r.round === round)?.convergence ?? null });
  }
  const synthesis = debate.synthesis?.synthesis ?? null;
  const lastVote = debate.voting?.iterations.at(-1);
  const top = lastVote ? [...lastVote.tiers].sort((a, b) => a.rank - b.rank)[0] : undefined;
  const artifact = top ? lastVote!.artifacts.find((a) => a.artifactId === top.artifactId) : undefined;
  return {
    agents,
    protocol: debate.preset.protocol.kind ?? 'debate',
    maxRounds: debate.preset.protocol.maxRounds,
    threshold: debate.preset.protocol.convergenceThreshold,
    rounds,
    status: debate.status,
    exitReason: debate.exitReason,
    basis: stancesByRound.size > 0 ? { kind: 'stances' } : { kind: 'none', why: 'unavailable: no stances recorded (an open question is counted by the judge\'s stances, and this record has none)' },
    synthesis: synthesis ? { recorded: true, vote: { key: 'synthesis', text: synthesis.recommendation }, note: null } : { recorded: false, why: `no synthesis (${debate.synthesis?.error ?? debate.status})` },
    clusterVote:
      top === undefined
        ? { recorded: false, why: 'the debate held no cluster vote' }
        : { recorded: true, vote: top.tier === 'reject' || !artifact ? null : { key: artifact.artifactId, text: artifact.text }, note: top.tier === 'reject' ? 'every position was rejected' : null },
    calls: debate.calls.map(callCost),
  };
}

/** The rules no other rule beats on both counts: at least as accurate for no more tokens per item, and better on one. */
export function paretoFront(figures: readonly RuleFigure[]): RuleFigure[] {
  const points = figures.filter((f) => f.accuracy !== null && f.tokensPerItem !== null);
  const dominated = (f: RuleFigure): boolean =>
    points.some((g) => g !== f && g.accuracy! >= f.accuracy! && g.tokensPerItem! <= f.tokensPerItem! && (g.accuracy! > f.accuracy! || g.tokensPerItem! < f.tokensPerItem!));
  return points.filter((f) => !dominated(f)).sort((a, b) => a.tokensPerItem! - b.tokensPerItem!);
}
