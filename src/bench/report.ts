import type { BenchAnswerRow, BenchData, StoredTrial } from '../store/bench.js';
import { synthesizerModel } from '../config/synthesizer.js';
import { CONDITION_LABELS, CONDITIONS, type Condition } from './conditions.js';
import { answersMatch } from './extract.js';
import { type FlipMatrix, bootstrapCI, flipMatrix, majorityVote, mean, pairedBootstrapDiff } from './stats.js';
import type { SuiteItem } from './suite.js';
import type { RescoreRecord } from '../store/rescore-read.js';
import { type RunRescore, rescoreRun } from './rescore.js';
import { type ConformityStats, conformityStats } from './conformity.js';

/** Bumped when a field changes meaning or disappears; new fields do not bump it. */
export const BENCH_REPORT_VERSION = 1;

export interface ConditionStats {
  preset: string;
  condition: Condition;
  /** Agent id for `single`; empty otherwise. */
  variant: string;
  /** e.g. `single agent (a1: qwen3:8b)`. */
  label: string;
  available: boolean;
  /** Why the condition has no numbers, when it is unavailable. */
  note: string | null;
  n: number;
  correct: number;
  accuracy: number | null;
  ciLow: number | null;
  ciHigh: number | null;
  /** Mean model calls per item, repairs included. */
  callsPerItem: number | null;
  /** Mean prompt + completion tokens per item. */
  tokensPerItem: number | null;
}

export interface Difference {
  /** The preset of both sides, or `A vs B` across presets. */
  scope: string;
  a: string;
  b: string;
  n: number;
  /** Accuracy of a minus accuracy of b, on the same items. */
  diff: number;
  ciLow: number;
  ciHigh: number;
}

export interface RoundAccuracy {
  preset: string;
  round: number;
  /** Debates that actually ran this round; the others count with their final positions. */
  debatesReaching: number;
  n: number;
  /** Majority vote of the positions held after this round. */
  majority: number;
  /** Mean over agents of each agent's own accuracy. */
  agentMean: number;
}

export interface FlipStats {
  preset: string;
  /** Each agent on each item, its round-0 answer against its final one. */
  agents: FlipMatrix;
  /** The panel's majority at round 0 against its final majority. */
  majority: FlipMatrix;
}

export interface EarlyExitStats {
  preset: string;
  debates: number;
  maxRounds: number;
  /** Debates the judge stopped before maxRounds. */
  earlyExits: number;
  /** Critique rounds not run thanks to those exits. */
  roundsSaved: number;
  /** roundsSaved over all debates that could have run maxRounds. */
  roundsSavedShare: number | null;
  /** Early exits whose final majority was wrong. */
  wrongExits: number;
  wrongExitShare: number | null;
}

export interface MinorityStats {
  preset: string;
  /** Items whose synthesis kept at least one minority position. */
  itemsWithMinority: number;
  /** Minority positions kept (agent and round), counted once each. */
  positions: number;
  /** Of those, how many held the correct answer. */
  correct: number;
  share: number | null;
  /** Items the synthesizer got wrong where a kept minority position was right. */
  rescues: number;
}

export interface ParseFailureStats {
  model: string;
  /** `round 0`, `round 1`, …, `single`, `self-consistency`, `synthesis`. */
  stage: string;
  answers: number;
  unparsed: number;
  /** Calls that failed outright (timeouts, server errors): not parse failures, still wrong. */
  errors: number;
  /** unparsed / (answers − errors). */
  rate: number | null;
}

export interface ModelStats {
  model: string;
  calls: number;
  meanLatencyMs: number | null;
  meanPromptTokens: number | null;
  meanCompletionTokens: number | null;
  /** Completion tokens per second of generation time. */
  tokensPerSecond: number | null;
}

export interface ItemRow {
  id: string;
  gold: string;
  preset: string;
  answers: Record<string, { answer: string | null; correct: boolean }>;
  debateId: string | null;
  rounds: number | null;
  exitReason: string | null;
}

