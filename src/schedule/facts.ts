import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { connect, serverUrl } from '../backend/connect.js';
import type { Api, LoadedModel, ModelDetails, ModelServer, TagModel } from '../backend/types.js';
import type { HostEntry } from '../config/preset-schema.js';
import { errorMessage } from '../errors.js';
import { Gateway } from '../ollama/gateway.js';
import { type OpenAIGateway, servedModel } from '../openai/gateway.js';
import type { EmbeddedServer } from '../embedded/server.js';
import { NODE_LLAMA_CPP_VERSION } from '../embedded/engine.js';

const run = promisify(execFile);

/** GPU memory assumed when neither the config nor nvidia-smi says: a common workstation card. */
export const ASSUMED_VRAM_GIB = 16;

/** Concurrent requests assumed for an OpenAI-compatible server that does not say: llama-server's default slot count. */
export const ASSUMED_OPENAI_SLOTS = 4;

export interface HostFacts {
  url: string;
  /** The API the server speaks; an `openai` server owns its memory (no VRAM plan, no loads). */
  api: Api;
  /** The environment variable holding its key (the key itself is never kept here). */
  apiKeyEnv?: string;
  ok: boolean;
  error: string | null;
  /** The failure's code and hint when the host could not be used (HOST_UNREACHABLE, KEY_REFUSED, …). */
  errorCode?: string;
  errorHint?: string;
  version: string | null;
  models: TagModel[];
  loaded: LoadedModel[];
  details: Record<string, ModelDetails>;
  vramBytes: number;
  /** `server`: an OpenAI-compatible server manages its own memory; vramBytes is then unbounded. */
  vramSource: 'config' | 'nvidia-smi' | 'assumed' | 'server';
  numParallel: number;
  numParallelSource: 'config' | 'probe' | 'default';
  /** OLLAMA_MAX_LOADED_MODELS of the server: config, else Ollama's default of 3 (1 for an embedded host). */
  maxLoaded: number;
  /** Where an embedded host runs its models: `CPU`, or the GPU llama.cpp found. */
  device?: string;
}

/** Ollama resolves a bare name to `:latest`; compare the same way. */
export function sameModel(a: string, b: string): boolean {
  const norm = (s: string): string => (s.includes(':') ? s : `${s}:latest`).toLowerCase();
  return norm(a) === norm(b);
}

export function isLocalHost(url: string): boolean {
  const host = new URL(url).hostname;
  return host === '127.0.0.1' || host === 'localhost' || host === '::1' || host === '[::1]';
}

// A model's details (context length, geometry, capabilities) are fixed by its digest, so a process
// that runs many debates asks /api/show once per model file and host.
const detailsByDigest = new Map<string, ModelDetails>();
const DETAILS_KEPT = 256;

function remember(key: string, details: ModelDetails): void {
  if (detailsByDigest.size >= DETAILS_KEPT) detailsByDigest.delete(detailsByDigest.keys().next().value!);
  detailsByDigest.set(key, details);
}

/** Total GPU memory of this machine from nvidia-smi, or null when it is not there. */
export function localVramBytes(): Promise<number | null> {
  // A GPU's memory does not change while the process runs: ask nvidia-smi once.
  localVram ??= probeLocalVram();
  return localVram;
}

let localVram: Promise<number | null> | undefined;

async function probeLocalVram(): Promise<number | null> {
  try {
    const { stdout } = await run('nvidia-smi', ['--query-gpu=memory.total', '--format=csv,noheader,nounits'], { timeout: 5000 });
    const mib = stdout
      .split('\n')
      .map((l) => Number(l.trim()))
      .filter((n) => Number.isFinite(n) && n > 0);
    return mib.length ? mib.reduce((a, b) => a + b, 0) * 2 ** 20 : null;
  } catch {
    return null;
  }
}

/**
 * What a host serves and what it can hold. Never throws: an unusable host comes back with ok false.
 * `models` limits the /api/show look-ups to those the caller needs (default: every model on the host).
 * `version: false` leaves out /api/version (a debate plans without it; `hosts` shows it).
 */
