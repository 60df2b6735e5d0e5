import pLimit from 'p-limit';
import type { HostEntry } from '../config/preset-schema.js';
import { HostError, InputError } from '../errors.js';
import { connect } from '../backend/connect.js';
import type { ModelServer } from '../backend/types.js';
import type { ModelDetails, TagModel } from '../backend/types.js';
import { type HostFacts, gatherHostFacts, sameModel } from './facts.js';
import { chooseNumCtx } from '../protocol/context.js';
import { type SchedulePlan, planSchedule } from './plan.js';
import { SlotPool, runGrouped } from './pool.js';
import { type Elsewhere, onPool } from './failover.js';
import { closest } from '../suggest.js';
import { formatNumber } from '../plural.js';

/**
 * How calls are dispatched. `planned` is the engine's default; the other two exist so the
 * schedule benchmark can compare against what a hand-written loop and most debate tools do.
 */
export type Strategy = 'planned' | 'sequential' | 'unbounded';

export { sameModel };
export type { Elsewhere };

export function validateHostEntries(entries: HostEntry[]): void {
  for (const [i, h] of entries.entries()) {
    if (h.api === 'openai' && (h.vramGiB !== undefined || h.maxLoadedModels !== undefined)) {
      throw new InputError('BAD_HOST_CONFIG', `Host ${i} (${h.url}) is an OpenAI-compatible server: it manages its own memory, so vramGiB and maxLoadedModels do not apply.`, {
        hint: 'Leave them out for `api: openai`; give numParallel (llama-server --parallel, vLLM max_num_seqs) for its concurrency.',
      });
    }
    if (h.vramGiB !== undefined && !(h.vramGiB > 0)) {
      throw new InputError('BAD_HOST_CONFIG', `Host ${i} (${h.url}): vramGiB must be above 0; got ${h.vramGiB}.`, { hint: 'Give the GPU memory in GiB, e.g. vramGiB: 24.' });
    }
    if (h.numParallel !== undefined && !(Number.isInteger(h.numParallel) && h.numParallel >= 1)) {
      throw new InputError('BAD_HOST_CONFIG', `Host ${i} (${h.url}): numParallel must be a whole number from 1 up; got ${h.numParallel}.`, {
        hint: "Use the server's OLLAMA_NUM_PARALLEL (1 by default since Ollama 0.10).",
      });
    }
  }
}

export interface ScheduleSetup {
  hosts: HostEntry[];
  /** Agents' models in preset order (repeats allowed). */
  debaters: string[];
  /** Judge, synthesizer and stage models. */
  support: string[];
  /** Tokens each model needs at most (prompt + reply); turned into one num_ctx per model. */
  contextNeeds: Record<string, number>;
  /** num_ctx set explicitly in the preset, kept as is. */
  explicitNumCtx: Record<string, number>;
  strategy?: Strategy;
  warn?: (message: string) => void;
  /** Estimated tokens of the question: refused before any call when no debater's context could hold it. */
  questionTokens?: number;
  /** Slots shared with other debates running at the same time (a bench with --concurrency); else the debate's own. */
  pool?: SlotPool;
  /**
   * Tokens of thinking room per model, once each model's capabilities are known (null: not reported):
   * added to its context need, so a call that thinks is not cut off by its own thinking.
   */
  thinkingRoom?: (capabilities: (model: string) => readonly string[] | null) => Record<string, number>;
  /** Where API keys are read from (hosts entries' apiKeyEnv); default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Who runs each model (`agent b`, `the judge`), for a message about a model missing. */
  usedBy?: Record<string, string[]>;
}

export class DebateScheduler {
  readonly plan: SchedulePlan;
  readonly numCtx: Record<string, number>;
  readonly strategy: Strategy;
  private readonly gateways = new Map<string, ModelServer>();
  private readonly pool: SlotPool;
  private readonly sequential = pLimit(1);
  /** Models in order of last use (most recent last): the basis for guessing what is still loaded. */
  private readonly recent: string[] = [];
  private readonly facts: HostFacts[];
  private rr = 0;
  private told: ((message: string) => void) | undefined;

