import { presetModels } from '../engine/run-debate.js';
import { autoChoiceLabel, estimateBenchItem, estimateRun, ASSUMED_BANDWIDTH_BYTES } from '../engine/dry-run.js';
import type { HostEntry, Preset } from '../config/preset-schema.js';
import { plannedHostText } from '../render/backends.js';
import { inert, jsonText } from '../render/inert.js';
import { formatTable } from '../render/table.js';
import { DebateScheduler } from '../schedule/scheduler.js';
import { gatherHostFacts } from '../schedule/facts.js';
import type { CliIO } from './io.js';
import { formatNumber, plural } from '../plural.js';

/**
 * `run --dry-run`: asks the hosts for their facts (models, sizes, VRAM: no model is called), plans
 * the run, and prints the plan with the calls, tokens and time it would take. Nothing is recorded.
 */
export async function dryRunFromCli(prepared: { preset: Preset; question: string; hosts: HostEntry[] }, args: { json?: boolean }, io: CliIO): Promise<number> {
  const { preset, question, hosts } = prepared;
  const debaters = new Set(preset.agents.map((a) => a.model));
  const scheduler = await DebateScheduler.prepare({
    hosts,
    debaters: preset.agents.map((a) => a.model),
    support: presetModels(preset).filter((m) => !debaters.has(m)),
    contextNeeds: {},
    explicitNumCtx: {},
    env: io.env,
  });
  const facts = await Promise.all(hosts.map((h) => gatherHostFacts(h, presetModels(preset), { version: false, env: io.env })));
  const sizeOf = (model: string): number | null => facts.flatMap((f) => f.models).find((m) => m.name === model)?.size ?? null;
  const estimate = estimateRun(preset, question, sizeOf, scheduler.plan);
  if (args.json) {
    io.stdout.write(`${jsonText({ dryRun: true, estimate: true, preset: preset.name, plan: scheduler.plan, ...estimate }, 2)}\n`);
    return 0;
  }
  const out: string[] = [
    `Dry run of ${preset.name} (${estimate.protocol}): no model was called and nothing was recorded. Every figure below is an estimate.`,
    '',
    'PLAN',
    ...scheduler.plan.hosts.map((h) => `  ${h.url}: ${plannedHostText(h)}`),
    ...scheduler.plan.models.map((m) => `  ${m.model}: on ${m.hosts.join(', ')}, ${m.slots} call${m.slots === 1 ? '' : 's'} in flight at most`),
    '  (each model\'s num_ctx is sized from the prompts when the run starts)',
    `  ${scheduler.plan.allResident ? 'every model stays loaded at once' : `debater models load in turn: ${scheduler.plan.groups.map((g) => g.join(' + ')).join(' | ')}`}`,
    ...scheduler.plan.warnings.map((w) => `  warning: ${w}`),
  ];
  const range = estimate.range;
  if (estimate.groups.length > 0) {
    out.push('', range ? `CALLS (at most, if the advisor picks ${autoChoiceLabel(range.dearest)}, the dearest choice)` : 'CALLS (at most)');
    out.push(
      formatTable(
        ['what', 'model', 'calls', 'tokens per call'],
        estimate.groups.map((g) => [g.what, g.model, String(g.calls), `~${formatNumber(g.promptTokens)} in + ≤${formatNumber(g.replyTokens)} out`]),
        [2],
      )
        .trimEnd()
        .replace(/^/gm, '  '),
    );
  }
  out.push('', 'ESTIMATE');
  const gpu = `assuming a GPU that reads ${ASSUMED_BANDWIDTH_BYTES / 1e9} GB/s of weights per generated token (each model's size from its host) and every reply at its full length`;
  if (range) {
    const { cheapest, dearest } = range;
    const [first, ...rest] = estimate.notes;
    if (first) out.push(`  ${first}`);
    out.push(`  from ${plural(cheapest.calls, 'call')}, about ${formatNumber(cheapest.tokens)} tokens at most, if it picks ${autoChoiceLabel(cheapest)} (the cheapest choice in ${range.rankedBy})`);
    out.push(`  to ${plural(dearest.calls, 'call')}, about ${formatNumber(dearest.tokens)} tokens at most, if it picks ${autoChoiceLabel(dearest)} (the dearest in ${range.rankedBy})`);
    if (cheapest.seconds !== null && dearest.seconds !== null) out.push(`  about ${formatDuration(cheapest.seconds)} to ${formatDuration(dearest.seconds)}, ${gpu}`);
    out.push(
      formatTable(
        ['if it picks', 'calls', 'tokens', 'time'],
        range.choices.map((c) => [autoChoiceLabel(c), String(c.calls), `~${formatNumber(c.tokens)}`, c.seconds === null ? '-' : `~${formatDuration(c.seconds)}`]),
        [1, 2, 3],
      )
        .trimEnd()
        .replace(/^/gm, '    '),
    );
    for (const n of rest) out.push(`  ${n}`);
  } else {
    out.push(`  ${plural(estimate.calls, 'call')}, about ${formatNumber(estimate.tokens)} tokens at most`);
    if (estimate.seconds !== null) out.push(`  about ${formatDuration(estimate.seconds)}, ${gpu}`);
    for (const n of estimate.notes) out.push(`  ${n}`);
  }
  io.stdout.write(`${inert(out.join('\n'))}\n`);
  return 0;
}

