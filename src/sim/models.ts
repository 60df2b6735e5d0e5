import { createHash } from 'node:crypto';
import type { ModelSpec } from './scheduler.js';
import type { SimModel } from './sim-types.js';

/** The simulator's catalogue: a model as configured, its canonical name and family, its details as /api/tags and /api/show give them. */

export function toSpec(model: SimModel): ModelSpec {
  const sizeBytes = model.sizeBytes ?? 4.7e9;
  return {
    name: model.name,
    canonical: canonicalName(model.name),
    sizeBytes,
    contextLength: model.contextLength ?? 8192,
    family: model.family ?? familyByName(model.name),
    // A Q4_K_M file holds roughly 0.6 bytes per parameter.
    parameterSize: model.parameterSize ?? `${(sizeBytes / 0.6e9).toFixed(1)}B`,
    quantization: model.quantization ?? 'Q4_K_M',
    capabilities: model.capabilities ?? ['completion'],
    thinkingTokens: model.capabilities?.includes('thinking') ? (model.thinkingTokens ?? 1500) : 0,
    digest: model.digest ?? createHash('sha256').update(JSON.stringify([model.name, sizeBytes, model.contextLength ?? 8192, model.family, model.parameterSize, model.quantization, model.capabilities])).digest('hex'),
  };
}

/** Ollama names are case-insensitive and an untagged name means `:latest`. */
export function canonicalName(name: string): string {
  const lower = name.trim().toLowerCase();
  const last = lower.slice(lower.lastIndexOf('/') + 1);
  return last.includes(':') ? lower : `${lower}:latest`;
}

/**
 * The family the simulator reports for a model whose script names none, read from its name
 * as Ollama reports families (`qwen2.5:7b` → qwen2, `llama3.1:8b` → llama, `gemma2:9b` → gemma2).
 */
export function familyByName(name: string): string {
  const base = (name.split('/').at(-1) ?? name).split(':')[0]!.toLowerCase();
  const m = /^([a-z]+)(\d+)?/.exec(base);
  if (!m) return 'llama';
  return m[1] === 'llama' || !m[2] ? m[1]! : `${m[1]}${m[2]}`;
}

export function details(spec: ModelSpec): Record<string, unknown> {
  return {
    parent_model: '',
    format: 'gguf',
    family: spec.family,
    families: [spec.family],
    parameter_size: spec.parameterSize,
    quantization_level: spec.quantization,
  };
}

export function parameterCount(size: string): number {
  const match = /^([\d.]+)\s*([KMBT]?)/i.exec(size);
  if (!match) return 0;
  const scale: Record<string, number> = { K: 1e3, M: 1e6, B: 1e9, T: 1e12 };
  return Math.round(Number(match[1]) * (scale[match[2]!.toUpperCase()] ?? 1));
}