/** Everything `conclave bench report` shows, as one versioned JSON document. */
export interface BenchReport {
  format: 'conclave-bench-report';
  version: number;
  run: {
    id: string;
    suite: string;
    suiteHash: string;
    status: string;
    error: string | null;
    host: string;
    seed: number;
    engineVersion: string;
    createdAt: string;
    finishedAt: string | null;
    items: number;
    trialsDone: number;
    trialsTotal: number;
    presets: { name: string; source: string; agents: { id: string; model: string }[]; judge: string; synthesizer: string; protocol: string; maxRounds: number; threshold: number; voting: boolean }[];
    /** Mean k of self-consistency@k per preset. */
    meanK: Record<string, number | null>;
    /** The run's seal, checked against its rows before these figures were computed; null for a run recorded before bench runs were sealed. */
    seal: string | null;
    /** Said wherever the figures are shown when the seal cannot vouch for all of them (a run recorded before bench runs were sealed); null otherwise. */
    sealNotice: string | null;
  };
  bootstrap: { iterations: number; seed: number; level: number };
  conditions: ConditionStats[];
  differences: Difference[];
  byRound: RoundAccuracy[];
  flips: FlipStats[];
  earlyExit: EarlyExitStats[];
  minority: MinorityStats[];
  /** Majority adoption, right→wrong flips to or away from the majority, error correlation and effective voters, per preset. */
  conformity: ConformityStats[];
  parseFailures: ParseFailureStats[];
  /** Every answer of the run together; `warning` is set when most could not be read. */
  parseHealth: { answers: number; unparsed: number; rate: number | null; warning: string | null };
  models: ModelStats[];
  items: ItemRow[];
  /** Every decision rule re-scored from the record (`conclave rescore`); absent when the report was built without the debates' records. */
  rules?: RunRescore;
}

export interface ReportOptions {
  /** Bootstrap resamples; default 2000. */
  iterations?: number;
  /** The debates' records (calls, judge rounds): with them the report re-scores every decision rule. */
  records?: ReadonlyMap<string, RescoreRecord>;
}

const LEVEL = 0.95;

function conditionKey(condition: string, variant: string): string {
  return variant === '' ? condition : `${condition}:${variant}`;
}

function resultOf(trial: StoredTrial, condition: string, variant = '') {
  return trial.results.find((r) => r.condition === condition && r.variant === variant);
}

function share(part: number, whole: number): number | null {
  return whole === 0 ? null : part / whole;
}

