/**
 * The schedule plan: pure arithmetic from host facts and the panel to concurrency limits,
 * model groups that can stay loaded together, and warnings. Recorded with each debate.
 */

import type { AgentFamily } from '../protocol/stances.js';

/** Fallback KV-cache size when a model's geometry is unknown: an 8B llama-class model at f16. */
export const DEFAULT_KV_BYTES_PER_TOKEN = 131_072;
/** Ollama's default OLLAMA_MAX_LOADED_MODELS per GPU. */
export const DEFAULT_MAX_LOADED = 3;

export interface PlanHost {
  url: string;
  /** An `openai` server owns its memory: its models need no VRAM here and never load or evict. Default `ollama`. `embedded` holds one model at a time. */
  api?: 'ollama' | 'openai' | 'embedded';
  /** Where an embedded host runs its models: `CPU`, or the GPU that llama.cpp found. */
  device?: string;
  /** The environment variable holding an `openai` server's key: recorded by name so a resumed run finds it again. */
  apiKeyEnv?: string;
  vramBytes: number;
  numParallel: number;
  /** Models this host has, with their size on disk. */
  models: Record<string, { sizeBytes: number; kvBytesPerToken: number | null }>;
  maxLoaded?: number;
}

/** A host as the plan records it: an OpenAI-compatible one with `api`, its key's variable by name, and vramBytes 0 (it manages its own). */
export interface PlannedHost {
  url: string;
  vramBytes: number;
  numParallel: number;
  api?: 'openai' | 'embedded';
  apiKeyEnv?: string;
  /** An embedded host's device: `CPU`, or the GPU llama.cpp found. */
  device?: string;
}

export interface PlanModel {
  model: string;
  numCtx: number;
  /** Weights plus KV cache for numCtx × numParallel. */
  vramBytes: number;
  hosts: string[];
  /** Calls in flight at most, summed over its hosts. */
  slots: number;
}

export interface SchedulePlan {
  /** `api` is left out for Ollama hosts (plans recorded before other servers existed read the same). */
  hosts: PlannedHost[];
  models: PlanModel[];
  /** Debater models packed into sets that fit in VRAM together; a round runs one set after another. */
  groups: string[][];
  /** True when every model of the debate (judge and synthesizer too) can stay loaded at once. */
  allResident: boolean;
  /** Models one host keeps loaded at most (OLLAMA_MAX_LOADED_MODELS). */
  maxLoaded: number;
  warnings: string[];
  /** The roles whose calls think or set `think`, decided from each model's capabilities before the first call. */
  thinking?: PlanThinking[];
  /** Each debater's model family (src/schedule/families.ts); absent in plans recorded before families were. */
  families?: AgentFamily[];
}

/** How one role thinks in this run: `think` as sent (`default` when none is sent), and the room reserved for it. */
export interface PlanThinking {
  role: string;
  model: string;
  thinks: boolean;
  think: 'default' | 'true' | 'false' | 'low' | 'medium' | 'high';
  room: number;
}

export function vramNeed(sizeBytes: number, kvBytesPerToken: number | null, numCtx: number, numParallel: number): number {
  return sizeBytes + numCtx * numParallel * (kvBytesPerToken ?? DEFAULT_KV_BYTES_PER_TOKEN);
}

const gb = (bytes: number): string => `${(bytes / 1e9).toFixed(1)} GB`;

/**
 * Build the plan. `debaters` are the models agents use (in preset order), `support` the
 * judge, synthesizer and stage models. Hosts are assumed healthy (skip the others first).
 */