export async function gatherHostFacts(
  entry: HostEntry,
  models: string[] = [],
  opts: { vramProbe?: () => Promise<number | null>; version?: boolean; env?: NodeJS.ProcessEnv } = {},
): Promise<HostFacts> {
  const api = entry.api ?? 'ollama';
  const url = serverUrl(entry);
  const base: HostFacts = {
    url,
    api,
    ...(entry.apiKeyEnv ? { apiKeyEnv: entry.apiKeyEnv } : {}),
    ok: false,
    error: null,
    version: null,
    models: [],
    loaded: [],
    details: {},
    vramBytes: (entry.vramGiB ?? ASSUMED_VRAM_GIB) * 2 ** 30,
    vramSource: entry.vramGiB ? 'config' : 'assumed',
    numParallel: entry.numParallel ?? 1,
    numParallelSource: entry.numParallel ? 'config' : 'default',
    maxLoaded: entry.maxLoadedModels ?? 3,
  };
  if (api === 'openai') return openAIFacts(entry, base, models, opts.env);
  if (api === 'embedded') return embeddedFacts(entry, base, models);
  const gateway = new Gateway(url);
  try {
    const [version, tags, loaded] = await Promise.all([opts.version === false ? null : gateway.version(), gateway.tags(), gateway.ps()]);
    base.version = version;
    base.models = tags;
    base.loaded = loaded;
  } catch (err) {
    const failed = { ...base, ...failure(err) };
    return failed.errorCode === 'NOT_OLLAMA' ? { ...failed, ...(await openAIInstead(url)) } : failed;
  }
  const wanted = models.length ? models.filter((m) => base.models.some((t) => sameModel(t.name, m))) : base.models.map((m) => m.name);
  await Promise.all(
    wanted.map(async (m) => {
      const digest = base.models.find((t) => sameModel(t.name, m))?.digest;
      const key = digest ? `${url} ${digest}` : null;
      const known = key ? detailsByDigest.get(key) : undefined;
      const d = known ?? (await gateway.show(m).catch(() => null));
      if (!d) return;
      base.details[m] = d;
      if (key && !known) remember(key, d);
    }),
  );
  if (!entry.vramGiB && isLocalHost(url)) {
    const probed = await (opts.vramProbe ?? localVramBytes)();
    if (probed) {
      base.vramBytes = probed;
      base.vramSource = 'nvidia-smi';
    }
  }
  return { ...base, ok: true };
}

export interface ProbeResult {
  model: string;
  requests: number;
  /** Most requests seen generating at the same moment. */
  overlap: number;
}

/**
 * Measure parallel slots: send `n` identical short requests at once and see how many
 * generate at the same time. With OLLAMA_NUM_PARALLEL=1 each waits for the previous one.
 */
export async function probeParallel(gateway: ModelServer, model: string, n = 4, numCtx?: number): Promise<ProbeResult> {
  const options = { num_predict: 24, temperature: 0, ...(numCtx ? { num_ctx: numCtx } : {}) };
  // Load first, so loading time does not look like queueing.
  await gateway.chat({ model, messages: [{ role: 'user', content: 'Say OK.' }], options: { ...options, num_predict: 1 } });
  const spans = await Promise.all(
    Array.from({ length: n }, async () => {
      let first = 0;
      await gateway.chat(
        { model, messages: [{ role: 'user', content: 'Count from one to twenty in words.' }], options },
        { onProgress: () => (first ||= performance.now()) },
      );
      return { start: first || performance.now(), end: performance.now() };
    }),
  );
  let overlap = 1;
  for (const s of spans) overlap = Math.max(overlap, spans.filter((o) => o.start <= s.start && o.end > s.start).length);
  return { model, requests: n, overlap };
}