/** Computes every figure of a run's report from its stored data. Pure: the same data and seed give the same report. */
export function buildReport(data: BenchData, options: ReportOptions = {}): BenchReport {
  const iterations = options.iterations ?? 2000;
  const seed = data.run.seed;
  const boot = { iterations, seed, level: LEVEL };
  const itemById = new Map(data.items.map((i) => [i.id, i]));
  const presetNames = data.run.presets.map((p) => p.name);
  const trialsOf = (preset: string): StoredTrial[] => data.trials.filter((t) => t.preset === preset);

  const conditions: ConditionStats[] = [];
  const vectors = new Map<string, { items: string[]; correct: boolean[] }>();
  for (const snapshot of data.run.presets) {
    const trials = trialsOf(snapshot.name);
    const keys: { condition: Condition; variant: string; label: string }[] = [];
    for (const condition of CONDITIONS) {
      if (condition === 'single') {
        for (const agent of snapshot.preset.agents) keys.push({ condition, variant: agent.id, label: `${CONDITION_LABELS.single} (${agent.id}: ${agent.model})` });
      } else {
        keys.push({ condition, variant: '', label: CONDITION_LABELS[condition] });
      }
    }
    for (const key of keys) {
      const rows = trials.map((t) => ({ trial: t, result: resultOf(t, key.condition, key.variant) })).filter((r) => r.result !== undefined);
      const usable = rows.filter((r) => r.result!.available);
      const available = usable.length > 0;
      const missingNote = rows.filter((r) => !r.result!.available).map((r) => r.result!.note).find((x) => x !== null) ?? null;
      if (!available) {
        conditions.push({
          preset: snapshot.name,
          ...key,
          available: false,
          // A run recorded before a condition existed has finished items but no row for it.
          note: missingNote ?? (trials.length === 0 ? 'no finished items' : rows.length === 0 ? 'not measured in this run (recorded before this condition existed)' : 'not available'),
          n: 0,
          correct: 0,
          accuracy: null,
          ciLow: null,
          ciHigh: null,
          callsPerItem: null,
          tokensPerItem: null,
        });
        continue;
      }
      const correct = usable.map((r) => r.result!.correct);
      const ci = bootstrapCI(correct, boot);
      vectors.set(`${snapshot.name}\u0000${conditionKey(key.condition, key.variant)}`, { items: usable.map((r) => r.trial.itemId), correct });
      conditions.push({
        preset: snapshot.name,
        ...key,
        available: true,
        note: usable.length < rows.length ? `unavailable on ${rows.length - usable.length} of ${rows.length} items (${missingNote ?? 'no reason recorded'})` : null,
        n: usable.length,
        correct: correct.filter(Boolean).length,
        accuracy: ci.accuracy,
        ciLow: ci.low,
        ciHigh: ci.high,
        callsPerItem: mean(usable.map((r) => r.result!.calls)),
        tokensPerItem: mean(usable.map((r) => r.result!.promptTokens + r.result!.completionTokens)),
      });
    }
  }

  const differences: Difference[] = [];
  const diff = (scope: string, presetA: string, a: string, presetB: string, b: string, labelA: string, labelB: string): void => {
    const va = vectors.get(`${presetA}\u0000${a}`);
    const vb = vectors.get(`${presetB}\u0000${b}`);
    if (!va || !vb) return;
    const byItem = new Map(vb.items.map((id, i) => [id, vb.correct[i]!]));
    const pa: boolean[] = [];
    const pb: boolean[] = [];
    va.items.forEach((id, i) => {
      const other = byItem.get(id);
      if (other === undefined) return;
      pa.push(va.correct[i]!);
      pb.push(other);
    });
    if (pa.length === 0) return;
    const d = pairedBootstrapDiff(pa, pb, boot);
    differences.push({ scope, a: labelA, b: labelB, n: pa.length, diff: d.diff, ciLow: d.low, ciHigh: d.high });
  };
  const PAIRS: [Condition, Condition][] = [
    ['debate-vote', 'sc'],
    ['debate-synth', 'sc'],
    ['cluster-vote', 'sc'],
    ['debate-vote', 'self-correction'],
    ['self-correction', 'round0-vote'],
    ['debate-vote', 'round0-vote'],
    ['debate-synth', 'debate-vote'],
    ['sc', 'round0-vote'],
  ];
  for (const name of presetNames) {
    for (const [a, b] of PAIRS) diff(name, name, a, name, b, CONDITION_LABELS[a], CONDITION_LABELS[b]);
  }
  const [first, ...others] = presetNames;
  for (const other of others) {
    for (const condition of ['debate-synth', 'debate-vote', 'sc'] as const) {
      diff(`${other} vs ${first}`, other, condition, first!, condition, `${other}: ${CONDITION_LABELS[condition]}`, `${first}: ${CONDITION_LABELS[condition]}`);
    }
  }

  const byRound: RoundAccuracy[] = [];
  const flips: FlipStats[] = [];
  const earlyExit: EarlyExitStats[] = [];
  const minority: MinorityStats[] = [];
  const conformity: ConformityStats[] = [];
  for (const snapshot of data.run.presets) {
    const trials = trialsOf(snapshot.name);
    const agentIds = snapshot.preset.agents.map((a) => a.id);
    const debateAnswer = (t: StoredTrial, round: number, agentId: string): BenchAnswerRow | undefined =>
      t.answers.find((a) => a.source === 'debate' && a.round === round && a.slot === agentId);
    const lastRound = Math.max(0, ...trials.map((t) => t.roundsRun ?? 0));
    for (let round = 0; round <= lastRound && trials.length > 0; round++) {
      const majority: boolean[] = [];
      const agentMeans: number[] = [];
      for (const t of trials) {
        const item = itemById.get(t.itemId)!;
        // A debate that stopped earlier keeps its final positions in later rounds.
        const r = Math.min(round, t.roundsRun ?? 0);
        const answers = agentIds.map((id) => debateAnswer(t, r, id));
        const vote = majorityVote(answers.map((a) => a?.answer ?? null), item.kind);
        majority.push(vote !== null && answersMatch(vote, item.answer, item.kind));
        agentMeans.push(mean(answers.map((a) => (a?.correct ? 1 : 0))));
      }
      byRound.push({
        preset: snapshot.name,
        round,
        debatesReaching: trials.filter((t) => (t.roundsRun ?? 0) >= round).length,
        n: trials.length,
        majority: mean(majority.map((c) => (c ? 1 : 0))),
        agentMean: mean(agentMeans),
      });
    }

    const agentBefore: boolean[] = [];
    const agentAfter: boolean[] = [];
    const majorityBefore: boolean[] = [];
    const majorityAfter: boolean[] = [];
    for (const t of trials) {
      const final = t.roundsRun ?? 0;
      for (const id of agentIds) {
        agentBefore.push(debateAnswer(t, 0, id)?.correct === true);
        agentAfter.push(debateAnswer(t, final, id)?.correct === true);
      }
      majorityBefore.push(resultOf(t, 'round0-vote')?.correct === true);
      majorityAfter.push(resultOf(t, 'debate-vote')?.correct === true);
    }
    flips.push({ preset: snapshot.name, agents: flipMatrix(agentBefore, agentAfter), majority: flipMatrix(majorityBefore, majorityAfter) });

    const maxRounds = snapshot.preset.protocol.maxRounds;
    const early = trials.filter((t) => t.exitReason === 'converged' && (t.roundsRun ?? 0) < maxRounds);
    const roundsSaved = early.reduce((sum, t) => sum + (maxRounds - (t.roundsRun ?? 0)), 0);
    const wrongExits = early.filter((t) => resultOf(t, 'debate-vote')?.correct !== true).length;
    // Debates that failed in round 0 could not have run on, so they do not count toward what was saveable.
    const couldRun = trials.filter((t) => t.exitReason === 'converged' || t.exitReason === 'max_rounds').length;
    earlyExit.push({
      preset: snapshot.name,
      debates: trials.length,
      maxRounds,
      earlyExits: early.length,
      roundsSaved,
      roundsSavedShare: share(roundsSaved, couldRun * maxRounds),
      wrongExits,
      wrongExitShare: share(wrongExits, early.length),
    });

    let itemsWithMinority = 0;
    let positions = 0;
    let minorityRight = 0;
    let rescues = 0;
    for (const t of trials) {
      const kept = t.answers.filter((a) => a.source === 'minority');
      if (kept.length === 0) continue;
      itemsWithMinority += 1;
      positions += kept.length;
      const right = kept.filter((a) => a.correct).length;
      minorityRight += right;
      if (right > 0 && resultOf(t, 'debate-synth')?.correct !== true) rescues += 1;
    }
    minority.push({ preset: snapshot.name, itemsWithMinority, positions, correct: minorityRight, share: share(minorityRight, positions), rescues });

    // Each agent's answers round by round, up to the rounds its debate ran.
    const trajectories = trials
      .filter((t) => t.answers.some((a) => a.source === 'debate'))
      .map((t) => ({
        item: itemById.get(t.itemId)!,
        answers: Object.fromEntries(agentIds.map((id) => [id, Array.from({ length: (t.roundsRun ?? 0) + 1 }, (_, r) => debateAnswer(t, r, id)?.answer ?? null)])),
      }));
    conformity.push(conformityStats(snapshot.name, agentIds, trajectories));
  }

  const parse = new Map<string, ParseFailureStats>();
  const stageName = (a: BenchAnswerRow): string | null =>
    a.source === 'debate'
      ? `round ${a.round}`
      : a.source === 'single'
        ? 'single'
        : a.source === 'sc'
          ? 'self-consistency'
          : a.source === 'self-correction'
            ? 'self-correction'
            : a.source === 'synthesis'
              ? 'synthesis'
              : null;
  for (const t of data.trials) {
    for (const a of t.answers) {
      const stage = stageName(a);
      if (stage === null) continue;
      const key = `${a.model}\u0000${stage}`;
      const row = parse.get(key) ?? { model: a.model, stage, answers: 0, unparsed: 0, errors: 0, rate: null };
      row.answers += 1;
      if (a.status === 'unparsed') row.unparsed += 1;
      if (a.status === 'error') row.errors += 1;
      parse.set(key, row);
    }
  }
  const stageOrder = (s: string): number => (s.startsWith('round ') ? Number(s.slice(6)) : s === 'synthesis' ? 1000 : s === 'single' ? 1001 : s === 'self-consistency' ? 1002 : 1003);
  const parseFailures = [...parse.values()]
    .map((r) => ({ ...r, rate: share(r.unparsed, r.answers - r.errors) }))
    .sort((a, b) => a.model.localeCompare(b.model) || stageOrder(a.stage) - stageOrder(b.stage));

  const byModel = new Map<string, typeof data.calls>();
  for (const c of data.calls) byModel.set(c.model, [...(byModel.get(c.model) ?? []), c]);
  const models: ModelStats[] = [...byModel.entries()]
    .map(([model, list]) => {
      const answered = list.filter((c) => c.status === 'ok' || c.status === 'invalid');
      const completion = answered.reduce((s, c) => s + (c.completionTokens ?? 0), 0);
      const evalSeconds = answered.reduce((s, c) => s + (c.evalDurationNs ?? 0), 0) / 1e9;
      const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);
      return {
        model,
        calls: list.length,
        meanLatencyMs: finite(mean(list.map((c) => c.latencyMs))),
        meanPromptTokens: finite(mean(answered.map((c) => c.promptTokens ?? 0))),
        meanCompletionTokens: finite(mean(answered.map((c) => c.completionTokens ?? 0))),
        tokensPerSecond: evalSeconds > 0 ? completion / evalSeconds : null,
      };
    })
    .sort((a, b) => a.model.localeCompare(b.model));

  const items: ItemRow[] = data.trials.map((t) => ({
    id: t.itemId,
    gold: itemById.get(t.itemId)?.answer ?? '',
    preset: t.preset,
    answers: Object.fromEntries(t.results.filter((r) => r.available).map((r) => [conditionKey(r.condition, r.variant), { answer: r.answer, correct: r.correct }])),
    debateId: t.debateId,
    rounds: t.roundsRun,
    exitReason: t.exitReason,
  }));

  const meanK: Record<string, number | null> = {};
  for (const name of presetNames) {
    const ks = trialsOf(name).map((t) => t.agentTurns ?? 0);
    meanK[name] = ks.length ? mean(ks) : null;
  }

  return {
    format: 'conclave-bench-report',
    version: BENCH_REPORT_VERSION,
    run: {
      id: data.run.id,
      suite: data.run.suite,
      suiteHash: data.run.suiteHash,
      status: data.run.status,
      error: data.run.error,
      host: data.run.host,
      seed,
      engineVersion: data.run.engineVersion,
      createdAt: new Date(data.run.createdAt).toISOString(),
      finishedAt: data.run.finishedAt === null ? null : new Date(data.run.finishedAt).toISOString(),
      items: data.run.itemCount,
      trialsDone: data.trials.length,
      trialsTotal: data.run.itemCount * data.run.presets.length,
      presets: data.run.presets.map((p) => ({
        name: p.name,
        source: p.source,
        agents: p.preset.agents.map((a) => ({ id: a.id, model: a.model })),
        judge: p.preset.judge.model,
        synthesizer: synthesizerModel(p.preset),
        protocol: p.preset.protocol.kind ?? 'debate',
        maxRounds: p.preset.protocol.maxRounds,
        threshold: p.preset.protocol.convergenceThreshold,
        voting: p.preset.voting !== undefined,
      })),
      meanK,
      seal: data.integrity.seal,
      sealNotice: data.integrity.notice,
    },
    bootstrap: boot,
    conditions,
    differences,
    byRound,
    flips,
    earlyExit,
    minority,
    conformity,
    parseFailures,
    parseHealth: parseHealthOf(parseFailures),
    models,
    items,
    ...(options.records ? { rules: rescoreRun(data, options.records, { iterations }) } : {}),
  };
}

