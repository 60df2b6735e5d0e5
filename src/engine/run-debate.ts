import { randomBytes } from 'node:crypto';
import type { Preset } from '../config/preset-schema.js';
import { pickSynthesizer, synthesizerCandidates } from '../config/synthesizer.js';
import { DebateFailedError, InterruptedError } from '../errors.js';
import type { TagModel } from '../backend/types.js';
import { sameModel } from '../schedule/scheduler.js';
import { adviseRun, advisorModel, asKind, protocolChoices } from './advisor.js';
import { protocolFor } from './protocols/index.js';
import { type DebateResult, type RunDebateOptions, Runner } from './runner.js';
import type { ExtraStage } from './stage.js';
import { builtinStages } from './stages.js';

export type { DebateResult, RunDebateOptions } from './runner.js';

/**
 * A new debate id: the UTC second it started and 32 random bits. `taken` says whether an id is
 * already recorded; another is drawn then (the store refuses a taken id at insert too).
 */
export function newDebateId(now: number, taken: (id: string) => boolean = () => false): string {
  const d = new Date(now);
  const pad = (n: number): string => String(n).padStart(2, '0');
  const stamp = `${String(d.getUTCFullYear()).slice(2)}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}-${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`;
  let id = `${stamp}-${randomBytes(4).toString('hex')}`;
  for (let tries = 1; taken(id) && tries < 16; tries++) id = `${stamp}-${randomBytes(4).toString('hex')}`;
  return id;
}

/** Every model a run with this preset may call: the panel, then what its protocol adds (judge, synthesizer candidates, stage models); with `auto`, the advisor and what any protocol it may choose adds. */
export function presetModels(preset: Preset, stages: ExtraStage[] = builtinStages()): string[] {
  const kind = preset.protocol.kind;
  if (kind === 'auto') {
    const each = protocolChoices(preset).flatMap((k) => presetModels(asKind(preset, k), stages));
    return [...new Set([...preset.agents.map((a) => a.model), advisorModel(preset), ...each])].filter((m) => m !== '');
  }
  const protocol = protocolFor(kind);
  const enabled = stages.filter((s) => s.enabled(preset));
  const shape = protocol.shape(preset, enabled);
  const extra = shape.stages.flatMap((s) => s.models?.(preset) ?? []);
  const synth = shape.synthesisModels.includes(preset.synthesizer.model ?? '') || preset.synthesizer.rotate ? synthesizerCandidates(preset) : [];
  const support = shape.support.filter((m) => m !== '' && m !== preset.synthesizer.model);
  return [...new Set([...preset.agents.map((a) => a.model), ...support, ...synth, ...extra])].filter((m) => m !== '');
}

export function missingModels(preset: Preset, tags: TagModel[], stages?: ExtraStage[]): string[] {
  return presetModels(preset, stages).filter((m) => !tags.some((t) => sameModel(t.name, m)));
}

/**
 * Runs one whole debate with the protocol its preset names (`protocol.kind`, default `debate`)
 * and returns its outcome. Every call is reported to the recorder as it ends.
 */
export async function runDebate(opts: RunDebateOptions): Promise<DebateResult> {
  const now = opts.now ?? Date.now;
  const id = opts.id ?? newDebateId(now());
  // `auto`: the advisor classifies the question and rules choose the protocol, before any panel call; its call and the choice are recorded once the debate is.
  const advised = opts.preset.protocol.kind === 'auto' ? await adviseRun(opts, id) : null;
  const { preset, choice } = pickSynthesizer(advised?.preset ?? opts.preset, opts.synthesizerTurn ?? 0);
  const kind = preset.protocol.kind === 'auto' ? 'debate' : preset.protocol.kind;
  const protocol = protocolFor(kind);
  const stages = (opts.stages ?? builtinStages()).filter((s) => s.enabled(preset));
  const shape = protocol.shape(preset, stages);
  const synthesizes = shape.synthesisModels.includes(choice.model);
  const warnings = [...(opts.warnings ?? [])];
  if (synthesizes && choice.rotate && choice.panelAgents.length > 0) {
    warnings.push(`This debate's synthesizer, \`${choice.model}\`, also debates as ${choice.panelAgents.join(', ')}: a panel model synthesizing tends to favour its own arguments. Rotation spreads that bias across debates; it does not remove it from this one.`);
  }
  const runner = await Runner.start({ ...opts, preset, warnings }, id, {
    ...shape,
    support: shape.support.filter((m) => m !== ''),
    synthesisModels: shape.synthesisModels.filter((m) => m !== ''),
    synthesizer: synthesizes && choice.rotate ? { kind: 'synthesizer', ...choice } : null,
  });
  if (advised) {
    for (const call of advised.calls) runner.emit({ type: 'call.finished', call });
    runner.step(advised.step);
  }
  try {
    return runner.complete(await protocol.run(runner, []));
  } catch (err) {
    if (err instanceof DebateFailedError || err instanceof InterruptedError) throw err;
    if (runner.interrupted()) runner.stopInterrupted();
    // The recorder failing (disk full, lock) lands here: report it without trying to write again.
    throw err;
  }
}
