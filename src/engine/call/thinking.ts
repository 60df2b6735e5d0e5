import type { Preset, ThinkSetting } from '../../config/preset-schema.js';

/**
 * Thinking, decided once per role and model before the first call (docs/thinking.md).
 * Ollama turns thinking on by default for a model with the `thinking` capability, answers
 * `think` sent to any other model with a 400, and counts thinking and answer together
 * against `num_predict`: so a call that thinks gets room for it on top of its answer.
 */
export interface ThinkingChoice {
  /** The `think` sent with the request; absent: none is sent (the model's default). */
  send?: ThinkSetting;
  /** Whether the model thinks on this call. */
  thinks: boolean;
  /** Tokens added to num_predict (and to num_ctx) for the thinking; 0 when it does not think. */
  room: number;
}

/** Tokens of thinking room when the preset does not set `protocol.thinkingTokens`. */
export const DEFAULT_THINKING_TOKENS = 3072;

/** The preset's room for thinking. */
export function thinkingBase(preset: Preset): number {
  return preset.protocol.thinkingTokens ?? DEFAULT_THINKING_TOKENS;
}

/** The room a level gets: `low` half the preset's `thinkingTokens`, `high` double. */
export function thinkingRoom(setting: ThinkSetting | undefined, base: number): number {
  if (setting === false) return 0;
  if (setting === 'low') return Math.round(base / 2);
  if (setting === 'high') return base * 2;
  return base;
}

/**
 * What a call sends and reserves. `capabilities` is the model's list from /api/show, or null
 * when the server does not report one (an Ollama from before thinking): then the preset's
 * setting is sent as written, and a model left at its default is taken not to think.
 */
export function chooseThinking(setting: ThinkSetting | undefined, capabilities: readonly string[] | null, base: number): ThinkingChoice {
  if (capabilities === null) {
    if (setting === undefined) return { thinks: false, room: 0 };
    return { send: setting, thinks: setting !== false, room: thinkingRoom(setting, base) };
  }
  if (!capabilities.includes('thinking')) return { thinks: false, room: 0 };
  const thinks = setting !== false;
  return { ...(setting === undefined ? {} : { send: setting }), thinks, room: thinks ? thinkingRoom(setting, base) : 0 };
}

/** The preset's `think` for the role that calls under this id: an agent, the judge, the synthesizer or the tension mapper. */
export function thinkSettingOf(preset: Preset, agentId: string): ThinkSetting | undefined {
  if (agentId === 'judge') return preset.judge.think;
  if (agentId === 'synthesizer') return preset.synthesizer.think;
  if (agentId === 'tension-map') return preset.tensions?.think;
  return preset.agents.find((a) => a.id === agentId)?.think;
}

/** Every role of the preset that sets `think`, with its model: what the run header shows and the start-up check reads. */
export function thinkSettings(preset: Preset): { role: string; model: string; think: ThinkSetting }[] {
  const out: { role: string; model: string; think: ThinkSetting }[] = [];
  for (const a of preset.agents) if (a.think !== undefined) out.push({ role: a.id, model: a.model, think: a.think });
  if (preset.judge.think !== undefined) out.push({ role: 'judge', model: preset.judge.model, think: preset.judge.think });
  if (preset.synthesizer.think !== undefined && preset.synthesizer.model) out.push({ role: 'synthesizer', model: preset.synthesizer.model, think: preset.synthesizer.think });
  const mapper = preset.tensions?.model ?? preset.judge.model;
  if (preset.tensions?.think !== undefined) out.push({ role: 'tension-map', model: mapper, think: preset.tensions.think });
  return out;
}

/** The request with its thinking: `think` as chosen for the role, and room for the thinking on top of the answer's num_predict. */
export function withThinking<R extends { options: Record<string, unknown> }>(req: R, choice: ThinkingChoice, answerTokens: number): R & { think?: ThinkSetting } {
  if (!choice.thinks && choice.send === undefined) return req;
  const options = choice.room > 0 ? { ...req.options, num_predict: Number(req.options.num_predict ?? answerTokens) + choice.room } : req.options;
  return { ...req, options, ...(choice.send === undefined ? {} : { think: choice.send }) };
}