/** Loud when most answers that came back could not be read: then accuracy measures parsing, not the models. */
export function parseHealthOf(rows: readonly ParseFailureStats[]): BenchReport['parseHealth'] {
  const answers = rows.reduce((n, r) => n + r.answers - r.errors, 0);
  const unparsed = rows.reduce((n, r) => n + r.unparsed, 0);
  const rate = answers === 0 ? null : unparsed / answers;
  const warning =
    rate !== null && rate > 0.5
      ? `${unparsed} of ${answers} answers (${Math.round(rate * 100)}%) could not be read and count as wrong, so these accuracies measure parsing more than the models. Check that the models reply in the requested JSON; see the parse failures table.`
      : null;
  return { answers, unparsed, rate, warning };
}

/** Per-item correctness of each condition, for comparing two runs on shared items. */
export function correctnessByItem(data: BenchData): Map<string, Map<string, boolean>> {
  const out = new Map<string, Map<string, boolean>>();
  for (const t of data.trials) {
    for (const r of t.results) {
      if (!r.available) continue;
      const key = `${t.preset}\u0000${conditionKey(r.condition, r.variant)}`;
      const map = out.get(key) ?? new Map<string, boolean>();
      map.set(t.itemId, r.correct);
      out.set(key, map);
    }
  }
  return out;
}