/** `bench --dry-run`: per preset, the calls, tokens and time of every item's debate and baselines. */
export async function benchDryRun(presets: Preset[], questions: string[], hosts: HostEntry[], args: { json?: boolean }, io: CliIO): Promise<number> {
  const models = [...new Set(presets.flatMap((p) => presetModels(p)))];
  const facts = await Promise.all(hosts.map((h) => gatherHostFacts(h, models, { version: false, env: io.env })));
  const down = facts.find((f) => !f.ok);
  if (down && facts.every((f) => !f.ok)) {
    const { HostError } = await import('../errors.js');
    throw new HostError(down.errorCode ?? 'HOST_UNREACHABLE', `Cannot reach ${down.url}: ${down.error}`, { hint: down.errorHint ?? 'Start it with `ollama serve`, or point --host at a running server.' });
  }
  const sizeOf = (model: string): number | null => facts.flatMap((f) => f.models).find((m) => m.name === model)?.size ?? null;
  const rows = presets.map((preset) => {
    const per = questions.map((q) => estimateBenchItem(preset, q, sizeOf));
    const sum = (f: (e: (typeof per)[number]) => number): number => per.reduce((s, e) => s + f(e), 0);
    // An advisor's pick is not known before the run: each item counts at the dearest one.
    const dearest = [...new Set(per.flatMap((e) => (e.range ? [autoChoiceLabel(e.range.dearest)] : [])))];
    const auto = dearest.length ? [`${preset.name} counts each item at the dearest protocol its advisor may pick: ${dearest.join(', ')}.`] : [];
    return { preset: preset.name, protocol: preset.protocol.kind, items: questions.length, calls: sum((e) => e.calls), tokens: sum((e) => e.tokens), seconds: per.some((e) => e.seconds === null) ? null : sum((e) => e.seconds ?? 0), notes: [...auto, ...new Set(per.flatMap((e) => e.notes))] };
  });
  if (args.json) {
    io.stdout.write(`${jsonText({ dryRun: true, estimate: true, presets: rows }, 2)}\n`);
    return 0;
  }
  const out = [
    `Dry run of a bench of ${questions.length} item${questions.length === 1 ? '' : 's'}: no model was called and nothing was recorded. Every figure below is an estimate, at most (each debate running every round).`,
    '',
    formatTable(
      ['preset', 'protocol', 'calls', 'tokens', 'time'],
      rows.map((r) => [r.preset, r.protocol, r.calls ? formatNumber(r.calls) : '-', r.tokens ? `~${formatNumber(r.tokens)}` : '-', r.seconds === null ? '-' : `~${formatDuration(r.seconds)}`]),
      [2, 3, 4],
    ).trimEnd(),
    '',
    `Time assumes a GPU that reads ${ASSUMED_BANDWIDTH_BYTES / 1e9} GB/s of weights per generated token (each model's size from its host), one item at a time, and every reply at its full length.`,
    ...[...new Set(rows.flatMap((r) => r.notes))],
  ];
  io.stdout.write(`${inert(out.join('\n'))}\n`);
  return 0;
}

function formatDuration(seconds: number): string {
  if (seconds < 90) return `${Math.max(1, Math.round(seconds))} s`;
  const minutes = Math.round(seconds / 60);
  return minutes < 90 ? `${minutes} min` : `${(minutes / 60).toFixed(1)} h`;
}
