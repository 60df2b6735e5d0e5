import type { HostEntry, Preset } from '../config/preset-schema.js';
import { presetHostsFor } from '../config/trust.js';
import { InterruptedError } from '../errors.js';
import { estimateTokens, stageBudgets } from '../protocol/context.js';
import { standingText } from '../protocol/material.js';
import { agentFamily, oneFamilyWarning } from '../schedule/families.js';
import type { PlanThinking } from '../schedule/plan.js';
import { DebateScheduler } from '../schedule/scheduler.js';
import { materialReserve } from './call/material.js';
import { chooseThinking, thinkingBase, thinkSettingOf, thinkSettings } from './call/thinking.js';
import type { AgentInfo, Stage } from './events.js';
import type { RunDebateOptions, RunShape } from './run-types.js';

/** Tokens each model needs at most (prompt plus reply) in this run, and any num_ctx the preset fixes. */
export function contextNeeds(preset: Preset, question: string, shape: RunShape, extraModels: string[], material: number): { tokens: Record<string, number>; explicit: Record<string, number> } {
  const constraints = estimateTokens(standingText(preset.constraints ?? [], preset.protocol.brief));
  const budgets = stageBudgets({
    agentCount: preset.agents.length,
    // An Oxford debate always holds two rounds after its openings (rebuttals, closings).
    maxRounds: preset.protocol.kind === 'oxford' ? 2 : preset.protocol.maxRounds,
    questionTokens: estimateTokens(question),
    maxPersonaTokens: Math.max(60, ...preset.agents.map((a) => estimateTokens(a.persona ?? ''))),
    maxAnswerTokens: preset.protocol.maxAnswerTokens,
  });
  const tokens: Record<string, number> = {};
  const explicit: Record<string, number> = {};
  const need = (model: string, stage: keyof typeof budgets, own: number | undefined, extra = 0): void => {
    tokens[model] = Math.max(tokens[model] ?? 0, budgets[stage].prompt + budgets[stage].reply + extra);
    if (own) explicit[model] = Math.max(explicit[model] ?? 0, own);
  };
  // Agents' prompts carry the constraints and their share of the material on top of the rest.
  for (const a of preset.agents) {
    need(a.model, 'opening', a.options?.num_ctx, material + constraints);
    need(a.model, 'critique', a.options?.num_ctx, material + constraints);
  }
  // An Oxford judge reads every speech of every round, as a synthesizer does.
  if (shape.usesJudge) need(preset.judge.model, preset.protocol.kind === 'oxford' ? 'synthesis' : 'judge', preset.judge.options?.num_ctx);
  for (const model of shape.synthesisModels) {
    const own = model === preset.synthesizer.model ? preset.synthesizer.options?.num_ctx : preset.agents.find((a) => a.model === model)?.options?.num_ctx;
    need(model, 'synthesis', own);
  }
  // Optional stages read the final positions, like the judge.
  for (const model of extraModels) need(model, 'judge', undefined);
  return { tokens, explicit };
}

/** The roles that make calls in this run, with the model each calls. */
export function thinkingRoles(preset: Preset, shape: RunShape): [string, string][] {
  const roles: [string, string][] = preset.agents.map((a) => [a.id, a.model]);
  if (shape.usesJudge) roles.push(['judge', preset.judge.model]);
  for (const model of shape.synthesisModels) roles.push(['synthesizer', model]);
  if (preset.tensions && preset.tensions.enabled !== false) roles.push(['tension-map', preset.tensions.model ?? preset.judge.model]);
  return roles;
}

export function roomPerModel(roles: [string, string][], preset: Preset, capabilities: (model: string) => readonly string[] | null): Record<string, number> {
  const room: Record<string, number> = {};
  for (const [role, model] of roles) {
    const choice = chooseThinking(thinkSettingOf(preset, role), capabilities(model), thinkingBase(preset));
    room[model] = Math.max(room[model] ?? 0, choice.room);
  }
  return room;
}

/** The plan's thinking: every role that thinks or sets `think`. */
export function planThinking(roles: [string, string][], preset: Preset, capabilities: (model: string) => readonly string[] | null): PlanThinking[] {
  const out: PlanThinking[] = [];
  for (const [role, model] of roles) {
    const setting = thinkSettingOf(preset, role);
    const choice = chooseThinking(setting, capabilities(model), thinkingBase(preset));
    if (!choice.thinks && setting === undefined) continue;
    out.push({ role, model, thinks: choice.thinks, think: choice.send === undefined ? 'default' : (String(choice.send) as PlanThinking['think']), room: choice.room });
  }
  return out;
}