export interface RunComparison {
  a: { id: string; suite: string; suiteHash: string; items: number };
  b: { id: string; suite: string; suiteHash: string; items: number };
  sameSuite: boolean;
  rows: {
    preset: string;
    condition: string;
    label: string;
    n: number;
    accuracyA: number;
    accuracyB: number;
    /** B minus A on the shared items, with a paired bootstrap interval. */
    diff: number;
    ciLow: number;
    ciHigh: number;
  }[];
}

/**
 * Compares two runs condition by condition on the items both finished with the
 * same gold answer (by id): paired differences B − A with bootstrap intervals.
 */
export function compareRuns(a: BenchData, b: BenchData, options: ReportOptions = {}): RunComparison {
  const boot = { iterations: options.iterations ?? 2000, seed: a.run.seed, level: LEVEL };
  const goldA = new Map(a.items.map((i) => [i.id, i]));
  const sameItem = (x: SuiteItem | undefined, y: SuiteItem): boolean => x !== undefined && x.answer === y.answer && x.kind === y.kind;
  const shared = new Set(b.items.filter((i) => sameItem(goldA.get(i.id), i)).map((i) => i.id));
  const ca = correctnessByItem(a);
  const cb = correctnessByItem(b);
  const rows: RunComparison['rows'] = [];
  for (const [key, mapA] of ca) {
    const mapB = cb.get(key);
    if (!mapB) continue;
    const xs: boolean[] = [];
    const ys: boolean[] = [];
    for (const item of a.items) {
      if (!shared.has(item.id)) continue;
      const x = mapA.get(item.id);
      const y = mapB.get(item.id);
      if (x === undefined || y === undefined) continue;
      xs.push(x);
      ys.push(y);
    }
    if (xs.length === 0) continue;
    const [preset = '', condition = ''] = key.split('\u0000');
    const [base = '', variant] = condition.split(':');
    const d = pairedBootstrapDiff(ys, xs, boot);
    rows.push({
      preset,
      condition,
      label: `${CONDITION_LABELS[base as Condition] ?? base}${variant ? ` (${variant})` : ''}`,
      n: xs.length,
      accuracyA: mean(xs.map((v) => (v ? 1 : 0))),
      accuracyB: mean(ys.map((v) => (v ? 1 : 0))),
      diff: d.diff,
      ciLow: d.low,
      ciHigh: d.high,
    });
  }
  return {
    a: { id: a.run.id, suite: a.run.suite, suiteHash: a.run.suiteHash, items: a.items.length },
    b: { id: b.run.id, suite: b.run.suite, suiteHash: b.run.suiteHash, items: b.items.length },
    sameSuite: a.run.suiteHash === b.run.suiteHash,
    rows,
  };
}
