import { type DebateRescore, type RunRescore, rescoreRun, rescoreTrajectory, openTrajectory, trialTrajectory } from '../bench/rescore.js';
import { allRules, canonicalRuleName, ruleContext } from '../rules/index.js';
import { InputError, IntegrityError, StoreError } from '../errors.js';
import { formatTable } from '../render/table.js';
import { inert, inertLine, jsonText } from '../render/inert.js';
import { loadBenchData, resolveBenchRunId } from '../store/bench.js';
import { readerFailure } from '../store/edited.js';
import { benchTrialOf, readRescoreRecords } from '../store/rescore-read.js';
import type { StoredDebate, Store } from '../store/store.js';
import type { RescoreArgs } from './bench-args.js';
import { type CliIO, tellUser } from './io.js';
import { openDb } from './shared.js';
import { plural } from '../plural.js';

const pct = (x: number | null): string => (x === null ? '–' : `${(x * 100).toFixed(1)}%`);
const num = (x: number | null, digits = 1): string => (x === null || !Number.isFinite(x) ? '–' : x.toFixed(digits));

/** Which the target names: a bench run or a debate; both or neither is the user's to fix. */
function resolveTarget(store: Store, target: string): { kind: 'run'; id: string } | { kind: 'debate'; id: string } {
  const attempt = (f: () => string): string | StoreError => {
    try {
      return f();
    } catch (err) {
      if (err instanceof StoreError) return err;
      throw err;
    }
  };
  const run = attempt(() => resolveBenchRunId(store, target));
  const debate = attempt(() => store.resolveId(target));
  if (typeof run === 'string' && typeof debate === 'string') {
    throw new InputError('RESCORE_AMBIGUOUS', `\`${target}\` names both bench run \`${run}\` and debate \`${debate}\`.`, { hint: 'Type more characters of the id you mean.' });
  }
  if (typeof run === 'string') return { kind: 'run', id: run };
  if (typeof debate === 'string') return { kind: 'debate', id: debate };
  // An ambiguous prefix says so; otherwise neither exists.
  for (const err of [run, debate]) if (err.code.endsWith('AMBIGUOUS')) throw err;
  throw new StoreError('RESCORE_NOT_FOUND', `There is no debate or bench run \`${target}\` in ${store.path}.`, {
    hint: 'Run `conclave list` for debates or `conclave bench list` for bench runs.',
  });
}

function checkRuleNames(names: readonly string[], maxRounds: number): void {
  const known = allRules(ruleContext(maxRounds, names)).map((r) => r.name);
  const unknown = names.filter((n) => !known.includes(n));
  if (unknown.length > 0) {
    // A judge scores on 0 to 1: `@85` is most likely meant as 0.85.
    const percent = unknown.map((n) => /^stop:threshold@(\d+(?:\.\d+)?)$/.exec(n)?.[1]).map(Number).find((x) => x > 1 && x <= 100);
    const scale = percent === undefined ? '' : ` Judge thresholds are on the 0–1 scale: \`stop:threshold@${(percent / 100).toFixed(2)}\` for ${percent}%.`;
    throw new InputError('UNKNOWN_RULE', `No rule named ${unknown.map((n) => `\`${n}\``).join(', ')}.`, {
      hint: `${scale.trim()}${scale ? ' ' : ''}Rules here: ${known.join(', ')}; \`stop:threshold@X\` takes any X in (0, 1] to two decimals.`,
    });
  }
}

/**
 * Refuses debates whose rows no longer match their hashes: a rule re-scored over an edited
 * judge score or turn would report the edit as what the panel did.
 */
