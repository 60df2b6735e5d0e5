import { stallMsOf } from '../backend/call-control.js';
import { checkProtocolPreset } from '../config/load-preset.js';
import { type Preset, type ProtocolKind, protocolKinds } from '../config/preset-schema.js';
import { type Advice, adviceMessages, adviceSchemaFor, applyAdvice, routeAdvice } from '../protocol/advice.js';
import { DebateScheduler } from '../schedule/scheduler.js';
import type { CallRecord } from './call-record.js';
import type { ProtocolStep } from './protocol-events.js';
import type { RunDebateOptions } from './runner.js';
import { presetHostsFor } from '../config/trust.js';
import { structuredCall } from './structured-call.js';

/** The advisor's reply tokens at most: a classification, not an answer. */
export const ADVICE_REPLY_TOKENS = 400;

/** The advisor's model: `protocol.advisor`, else the judge's (small and already part of most panels). */
export function advisorModel(preset: Preset): string {
  return preset.protocol.advisor ?? preset.judge.model;
}

/**
 * The protocols this panel can run: those whose preset checks pass with the panel as it is
 * (pipeline only where agents have roles). Never oxford: a motion and its sides are the user's to set.
 */
export function protocolChoices(preset: Preset): ProtocolKind[] {
  return protocolKinds.filter((kind) => {
    if (kind === 'oxford') return false;
    if (kind === 'pipeline' && !preset.agents.some((a) => a.role !== undefined)) return false;
    return checkProtocolPreset(asKind(preset, kind)).length === 0;
  });
}

/** The preset run as `kind`: roles and the filter mode belong to a pipeline only, the advisor to `auto`. */
export function asKind(preset: Preset, kind: ProtocolKind): Preset {
  const { advisor: _advisor, ...protocol } = preset.protocol;
  if (kind === 'pipeline') return { ...preset, protocol: { ...protocol, kind } };
  const { filterMode: _filterMode, ...rest } = protocol;
  return { ...preset, protocol: { ...rest, kind }, agents: preset.agents.map(({ role: _role, ...agent }) => agent) };
}

export interface AdvisedRun {
  /** The preset as it will run: the chosen protocol, depth and budget. */
  preset: Preset;
  /** The advisor's calls (a repair too), to be recorded once the debate is. */
  calls: CallRecord[];
  step: Extract<ProtocolStep, { kind: 'advice' }>;
}

/**
 * Asks the advisor to classify the question, before any panel call; the rules choose the protocol from it.
 * When it cannot (the call fails, or the reply is unusable), the debate runs as `debate`, and
 * the step says why.
 */
export async function adviseRun(opts: RunDebateOptions, id: string): Promise<AdvisedRun> {
  const preset = opts.preset;
  const model = advisorModel(preset);
  const choices = protocolChoices(preset);
  const now = opts.now ?? Date.now;
  const hosts = opts.hosts ?? presetHostsFor(preset.hosts, opts.trustPresetHosts === true) ?? [{ url: opts.host, ...(opts.numParallel ? { numParallel: opts.numParallel } : {}) }];
  const scheduler = await DebateScheduler.prepare({ hosts, debaters: [], support: [model], contextNeeds: { [model]: 4096 }, explicitNumCtx: {}, ...(opts.env ? { env: opts.env } : {}) });
  const calls: CallRecord[] = [];
  const outcome = await scheduler.call(model, (gateway, elsewhere) =>
    structuredCall(
      gateway,
      {
        debateId: id,
        stage: 'advice',
        round: 0,
        agentId: 'advisor',
        model,
        messages: adviceMessages(opts.question, choices, preset.agents.map((a) => a.id), (opts.attachments ?? []).map((a) => a.name)),
        options: { num_ctx: scheduler.numCtx[model], num_predict: ADVICE_REPLY_TOKENS, temperature: 0 },
        schema: adviceSchemaFor(choices),
        timeoutMs: preset.protocol.callTimeoutSeconds * 1000,
        stallMs: stallMsOf(preset.protocol),
        ...(opts.signal ? { signal: opts.signal } : {}),
        ...(opts.retryDelaysMs ? { retryDelaysMs: opts.retryDelaysMs } : {}),
      },
      { now, onStart: () => undefined, onCall: (call) => calls.push(call), elsewhere },
    ),
  );
  const advice: Advice | null = outcome.status === 'ok' ? outcome.value : null;
  const route = advice ? routeAdvice(advice, choices) : null;
  const run = advice && route ? applyAdvice(asKind(preset, route.protocol), advice, route.protocol) : asKind(preset, 'debate');
  return {
    preset: run,
    calls,
    step: {
      kind: 'advice',
      model,
      status: advice ? 'ok' : 'failed',
      choices,
      advice,
      chosen: run.protocol.kind as ProtocolKind,
      ...(route ? { rule: route.rule } : {}),
      maxRounds: run.protocol.maxRounds,
      tokenBudget: run.protocol.tokenBudget ?? null,
      error: outcome.status === 'ok' ? null : outcome.error,
    },
  };
}