export function planSchedule(hosts: PlanHost[], debaters: string[], support: string[], numCtx: Record<string, number>): SchedulePlan {
  const warnings: string[] = [];
  const all = [...new Set([...debaters, ...support])];
  // Embedded hosts load their models like Ollama does (one at a time), so they are planned the same way.
  const ollama = hosts.filter((h) => h.api !== 'openai');
  const models: PlanModel[] = all.map((model) => {
    const serving = hosts.filter((h) => h.models[model]);
    // Memory is planned on the Ollama hosts that serve the model; a model served only by OpenAI-compatible servers needs none here.
    const loading = serving.find((h) => h.api !== 'openai');
    const info = loading?.models[model];
    const ctx = numCtx[model] ?? 4096;
    const need = info ? vramNeed(info.sizeBytes, info.kvBytesPerToken, ctx, loading!.numParallel) : 0;
    return { model, numCtx: ctx, vramBytes: need, hosts: serving.map((h) => h.url), slots: serving.reduce((s, h) => s + h.numParallel, 0) };
  });
  const byName = new Map(models.map((m) => [m.model, m]));
  // The tightest Ollama host decides whether models can share memory.
  const vram = Math.min(...ollama.map((h) => h.vramBytes));
  const maxLoaded = Math.min(...ollama.map((h) => h.maxLoaded ?? DEFAULT_MAX_LOADED));

  for (const m of models) {
    if (m.vramBytes > vram) {
      warnings.push(`${m.model} needs ${gb(m.vramBytes)} at num_ctx ${m.numCtx} but the GPU has ${(vram / 2 ** 30).toFixed(0)} GiB: it will run partly on the CPU, much slower.`);
    }
  }

  const distinct = [...new Set(debaters)];
  const groups = packGroups(distinct, (m) => byName.get(m)?.vramBytes ?? 0, vram, maxLoaded);
  const totalAll = all.reduce((s, m) => s + (byName.get(m)?.vramBytes ?? 0), 0);
  const allResident = totalAll <= vram && all.length <= maxLoaded;
  if (groups.length > 1) {
    const [a, b] = distinct
      .map((m) => byName.get(m)!)
      .sort((x, y) => y.vramBytes - x.vramBytes);
    warnings.push(
      `${a!.model} (${gb(a!.vramBytes)}) and ${b!.model} (${gb(b!.vramBytes)}) cannot all stay loaded with the rest of the panel on a ${(vram / 2 ** 30).toFixed(0)} GiB GPU: ` +
        `each round runs the panel in ${groups.length} groups, loading each model once per round.`,
    );
  } else if (!allResident) {
    // Name the models that load after the panel: a protocol without a judge has only its synthesizer (or stage models).
    const extra = [...new Set(support)].filter((m) => m !== '' && !debaters.includes(m));
    const named = extra.length === 0 ? 'The other models' : extra.length === 1 ? `\`${extra[0]}\`` : `${extra.slice(0, -1).map((m) => `\`${m}\``).join(', ')} and \`${extra.at(-1)}\``;
    warnings.push(`${named} ${extra.length === 1 ? 'does' : 'do'} not fit next to the panel: ${extra.length === 1 ? 'it is' : 'they are'} loaded after the panel's calls, evicting a panel model.`);
  }
  return {
    hosts: hosts.map((h) =>
      h.api === 'openai'
        ? { url: h.url, vramBytes: 0, numParallel: h.numParallel, api: 'openai' as const, ...(h.apiKeyEnv ? { apiKeyEnv: h.apiKeyEnv } : {}) }
        : h.api === 'embedded'
          ? { url: h.url, vramBytes: h.vramBytes, numParallel: h.numParallel, api: 'embedded' as const, ...(h.device ? { device: h.device } : {}) }
          : { url: h.url, vramBytes: h.vramBytes, numParallel: h.numParallel },
    ),
    models,
    groups,
    allResident,
    maxLoaded,
    warnings,
  };
}

/** First-fit decreasing into sets under the VRAM budget and the loaded-model cap; order within the input is kept per set. */
export function packGroups(models: string[], need: (m: string) => number, vram: number, maxLoaded: number): string[][] {
  const sorted = [...models].sort((a, b) => need(b) - need(a));
  const bins: { models: string[]; used: number }[] = [];
  for (const m of sorted) {
    const bin = bins.find((b) => b.used + need(m) <= vram && b.models.length < maxLoaded);
    if (bin) {
      bin.models.push(m);
      bin.used += need(m);
    } else {
      bins.push({ models: [m], used: need(m) });
    }
  }
  return bins.map((b) => models.filter((m) => b.models.includes(m)));
}