/** An OpenAI-compatible server: its models from /v1/models, its slots from the config or the server; no VRAM, no loads. */
async function openAIFacts(entry: HostEntry, base: HostFacts, models: string[], env?: NodeJS.ProcessEnv): Promise<HostFacts> {
  const facts: HostFacts = { ...base, vramBytes: Number.POSITIVE_INFINITY, vramSource: 'server', maxLoaded: Number.POSITIVE_INFINITY, numParallel: entry.numParallel ?? ASSUMED_OPENAI_SLOTS };
  // A key named but not set is the user's to fix before anything is asked: it throws.
  const server = connect(entry, env) as OpenAIGateway;
  try {
    facts.version = await server.version();
    const catalog = await server.catalog();
    facts.models = catalog.map((m) => ({ ...servedModel(m.name), family: m.family ?? entry.family ?? null, ...(m.family === null && entry.family ? { familyFromHost: true } : {}) }));
    for (const m of catalog) {
      if (models.length && !models.some((wanted) => sameModel(wanted, m.name))) continue;
      facts.details[m.name] = { contextLength: m.contextLength, capabilities: [], kvBytesPerToken: null, family: m.family };
    }
    if (entry.numParallel === undefined) {
      const slots = await server.slots();
      if (slots !== null) {
        facts.numParallel = slots;
        facts.numParallelSource = 'probe';
      }
    }
  } catch (err) {
    return { ...facts, ...failure(err) };
  }
  return { ...facts, ok: true };
}

/**
 * A server that refused Ollama's /api routes: when it lists models on /v1/models it serves the
 * OpenAI API, and the message says so with the flags that reach it.
 */
async function openAIInstead(url: string): Promise<Partial<Pick<HostFacts, 'error' | 'errorHint'>>> {
  const base = url.replace(/\/+$/, '');
  try {
    const res = await fetch(`${base}/v1/models`, { signal: AbortSignal.timeout(5000) });
    await res.body?.cancel();
    // 401 or 403 still means the route exists: it wants a key.
    if (!res.ok && res.status !== 401 && res.status !== 403) return {};
  } catch {
    return {};
  }
  return {
    error: `${base} is an OpenAI-compatible server, not Ollama: it answered 404 on /api/tags and serves /v1/models.`,
    errorHint: `Pass \`--host ${base}/v1 --api openai\` (and \`--api-key-env VAR\` if it wants a key), or in a hosts file \`api: openai\` with that URL.`,
  };
}

/**
 * An embedded host: the models of its folder, each file's sha256 as its digest (read for the models the
 * run needs), one model loaded at a time, memory and device from llama.cpp (CPU: the machine's RAM).
 * The device is asked only when a run needs models: listing a folder does not load llama.cpp.
 */
async function embeddedFacts(entry: HostEntry, base: HostFacts, models: string[]): Promise<HostFacts> {
  const server = connect(entry) as EmbeddedServer;
  const wants = (name: string): boolean => models.length === 0 || models.some((m) => sameModel(m, name));
  const facts: HostFacts = { ...base, maxLoaded: 1, numParallel: entry.numParallel ?? 1 };
  try {
    facts.models = await server.tags(wants);
    for (const m of facts.models) if (wants(m.name)) facts.details[m.name] = await server.show(m.name);
    facts.loaded = await server.ps();
    if (models.length > 0) {
      const device = await server.device();
      facts.device = device.name;
      facts.version = `node-llama-cpp ${NODE_LLAMA_CPP_VERSION} on ${device.name}`;
      if (!entry.vramGiB) {
        facts.vramBytes = device.memoryBytes;
        facts.vramSource = 'server';
      }
    }
  } catch (err) {
    return { ...facts, ...failure(err) };
  }
  return { ...facts, ok: true };
}

function failure(err: unknown): Pick<HostFacts, 'error' | 'errorCode' | 'errorHint'> {
  const e = err as { code?: unknown; hint?: unknown };
  return {
    error: errorMessage(err),
    ...(typeof e?.code === 'string' ? { errorCode: e.code } : {}),
    ...(typeof e?.hint === 'string' ? { errorHint: e.hint } : {}),
  };
}