/**
 * Plans the schedule of a run (checking hosts and models): num_ctx per model from what the
 * protocol's calls need, the thinking of each role, the panel's model families. Returns the
 * warnings raised on the way, to be reported with the start.
 */
export async function prepareSchedule(opts: RunDebateOptions, shape: RunShape): Promise<{ scheduler: DebateScheduler; early: string[] }> {
  const preset = opts.preset;
  const stageModels = shape.stages.flatMap((s) => s.models?.(preset) ?? []);
  const early: string[] = [];
  // An explicit host list wins over the preset's, which wins over the single host.
  const hosts: HostEntry[] = opts.hosts ?? presetHostsFor(preset.hosts, opts.trustPresetHosts === true) ?? [{ url: opts.host, ...(opts.vramGiB ? { vramGiB: opts.vramGiB } : {}), ...(opts.numParallel ? { numParallel: opts.numParallel } : {}) }];
  const needs = contextNeeds(preset, opts.question, shape, stageModels, materialReserve(opts.attachments ?? []));
  const scheduler = await DebateScheduler.prepare({
    hosts,
    debaters: preset.agents.map((a) => a.model),
    support: [...new Set([...shape.support, ...stageModels])],
    contextNeeds: needs.tokens,
    explicitNumCtx: needs.explicit,
    ...(opts.strategy ? { strategy: opts.strategy } : {}),
    ...(opts.pool ? { pool: opts.pool } : {}),
    warn: (m) => early.push(m),
    questionTokens: estimateTokens(opts.question),
    usedBy: usedBy(preset),
    thinkingRoom: (capabilities) => roomPerModel(thinkingRoles(preset, shape), preset, capabilities),
    ...(opts.env ? { env: opts.env } : {}),
  });
  if (opts.signal?.aborted) throw new InterruptedError('Stopped before the debate started; nothing was recorded.');
  const capabilities = (model: string): readonly string[] | null => scheduler.capabilitiesOf(model);
  for (const s of thinkSettings(preset)) {
    const caps = capabilities(s.model);
    if (s.think !== false && caps !== null && !caps.includes('thinking')) scheduler.plan.warnings.push(`${s.role} sets think: ${String(s.think)}, but ${s.model} has no thinking capability: think is not sent to it`);
  }
  scheduler.plan.thinking = planThinking(thinkingRoles(preset, shape), preset, capabilities);
  scheduler.plan.families = preset.agents.map((a) => {
    const { details, tag } = scheduler.reportOf(a.model);
    return agentFamily(a, details, tag);
  });
  const oneFamily = oneFamilyWarning(scheduler.plan.families);
  if (oneFamily) scheduler.plan.warnings.push(oneFamily);
  return { scheduler, early };
}

/** The run's participants as recorded: the panel, the judge and the synthesizer, with their models' digests. */
export function panelAgents(preset: Preset, scheduler: DebateScheduler): AgentInfo[] {
  const digest = (model: string): string | null => scheduler.digestOf(model);
  return [
    ...preset.agents.map((a) => ({ id: a.id, model: a.model, persona: a.persona ?? null, cluster: a.cluster ?? null, role: 'debater' as const, digest: digest(a.model) })),
    { id: 'judge', model: preset.judge.model, persona: null, cluster: null, role: 'judge', digest: digest(preset.judge.model) },
    { id: 'synthesizer', model: preset.synthesizer.model ?? '', persona: null, cluster: null, role: 'synthesizer', digest: digest(preset.synthesizer.model ?? '') },
  ];
}

/** The reply budget (num_predict) of a call at this stage, before the preset's own options. */
export function replyTokens(stage: Stage, answer: number): number {
  return stage === 'critique'
    ? answer * 1.5
    : stage === 'judge' || stage === 'verdict'
      ? 400
      : stage === 'synthesis' || stage === 'reassembly' || stage === 'filter'
        ? 1500
        : stage === 'split'
          ? 800
          : stage === 'plan' || stage === 'observe' || stage === 'review'
            ? answer * 2
            : answer;
}

/** Who runs each of the preset's models, in words, for a message that names a model the hosts lack. */
export function usedBy(preset: RunDebateOptions['preset']): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const add = (model: string | undefined, who: string): void => {
    if (model) (out[model] ??= []).push(who);
  };
  for (const a of preset.agents) add(a.model, `agent ${a.id}`);
  add(preset.judge.model, 'the judge');
  add(preset.synthesizer.model, 'the synthesizer');
  return out;
}