export function checkIntact(store: Store, ids: readonly string[], what: { task: string; done: string } = { task: 're-score', done: 'Nothing was re-scored' }): void {
  const broken: string[] = [];
  for (const id of ids) {
    const verdict = store.verifyDebate(id);
    if (verdict.state === 'broken') broken.push(`\`${id}\` (${verdict.problem})`);
  }
  if (broken.length === 0) return;
  const shown = broken.length > 3 ? `${broken.slice(0, 3).join(', ')} and ${broken.length - 3} more` : broken.join(', ');
  throw new IntegrityError('RESCORE_TAMPERED', `${plural(broken.length, 'debate')} to ${what.task} ${broken.length === 1 ? 'does' : 'do'} not match ${broken.length === 1 ? 'its' : 'their'} hashes: ${shown}. ${what.done}.`, {
    hint: 'The record changed after it was written; `conclave verify --all` (with the same --db) names every change. Restore it from a backup or from a bundle exported earlier (`conclave import FILE`).',
  });
}

/** `conclave rescore ID|RUN`: verifies and reads the record, asks no server, writes nothing. */
export async function rescoreFromCli(args: RescoreArgs, io: CliIO): Promise<number> {
  const store = await openDb(args.db, io, { readonly: true });
  try {
    const names = (args.rule ?? []).map((n) => canonicalRuleName(String(n)));
    const target = resolveTarget(store, args.target);
    if (target.kind === 'run') {
      const data = loadBenchData(store, target.id, 'Nothing was re-scored');
      if (data.integrity.notice) io.stderr.write(`${inertLine(data.integrity.notice)}\n`);
      checkRuleNames(names, Math.max(0, ...data.run.presets.map((p) => p.preset.protocol.maxRounds)));
      const debateIds = data.trials.flatMap((t) => (t.debateId === null ? [] : [t.debateId]));
      checkIntact(store, debateIds);
      const records = readRescoreRecords(store, debateIds);
      const result = rescoreRun(data, records, { rules: names });
      io.stdout.write(args.json ? `${jsonText(result, 2)}\n` : renderRunRescore(result));
      return 0;
    }
    const rescored = (debate: StoredDebate): string => {
      const result = rescoreDebate(store, target.id, names, debate);
      return args.json ? `${jsonText(result, 2)}\n` : renderDebateRescore(result);
    };
    // The re-score walks the debate round by round: it reads the record through the checks of a
    // record sealed again after an edit from the start, so a forged round number cannot make it loop.
    checkIntact(store, [target.id]);
    const { checkedDebate, describeProblem, renderChecked } = await import('../store/row-check.js');
    const warn = (line: string) => tellUser(io, `conclave: ${line}\n`);
    let text: string;
    try {
      const { debate, problems } = checkedDebate(store, target.id, 're-scored');
      text = rescored(debate);
      for (const p of problems) warn(describeProblem(target.id, p));
    } catch (err) {
      if (err instanceof IntegrityError || err instanceof InputError || !readerFailure(err)) throw err;
      const { value, problems } = renderChecked(store, target.id, rescored, err);
      for (const p of problems) warn(describeProblem(target.id, p));
      text = value;
    }
    io.stdout.write(text);
    return 0;
  } finally {
    store.close();
  }
}

/** One debate: graded as its bench item when it was one, otherwise by the judge's stances. */
export function rescoreDebate(store: Store, id: string, names: readonly string[], debate: StoredDebate = store.getDebate(id)): DebateRescore {
  checkRuleNames(names, debate.preset.protocol.maxRounds);
  checkIntact(store, [id]);
  const head = {
    id,
    question: debate.question,
    preset: debate.presetName,
    protocol: debate.preset.protocol.kind ?? 'debate',
    status: debate.status,
    exitReason: debate.exitReason,
    roundsRun: Math.max(0, ...debate.turns.map((t) => t.round)),
    maxRounds: debate.preset.protocol.maxRounds,
    threshold: debate.preset.protocol.convergenceThreshold,
  };
  const trial = benchTrialOf(store, id);
  if (trial !== null) {
    const data = loadBenchData(store, trial.runId, 'Nothing was re-scored');
    const stored = data.trials.find((t) => t.debateId === id);
    const item = data.items.find((i) => i.id === trial.itemId);
    const snapshot = data.run.presets.find((p) => p.name === trial.preset);
    if (stored && item && snapshot) {
      const t = trialTrajectory(stored, item, snapshot.preset.agents.map((a) => a.id), readRescoreRecords(store, [id]).get(id));
      return rescoreTrajectory(t, head, { runId: trial.runId, item }, names);
    }
  }
  return rescoreTrajectory(openTrajectory(debate), head, null, names);
}

