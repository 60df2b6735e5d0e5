import { CanceledError, type ModelCounters, type ModelSpec, type RunnerOptions } from './sched-types.js';

/** One loaded model process: its options, memory, keep_alive and parallel slots. */
export class Runner {
  refCount = 0;
  active = 0;
  readonly slotQueue: Array<{ grant: () => void }> = [];
  lastUsed = 0;
  idleSince = Date.now();
  expireTimer: NodeJS.Timeout | undefined;
  /** Marked for unloading as soon as it is idle (reload target). */
  draining = false;

  constructor(
    readonly model: ModelSpec,
    readonly options: RunnerOptions,
    readonly sizeBytes: number,
    readonly vramBytes: number,
    public keepAliveMs: number,
  ) {}
}

/** What an attachment asks of the scheduler that made it: its slots per runner, counters, clock, and word of an idle runner. */
export interface SlotOwner {
  readonly config: { readonly numParallel: number };
  stats(model: ModelSpec): ModelCounters;
  tick(): number;
  runnerIdle(runner: Runner): void;
}

/**
 * A request's hold on a loaded runner. It counts towards the runner's
 * refCount (so the runner is busy and cannot be evicted) from the moment it is
 * scheduled; it occupies one of the runner's parallel slots only after
 * `acquireSlot` resolves. `release` ends both and is safe to call twice.
 */
export class Attachment {
  private holdsSlot = false;
  private released = false;

  constructor(
    private readonly scheduler: SlotOwner,
    private readonly runner: Runner,
    /** True when the request went through the load queue rather than the fast path. */
    readonly queued: boolean,
  ) {}

  acquireSlot(signal?: AbortSignal): Promise<void> {
    const runner = this.runner;
    if (this.released) return Promise.reject(new CanceledError());
    if (runner.active < this.scheduler.config.numParallel && runner.slotQueue.length === 0) {
      this.takeSlot();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          this.takeSlot();
          resolve();
        },
      };
      const onAbort = () => {
        const at = runner.slotQueue.indexOf(waiter);
        if (at >= 0) runner.slotQueue.splice(at, 1);
        reject(new CanceledError());
      };
      if (signal?.aborted) return reject(new CanceledError());
      signal?.addEventListener('abort', onAbort, { once: true });
      runner.slotQueue.push(waiter);
    });
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    const runner = this.runner;
    if (this.holdsSlot) {
      this.holdsSlot = false;
      runner.active--;
      this.scheduler.stats(runner.model).inFlight--;
      // Slots are handed over in FIFO order before anything else can grab them.
      while (runner.active < this.scheduler.config.numParallel && runner.slotQueue.length > 0) {
        runner.slotQueue.shift()!.grant();
      }
    }
    runner.refCount--;
    runner.lastUsed = this.scheduler.tick();
    if (runner.refCount === 0) this.scheduler.runnerIdle(runner);
  }

  private takeSlot(): void {
    this.holdsSlot = true;
    this.runner.active++;
    const stats = this.scheduler.stats(this.runner.model);
    stats.inFlight++;
    stats.peakInFlight = Math.max(stats.peakInFlight, stats.inFlight);
  }
}
