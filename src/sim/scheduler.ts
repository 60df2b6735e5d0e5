import { RequestCounts } from './request-counts.js';
import { Attachment, Runner } from './runner-slots.js';
import {
  CanceledError,
  KV_BYTES_PER_TOKEN,
  type LoadedRunnerInfo,
  type ModelCounters,
  type ModelSpec,
  QueueFullError,
  type RunnerOptions,
  type SchedulerConfig,
} from './sched-types.js';

export * from './sched-types.js';
export { Attachment, Runner } from './runner-slots.js';

// setTimeout cannot wait longer than 2^31-1 ms; anything beyond is treated as "never".
const MAX_TIMER_MS = 2 ** 31 - 1;

interface PendingRequest {
  model: ModelSpec;
  options: RunnerOptions;
  keepAliveMs: number | undefined;
  canceled: boolean;
  settle: (attachment: Attachment | Error) => void;
}

/**
 * Ollama's scheduler in miniature (server/sched.go): a request for a loaded
 * runner with the same runner options attaches at once and waits for one of
 * `numParallel` slots; anything else joins a bounded FIFO load queue that is
 * worked one request at a time, so only one model loads at once. A load evicts
 * idle runners (shortest keep_alive first, then least recently used) until the
 * model fits in VRAM and under maxLoadedModels, and waits for a busy runner to
 * go idle rather than evicting it.
 */
export class Scheduler {
  private readonly loadedRunners = new Map<string, Runner>();
  private readonly pending: PendingRequest[] = [];
  private readonly changeWaiters = new Set<() => void>();
  private readonly counts = new RequestCounts();
  private pumping = false;
  private closed = false;
  private clock = 0;
  private loadTimer: { timer: NodeJS.Timeout; done: () => void } | undefined;
  constructor(readonly config: SchedulerConfig) {}

  tick(): number {
    return ++this.clock;
  }

  stats(model: ModelSpec): ModelCounters {
    return this.counts.of(model);
  }

  countRequest(model: ModelSpec): void {
    this.counts.request(model);
  }

  counters(): { requests: number; perModel: Record<string, ModelCounters> } {
    return this.counts.snapshot();
  }

  resetCounters(): void {
    this.counts.reset();
  }

  /** Configured names of loaded models, in load order. */
  loadedNames(): string[] {
    return [...this.loadedRunners.values()].map((runner) => runner.model.name);
  }

  loadedInfo(): LoadedRunnerInfo[] {
    const now = Date.now();
    return [...this.loadedRunners.values()].map((runner) => {
      const forever = !Number.isFinite(runner.keepAliveMs) || runner.keepAliveMs > MAX_TIMER_MS;
      const from = runner.refCount > 0 ? now : runner.idleSince;
      return {
        model: runner.model,
        options: runner.options,
        sizeBytes: runner.sizeBytes,
        vramBytes: runner.vramBytes,
        expiresAt: forever ? Number.POSITIVE_INFINITY : from + runner.keepAliveMs,
      };
    });
  }

