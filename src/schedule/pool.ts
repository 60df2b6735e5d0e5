/**
 * Call slots across a pool of hosts. Each model has `numParallel` slots on every host that
 * serves it; a call takes a free slot on the host with the most free slots for that model,
 * or waits in FIFO order. This is what keeps calls from queueing inside Ollama, where our
 * time limits would count the wait as generation.
 */
export class SlotPool {
  private readonly free = new Map<string, Map<string, number>>();
  private readonly waiters = new Map<string, ((host: string) => void)[]>();
  private readonly inFlight = new Map<string, number>();
  private readonly peak = new Map<string, number>();

  /** `hosts`: for each model, the hosts that serve it and their slots per model. */
  constructor(hosts: { url: string; numParallel: number; models: string[] }[]) {
    for (const h of hosts) {
      for (const m of h.models) {
        const perHost = this.free.get(m) ?? new Map<string, number>();
        perHost.set(h.url, h.numParallel);
        this.free.set(m, perHost);
      }
    }
  }

  hostsFor(model: string): string[] {
    return [...(this.free.get(model)?.keys() ?? [])];
  }

  async run<T>(model: string, fn: (host: string) => Promise<T>): Promise<T> {
    const host = await this.acquire(model);
    try {
      return await fn(host);
    } finally {
      this.release(model, host);
    }
  }

  /** Highest number of calls in flight at once for a model, over the pool. */
  peakInFlight(model: string): number {
    return this.peak.get(model) ?? 0;
  }

  private acquire(model: string): Promise<string> {
    const perHost = this.free.get(model);
    if (!perHost || perHost.size === 0) throw new Error(`no host in the pool serves ${model}`);
    let best: string | null = null;
    for (const [host, n] of perHost) if (n > 0 && (best === null || n > perHost.get(best)!)) best = host;
    if (best !== null) {
      this.take(model, best);
      return Promise.resolve(best);
    }
    return new Promise((resolve) => {
      const queue = this.waiters.get(model) ?? [];
      queue.push(resolve);
      this.waiters.set(model, queue);
    });
  }

  private take(model: string, host: string): void {
    const perHost = this.free.get(model)!;
    perHost.set(host, perHost.get(host)! - 1);
    const n = (this.inFlight.get(model) ?? 0) + 1;
    this.inFlight.set(model, n);
    this.peak.set(model, Math.max(this.peak.get(model) ?? 0, n));
  }

  private release(model: string, host: string): void {
    const perHost = this.free.get(model)!;
    perHost.set(host, perHost.get(host)! + 1);
    this.inFlight.set(model, (this.inFlight.get(model) ?? 1) - 1);
    const next = this.waiters.get(model)?.shift();
    if (next) {
      this.take(model, host);
      next(host);
    }
  }
}

/**
 * Run one round's tasks group by group: all tasks whose model is in the first group, then the
 * next group, so that each model is loaded at most once per round when they cannot all stay loaded.
 * Groups whose models are already loaded go first, so a round starts with what the last one left loaded.
 */
export async function runGrouped<T>(
  tasks: { model: string; run: () => Promise<T> }[],
  groups: string[][],
  resident: ReadonlySet<string>,
  onGroupStart?: (models: string[], isLast: boolean) => void,
): Promise<T[]> {
  const results = new Array<T>(tasks.length);
  const wanted = new Set(tasks.map((t) => t.model));
  const active = groups.map((g) => g.filter((m) => wanted.has(m))).filter((g) => g.length > 0);
  const ungrouped = [...wanted].filter((m) => !active.some((g) => g.includes(m)));
  if (ungrouped.length) active.push(ungrouped);
  // Groups that need the fewest loads go first; ties keep the plan's order.
  const loadsNeeded = (g: string[]): number => g.filter((m) => !resident.has(m)).length;
  active.sort((a, b) => loadsNeeded(a) - loadsNeeded(b));
  for (const [i, group] of active.entries()) {
    onGroupStart?.(group, i === active.length - 1);
    await Promise.all(
      tasks.map(async (task, index) => {
        if (group.includes(task.model)) results[index] = await task.run();
      }),
    );
  }
  return results;
}