export function renderRunRescore(r: RunRescore): string {
  const out: string[] = [inertLine(`Bench run ${r.run.id}: ${plural(r.run.items, 'item')}, re-scored from the record (no model was called)`), ''];
  for (const preset of r.run.presets) {
    const rows = r.rules.filter((f) => f.preset === preset);
    out.push(inertLine(`Preset ${preset} (own scoring: ${r.own[preset] ?? '–'})`));
    out.push(
      formatTable(
        ['rule', 'n', 'accuracy', '95% CI', 'vs own', 'calls/item', 'tokens/item', 'GPU-s/item', 'note'],
        rows.map((f) => [
          f.rule,
          `${f.n}/${f.items}`,
          pct(f.accuracy),
          f.ciLow === null ? '–' : `${pct(f.ciLow)}–${pct(f.ciHigh)}`,
          f.vsOwn === null ? '–' : `${f.vsOwn.diff >= 0 ? '+' : ''}${(f.vsOwn.diff * 100).toFixed(1)} [${(f.vsOwn.ciLow * 100).toFixed(1)}, ${(f.vsOwn.ciHigh * 100).toFixed(1)}]`,
          num(f.callsPerItem),
          num(f.tokensPerItem, 0),
          num(f.gpuSecondsPerItem, 2),
          f.unavailable === null ? '' : `unavailable on ${f.items - f.n}: ${f.unavailable}`,
        ]),
      ),
    );
    const best = r.best[preset];
    out.push(
      best
        ? inertLine(`Best at no more tokens than the own scoring: ${best.rule} (${pct(best.accuracy)} at ${best.tokensPerItem.toFixed(0)} tokens/item; own ${pct(best.ownAccuracy)} at ${num(best.ownTokensPerItem, 0)})`)
        : 'No rule decided every item at no more tokens than the own scoring.',
      '',
    );
  }
  return `${out.join('\n')}\n`;
}

export function renderDebateRescore(r: DebateRescore): string {
  const d = r.debate;
  const out = [
    inertLine(`Debate ${d.id} (${d.preset}, ${d.protocol}): ${d.status}, ${d.exitReason ?? 'no exit'} after round ${d.roundsRun} of at most ${d.maxRounds}`),
    r.item ? inertLine(`Bench item ${r.item.itemId} of run ${r.item.runId}, gold ${r.item.gold}`) : inertLine(r.basis.kind === 'stances' ? "Counted by the judge's stances" : r.basis.kind === 'answers' ? 'Counted by the answers read from each turn' : `Majority rules ${r.basis.why ?? 'unavailable'}`),
    '',
    formatTable(
      ['rule', 'stops after', 'decides', 'right', 'calls', 'tokens', 'GPU-s', 'note'],
      r.rules.map((x) => [
        x.rule,
        x.stopRound === null ? '–' : `round ${x.stopRound}`,
        x.decision === null ? '–' : inert(x.decision.length > 60 ? `${x.decision.slice(0, 59)}…` : x.decision),
        x.correct === null ? '' : x.correct ? 'yes' : 'no',
        x.spent ? String(x.spent.calls) : '–',
        x.spent ? String(x.spent.promptTokens + x.spent.completionTokens) : '–',
        x.spent ? x.spent.gpuSeconds.toFixed(2) : '–',
        x.why ?? x.note ?? '',
      ]),
    ),
  ];
  return `${out.join('\n')}\n`;
}