  /**
   * Schedules a request: resolves once it is attached to a runner with its
   * options loaded. Rejects with QueueFullError when the load queue is full and
   * with CanceledError when the signal fires first.
   */
  attach(model: ModelSpec, options: RunnerOptions, keepAliveMs: number | undefined, signal?: AbortSignal): Promise<Attachment> {
    if (this.closed) return Promise.reject(new CanceledError());
    if (signal?.aborted) return Promise.reject(new CanceledError());
    const runner = this.loadedRunners.get(model.name);
    if (runner && sameOptions(runner.options, options)) {
      return Promise.resolve(this.attachTo(runner, keepAliveMs, false));
    }
    if (this.pending.length >= this.config.maxQueue) return Promise.reject(new QueueFullError());
    return new Promise<Attachment>((resolve, reject) => {
      const item: PendingRequest = {
        model,
        options,
        keepAliveMs,
        canceled: false,
        settle: (result) => {
          signal?.removeEventListener('abort', onAbort);
          if (result instanceof Error) reject(result);
          else resolve(result);
        },
      };
      const onAbort = () => {
        item.canceled = true;
        const at = this.pending.indexOf(item);
        if (at >= 0) this.pending.splice(at, 1);
        item.settle(new CanceledError());
        this.notify();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.push(item);
      void this.pump();
    });
  }

  /** Ollama's expireRunner: keep_alive 0, unloading now if idle or when the last request ends. */
  expire(model: ModelSpec): void {
    const runner = this.loadedRunners.get(model.name);
    if (!runner) return;
    runner.keepAliveMs = 0;
    if (runner.refCount === 0) this.unload(runner, false);
  }

  close(): void {
    this.closed = true;
    for (const item of this.pending.splice(0)) item.settle(new CanceledError());
    for (const runner of this.loadedRunners.values()) {
      clearTimeout(runner.expireTimer);
      runner.expireTimer = undefined;
    }
    if (this.loadTimer) {
      clearTimeout(this.loadTimer.timer);
      this.loadTimer.done();
    }
    this.notify();
  }

  /** Called by an Attachment when a runner's last request ends. */
  runnerIdle(runner: Runner): void {
    runner.idleSince = Date.now();
    if (this.loadedRunners.get(runner.model.name) !== runner) return;
    if (runner.draining || runner.keepAliveMs <= 0) {
      this.unload(runner, false);
      return;
    }
    this.armExpiry(runner);
    this.notify();
  }

  private attachTo(runner: Runner, keepAliveMs: number | undefined, queued: boolean): Attachment {
    runner.refCount++;
    runner.lastUsed = this.tick();
    clearTimeout(runner.expireTimer);
    runner.expireTimer = undefined;
    // keep_alive belongs to the runner and the last request that names one wins.
    if (keepAliveMs !== undefined) runner.keepAliveMs = keepAliveMs;
    return new Attachment(this, runner, queued);
  }

  private armExpiry(runner: Runner): void {
    clearTimeout(runner.expireTimer);
    runner.expireTimer = undefined;
    if (!Number.isFinite(runner.keepAliveMs) || runner.keepAliveMs > MAX_TIMER_MS) return;
    runner.expireTimer = setTimeout(() => {
      runner.expireTimer = undefined;
      if (runner.refCount === 0) this.unload(runner, false);
    }, runner.keepAliveMs);
    runner.expireTimer.unref();
  }

  private unload(runner: Runner, eviction: boolean): void {
    if (this.loadedRunners.get(runner.model.name) !== runner) return;
    clearTimeout(runner.expireTimer);
    runner.expireTimer = undefined;
    this.loadedRunners.delete(runner.model.name);
    if (eviction) this.stats(runner.model).evictions++;
    this.notify();
  }

  private notify(): void {
    const waiters = [...this.changeWaiters];
    this.changeWaiters.clear();
    for (const wake of waiters) wake();
  }

  private nextChange(): Promise<void> {
    return new Promise((resolve) => this.changeWaiters.add(resolve));
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (!this.closed && this.pending.length > 0) {
        const item = this.pending.shift()!;
        if (item.canceled) continue;
        try {
          await this.serve(item);
        } catch (error) {
          if (!item.canceled) item.settle(error instanceof Error ? error : new Error(String(error)));
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  private async serve(item: PendingRequest): Promise<void> {
    const existing = this.loadedRunners.get(item.model.name);
    if (existing && sameOptions(existing.options, item.options)) {
      item.settle(this.attachTo(existing, item.keepAliveMs, true));
      return;
    }
    const reload = existing !== undefined;
    if (existing) {
      // A reload waits for the old runner's requests; new ones with its options still join it (#17408).
      existing.draining = true;
      if (existing.refCount === 0) this.unload(existing, false);
      while (this.loadedRunners.get(item.model.name) === existing) {
        if (item.canceled || this.closed) {
          existing.draining = false;
          return;
        }
        await this.nextChange();
      }
    }

    const need = item.model.sizeBytes + item.options.numCtx * this.config.numParallel * KV_BYTES_PER_TOKEN;
    while (!this.fits(need)) {
      if (item.canceled || this.closed) return;
      const victim = this.idleVictim();
      if (victim) this.unload(victim, true);
      else await this.nextChange();
    }
    if (item.canceled || this.closed) return;

    await this.sleepForLoad();
    if (this.closed) {
      if (!item.canceled) item.settle(new CanceledError());
      return;
    }
    const vram = Math.min(need, this.config.vramBytes);
    const runner = new Runner(item.model, item.options, need, vram, item.keepAliveMs ?? this.config.defaultKeepAliveMs);
    this.loadedRunners.set(item.model.name, runner);
    const stats = this.stats(item.model);
    stats.loads++;
    if (reload) stats.reloads++;
    if (item.canceled) {
      // The load finishes even though its requester left; the runner then idles like any other.
      this.runnerIdle(runner);
      return;
    }
    item.settle(this.attachTo(runner, item.keepAliveMs, true));
  }

  private fits(need: number): boolean {
    // The first model always loads, spilling onto the CPU when it is larger than VRAM.
    if (this.loadedRunners.size === 0) return true;
    const { maxLoadedModels, vramBytes } = this.config;
    if (maxLoadedModels > 0 && this.loadedRunners.size >= maxLoadedModels) return false;
    let used = 0;
    for (const runner of this.loadedRunners.values()) used += runner.vramBytes;
    return used + need <= vramBytes;
  }

  private idleVictim(): Runner | undefined {
    let best: Runner | undefined;
    for (const runner of this.loadedRunners.values()) {
      if (runner.refCount > 0) continue;
      if (
        !best ||
        runner.keepAliveMs < best.keepAliveMs ||
        (runner.keepAliveMs === best.keepAliveMs && runner.lastUsed < best.lastUsed)
      ) {
        best = runner;
      }
    }
    return best;
  }

  private sleepForLoad(): Promise<void> {
    if (this.config.loadMs <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.loadTimer = undefined;
        resolve();
      };
      this.loadTimer = { timer: setTimeout(done, this.config.loadMs), done };
    });
  }
}

function sameOptions(a: RunnerOptions, b: RunnerOptions): boolean {
  return a.numCtx === b.numCtx && a.numGpu === b.numGpu && a.numBatch === b.numBatch && a.numThread === b.numThread;
}