  private constructor(facts: HostFacts[], plan: SchedulePlan, numCtx: Record<string, number>, strategy: Strategy, shared?: SlotPool, env?: NodeJS.ProcessEnv) {
    this.facts = facts;
    this.plan = plan;
    this.numCtx = numCtx;
    this.strategy = strategy;
    for (const f of facts) this.gateways.set(f.url, connect({ url: f.url, api: f.api, numParallel: f.numParallel, ...(f.apiKeyEnv ? { apiKeyEnv: f.apiKeyEnv } : {}) }, env));
    const unbounded = strategy === 'unbounded' ? 1_000_000 : 0;
    this.pool =
      shared && strategy === 'planned'
        ? shared
        : new SlotPool(
      facts.map((f) => ({
        url: f.url,
        numParallel: unbounded || f.numParallel,
        models: plan.models.filter((m) => m.hosts.includes(f.url)).map((m) => m.model),
      })),
    );
    for (const f of facts) for (const l of f.loaded) this.touch(l.name);
  }

  /**
   * Check every host, skip unhealthy ones with a warning, require every model somewhere,
   * size num_ctx per model, and plan. Throws before any debate call when something is missing.
   */
  static async prepare(setup: ScheduleSetup): Promise<DebateScheduler> {
    validateHostEntries(setup.hosts);
    const wanted = [...new Set([...setup.debaters, ...setup.support])];
    const gathered = await Promise.all(setup.hosts.map((h) => gatherHostFacts(h, wanted, { version: false, ...(setup.env ? { env: setup.env } : {}) })));
    const healthy = gathered.filter((f) => f.ok);
    // A refused key, or the failure of a lone OpenAI-compatible server, is reported as the server said it, not as a host that is down.
    const own = healthy.length > 0 ? undefined : (gathered.find((f) => f.errorCode === 'KEY_REFUSED' || f.errorCode === 'NOT_OLLAMA') ?? (gathered.length === 1 && gathered[0]!.api !== 'ollama' ? gathered[0] : undefined));
    if (own) throw new HostError(own.errorCode ?? 'HOST_UNREACHABLE', own.error ?? `Cannot reach ${own.url}.`, own.errorHint ? { hint: own.errorHint } : {});
    if (healthy.length === 0) {
      const names = gathered.map((f) => f.url).join(', ');
      // A lone host says what went wrong with it, as its gateway put it (refused, or took the connection and never answered).
      throw new HostError('HOST_UNREACHABLE', gathered.length === 1 ? (gathered[0]!.error ?? `Cannot reach Ollama at ${names}.`) : `None of the hosts answer: ${names}.`, {
        hint: 'Start it with `ollama serve`, or point `--host` / OLLAMA_HOST (or the hosts list) at a running server.',
      });
    }
    for (const f of gathered.filter((x) => !x.ok)) setup.warn?.(`Host ${f.url} is skipped: ${f.error}`);

    const has = (f: HostFacts, model: string): TagModel | undefined => f.models.find((t) => sameModel(t.name, model));
    const missing = wanted.filter((m) => !healthy.some((f) => has(f, m)));
    if (missing.length > 0) {
      const list = missing.map((m) => `\`${m}\`${setup.usedBy?.[m]?.length ? ` (${setup.usedBy[m].join(', ')})` : ''}`).join(', ');
      const where = healthy.length === 1 ? healthy[0]!.url : `any of ${healthy.map((f) => f.url).join(', ')}`;
      const pull = healthy.every((f) => f.api === 'ollama');
      // A name one slip away from a model the host serves, with the same numbers (`lama3.1:8b`, `qwen2.5-14b`), is a typo in
      // the preset more likely than a model to pull; `qwen2.5:7b` beside `qwen2.5:3b` is another model.
      const served = [...new Set(healthy.flatMap((f) => f.models.map((t) => t.name)))].filter((n) => /^[\w.:/-]+$/.test(n));
      const digits = (name: string) => name.replace(/\D/g, '');
      const typos = new Map(
        missing.flatMap((m) => {
          const near = closest(m, served.filter((n) => digits(n) === digits(m)));
          return near ? [[m, near] as const] : [];
        }),
      );
      const toPull = missing.filter((m) => !typos.has(m));
      const meant = typos.size > 0 ? ` Did you mean ${[...typos].map(([m, near]) => `\`${near}\` for \`${m}\``).join(', ')}? ${typos.size === 1 ? 'It is' : 'They are'} served there.` : '';
      const fix = typos.size > 0 ? `Correct ${typos.size === 1 ? 'that name' : 'those names'} in the preset (or pass --agent ID=MODEL)` : '';
      // A host of the pool that does not answer may be the one that serves it (a workstation switched off): it is named first.
      const down = gathered.filter((x) => !x.ok);
      const silent = down.length === 0 ? '' : ` ${down.map((f) => f.url).join(', ')} ${down.length === 1 ? 'does' : 'do'} not answer (${down[0]!.error?.replace(/\.$/, '') ?? 'no reply'}).`;
      const restart = down.length === 0 ? '' : `If ${down.length === 1 ? 'that host serves' : 'one of those hosts serves'} ${missing.length === 1 ? 'it' : 'them'}, start its server again and try again. Otherwise: `;
      throw new HostError('MODEL_MISSING', `${missing.length === 1 ? 'Model' : 'Models'} ${list} ${missing.length === 1 ? 'is' : 'are'} not on ${where}.${silent}${meant}`, {
        hint: ((rest: string) => (restart ? restart + rest.charAt(0).toLowerCase() + rest.slice(1) : rest))(!pull
          ? `${fix ? `${fix}. ` : ''}Pull it on an Ollama host or serve it from an OpenAI-compatible one (\`conclave models --hosts FILE\` lists what each serves), or change the preset.`
          : toPull.length === 0
            ? `${fix}.`
            : `${fix ? `${fix}, and run` : 'Run'} ${toPull.map((m) => `\`ollama pull ${m}\``).join(' and ')} on that host${fix ? '' : ', or change the preset'}.`),
      });
    }
    const detailOf = (m: string): ModelDetails | undefined => healthy.map((f) => f.details[m]).find(Boolean);
    if (setup.questionTokens !== undefined) {
      const limit = questionLimit(setup.debaters.map((m) => detailOf(m)?.contextLength ?? null));
      if (limit !== null && setup.questionTokens > limit) {
        throw new InputError('QUESTION_TOO_LARGE', `The question is about ${formatNumber(setup.questionTokens)} tokens; the largest context of the panel's models holds ${formatNumber(limit)}.`, {
          hint: 'Ask a short question and attach the long text instead: `--attach FILE` quotes the parts that matter into each prompt.',
        });
      }
    }
    const room = setup.thinkingRoom?.((m) => (detailOf(m)?.capabilities.length ? detailOf(m)!.capabilities : null)) ?? {};
    const numCtx: Record<string, number> = {};
    for (const m of wanted) {
      const explicit = setup.explicitNumCtx[m];
      if (explicit) numCtx[m] = explicit;
      else numCtx[m] = chooseNumCtx((setup.contextNeeds[m] ?? 4096) + (room[m] ?? 0), detailOf(m)?.contextLength ?? null);
    }

    for (const f of healthy) {
      if (f.vramSource !== 'config') continue;
      for (const m of wanted) {
        const tag = has(f, m);
        if (tag && tag.size > f.vramBytes) {
          throw new InputError('MODEL_TOO_LARGE', `Model \`${m}\` (${(tag.size / 1e9).toFixed(1)} GB) does not fit in the ${(f.vramBytes / 2 ** 30).toFixed(0)} GiB of VRAM stated for ${f.url}.`, {
            hint: 'Use a smaller model or quantisation, or correct vramGiB for that host.',
          });
        }
      }
    }

    const plan = planSchedule(
      healthy.map((f) => ({
        url: f.url,
        api: f.api,
        ...(f.apiKeyEnv ? { apiKeyEnv: f.apiKeyEnv } : {}),
        ...(f.device ? { device: f.device } : {}),
        vramBytes: f.vramBytes,
        numParallel: f.numParallel,
        maxLoaded: f.maxLoaded,
        models: Object.fromEntries(
          wanted.filter((m) => has(f, m)).map((m) => [m, { sizeBytes: has(f, m)!.size, kvBytesPerToken: detailOf(m)?.kvBytesPerToken ?? null }]),
        ),
      })),
      setup.debaters,
      setup.support,
      numCtx,
    );
    for (const f of healthy) if (f.vramSource === 'assumed' && plan.models.some((m) => m.hosts.includes(f.url))) plan.warnings.push(`GPU memory of ${f.url} is unknown: assuming ${(f.vramBytes / 2 ** 30).toFixed(0)} GiB. Pass --vram-gib or set vramGiB in the host config.`);
    return new DebateScheduler(healthy, plan, numCtx, setup.strategy ?? 'planned', setup.pool, setup.env);
  }

  /** The model's capabilities as /api/show listed them (read once per model file, with the host facts); null when not reported. */
  capabilitiesOf(model: string): readonly string[] | null {
    for (const f of this.facts) {
      const d = f.details[model];
      if (d && d.capabilities.length > 0) return d.capabilities;
    }
    return null;
  }

  /** What the hosts report of a model: its /api/show details and its tag, from the first host that has it. */
  reportOf(model: string): { details: ModelDetails | undefined; tag: TagModel | undefined } {
    for (const f of this.facts) {
      const tag = f.models.find((x) => sameModel(x.name, model));
      if (tag) return { details: f.details[model] ?? f.details[tag.name], tag };
    }
    return { details: undefined, tag: undefined };
  }

  digestOf(model: string): string | null {
    for (const f of this.facts) {
      const t = f.models.find((x) => sameModel(x.name, model));
      if (t) return t.digest;
    }
    return null;
  }

  /** Where the pool's changes are told (a host that left, one that is back); the run shows them as warnings. */
  onPoolChange(listener: (message: string) => void): void {
    this.told = listener;
  }

  /**
   * Run one model call on a host that serves the model, within the model's slots. `fn` is given
   * the server and `elsewhere`: asked with a send that failed, it returns another server of the
   * pool to send it to at once when that send's host has left (failover.ts), else null.
   */
  call<T>(model: string, fn: (gateway: ModelServer, elsewhere: Elsewhere) => Promise<T>): Promise<T> {
    // An unbounded run (a benchmark's baseline) ignores the slots: each call takes the next host in turn.
    const serverOf = (host: string): ModelServer => {
      this.touch(model);
      return this.gateways.get(this.strategy === 'unbounded' ? this.roundRobin(model) : host)!;
    };
    const dispatch = (): Promise<T> => onPool(this.pool, model, serverOf, fn, this.told);
    return this.strategy === 'sequential' ? this.sequential(dispatch) : dispatch();
  }

  /**
   * Run a round's calls: grouped so each model loads at most once, and while the last group
   * generates, load (or keep loaded) the models that come next (the judge, the synthesizer) when they fit.
   */
  round<T>(tasks: { model: string; run: () => Promise<T> }[], next: string[] = []): Promise<T[]> {
    if (this.strategy !== 'planned') return Promise.all(tasks.map((t) => t.run()));
    return runGrouped(tasks, this.plan.groups, this.residentGuess(), (group, isLast) => {
      if (!isLast) return;
      const keep: string[] = [];
      for (const model of next) {
        if (!this.fitsWith([...group, ...keep], model)) break;
        keep.push(model);
        // Sent before the group's calls: a loaded model is only touched, which keeps Ollama from evicting it for them.
        this.warm(model);
      }
    });
  }

  peakInFlight(model: string): number {
    return this.pool.peakInFlight(model);
  }

  /** Whether `extra` fits in VRAM next to `models` on the tightest host. */
  private fitsWith(models: string[], extra: string): boolean {
    const need = (m: string): number => this.plan.models.find((x) => x.model === m)?.vramBytes ?? Number.POSITIVE_INFINITY;
    const vram = Math.min(...this.plan.hosts.filter((h) => h.api !== 'openai').map((h) => h.vramBytes));
    const set = [...new Set([...models, extra])];
    return set.length <= this.plan.maxLoaded && set.reduce((s, m) => s + need(m), 0) <= vram;
  }

  private touch(model: string): void {
    const i = this.recent.indexOf(model);
    if (i >= 0) this.recent.splice(i, 1);
    this.recent.push(model);
  }

  /** Most recently used models that fit together: what Ollama most likely still holds (it evicts idle models, oldest first). */
  private residentGuess(): Set<string> {
    const need = (m: string): number => this.plan.models.find((x) => x.model === m)?.vramBytes ?? 0;
    const vram = Math.min(...this.plan.hosts.filter((h) => h.api !== 'openai').map((h) => h.vramBytes));
    const guess = new Set<string>();
    let used = 0;
    for (const m of [...this.recent].reverse()) {
      if (used + need(m) > vram || guess.size >= this.plan.maxLoaded) break;
      guess.add(m);
      used += need(m);
    }
    return guess;
  }

  /** An empty chat loads a model; same num_ctx as its real calls, or Ollama would reload it. A server that owns its memory loads nothing (its `warm` does nothing). */
  private warm(model: string): void {
    this.touch(model);
    const host = this.plan.models.find((m) => m.model === model)?.hosts[0];
    if (!host) return;
    void this.gateways
      .get(host)!
      .warm(model, { num_ctx: this.numCtx[model] })
      .catch(() => undefined);
  }

  private roundRobin(model: string): string {
    const hosts = this.pool.hostsFor(model);
    this.rr = (this.rr + 1) % Math.max(1, hosts.length);
    return hosts[this.rr % hosts.length]!;
  }
}


/** The most tokens a question may take: the largest context among the panel's models, or null when none is known. */
export function questionLimit(contextLengths: readonly (number | null)[]): number | null {
  const known = contextLengths.filter((c): c is number => c !== null && c > 0);
  return known.length ? Math.max(...known) : null;
}
