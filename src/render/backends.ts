import type { PlannedHost } from '../schedule/plan.js';

/** Which servers answered a debate's calls: each host with its API and how many calls it served, in order of first use. */
export interface ServedBy {
  host: string;
  api: 'ollama' | 'openai' | 'embedded';
  calls: number;
}

export function servedBy(calls: readonly { host: string; api?: 'openai' | 'embedded' }[]): ServedBy[] {
  const out = new Map<string, ServedBy>();
  for (const c of calls) {
    const api = c.api ?? 'ollama';
    const key = `${api} ${c.host}`;
    const row = out.get(key) ?? { host: c.host, api, calls: 0 };
    row.calls += 1;
    out.set(key, row);
  }
  return [...out.values()];
}

export function apiName(api: 'ollama' | 'openai' | 'embedded' | undefined): string {
  return api === 'openai' ? 'OpenAI-compatible' : api === 'embedded' ? 'embedded llama.cpp' : 'Ollama';
}

/** One host of the plan in words: an Ollama host with its VRAM, an OpenAI-compatible one as managing its own memory. */
export function plannedHostText(h: PlannedHost): string {
  const slots = `${h.numParallel} parallel slot${h.numParallel === 1 ? '' : 's'} per model`;
  if (h.api === 'embedded') return `embedded llama.cpp on ${h.device ?? 'CPU'}, one model loaded at a time, ${slots}`;
  return h.api === 'openai'
    ? `OpenAI-compatible server${h.apiKeyEnv ? ` (key from $${h.apiKeyEnv})` : ''}: manages its own memory, ${slots}`
    : `Ollama, ${(h.vramBytes / 2 ** 30).toFixed(0)} GiB VRAM, ${slots}`;
}

/**
 * The synthesizer whose synthesis the record holds: the model of the last attempt that succeeded
 * (`conclave synthesize --model` can name another than the preset's), else the preset's.
 */
export function synthesizerUsed(d: {
  preset: { synthesizer: { model?: string | undefined } };
  synthesisAttempts?: readonly { model: string; status: string }[] | undefined;
}): string {
  const ok = (d.synthesisAttempts ?? []).filter((a) => a.status === 'ok' && a.model).at(-1);
  return ok?.model ?? d.preset.synthesizer.model ?? '';
}
