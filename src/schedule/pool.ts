/** How long a host that left waits before one call is sent to it again: a refused connection costs a millisecond, a rebooted workstation a minute or two. */
export const REJOIN_AFTER_MS = 30_000;

/** A slot held by one call: the host it is on, which `SlotPool.move` can change. */
export interface Lease {
  readonly model: string;
  host: string;
  /** Whether the host had left when the slot was given: the call is what finds out whether it is back. */
  probe: boolean;
}

/**
 * Call slots across a pool of hosts. Each model has `numParallel` slots on every host that
 * serves it; a call takes a free slot on the host with the most free slots for that model,
 * or waits in FIFO order. This is what keeps calls from queueing inside Ollama, where our
 * time limits would count the wait as generation.
 *
 * A host that refused a connection has left: its models' calls go to the other hosts that serve
 * them, and it is given one call again every `rejoinAfterMs` to see whether it is back. A model
 * no other host serves keeps calling it, so its calls fail as an outage that names it.
 */
export class SlotPool {
  private readonly free = new Map<string, Map<string, number>>();
  private readonly waiters = new Map<string, ((host: string) => void)[]>();
  private readonly inFlight = new Map<string, number>();
  private readonly peak = new Map<string, number>();
  /** Hosts that left, since when (the last refusal). */
  private readonly gone = new Map<string, number>();
  readonly rejoinAfterMs: number;
  private readonly now: () => number;
  /** Where the owner of a pool that several runs share (a bench) hears that a host left or came back. */
  notice: ((message: string) => void) | undefined;

  /** `hosts`: for each model, the hosts that serve it and their slots per model. */
  constructor(hosts: { url: string; numParallel: number; models: string[] }[], options: { rejoinAfterMs?: number; now?: () => number } = {}) {
    this.rejoinAfterMs = options.rejoinAfterMs ?? REJOIN_AFTER_MS;
    this.now = options.now ?? Date.now;
    for (const h of hosts) {
      for (const m of h.models) {
        const perHost = this.free.get(m) ?? new Map<string, number>();
        perHost.set(h.url, h.numParallel);
        this.free.set(m, perHost);
      }
    }
  }

  /** How many hosts the pool has: one is no pool, and nothing fails over. */
  get hostCount(): number {
    return new Set([...this.free.values()].flatMap((perHost) => [...perHost.keys()])).size;
  }

  hostsFor(model: string): string[] {
    return this.usable(model);
  }

  async run<T>(model: string, fn: (host: string) => Promise<T>): Promise<T> {
    const lease = await this.lease(model);
    try {
      return await fn(lease.host);
    } finally {
      this.release(lease);
    }
  }

  /** A slot for one call; give it back with `release`. */
  async lease(model: string): Promise<Lease> {
    const host = await this.acquire(model);
    return { model, host, probe: this.tried(host) };
  }

  release(lease: Lease): void {
    this.give(lease.model, lease.host);
  }

  /**
   * Marks a host as left (it refused a connection). True the first time, so the caller says so once;
   * a host that refuses again while it is being tried again is only timed anew.
   */
  leave(host: string): boolean {
    const first = !this.gone.has(host);
    this.gone.set(host, this.now());
    return first;
  }

  /** A host that left answered a call again: it is back for every model. True when it had left. */
  back(host: string): boolean {
    return this.gone.delete(host);
  }

  /** Whether a host other than `host`, and not one that left, serves the model. */
  servedElsewhere(model: string, host: string): boolean {
    return [...(this.free.get(model)?.keys() ?? [])].some((h) => h !== host && !this.gone.has(h));
  }

  /** Moves a call's slot to another host that serves its model (waiting for one to be free). */
  async move(lease: Lease): Promise<void> {
    const from = lease.host;
    this.give(lease.model, from);
    lease.host = await this.acquire(lease.model, from);
    lease.probe = this.tried(lease.host);
  }

  /** Highest number of calls in flight at once for a model, over the pool. */
  peakInFlight(model: string): number {
    return this.peak.get(model) ?? 0;
  }

  /** Whether a call given this host tries a host that left: one call at a time does, the next waits its turn again. */
  private tried(host: string): boolean {
    if (!this.gone.has(host)) return false;
    this.gone.set(host, this.now());
    return true;
  }

  /** The hosts a call of the model may go to: those that have not left or are due to be tried again; all of them when every one has left. */
  private usable(model: string, avoid?: string): string[] {
    const hosts = [...(this.free.get(model)?.keys() ?? [])];
    const due = (h: string): boolean => h !== avoid && (!this.gone.has(h) || this.now() - this.gone.get(h)! >= this.rejoinAfterMs);
    const live = hosts.filter(due);
    return live.length > 0 ? live : hosts;
  }

  /** A free slot for the model, on the host with the most, or the next slot to be freed; `avoid`: not on that host while another serves the model. */
  private acquire(model: string, avoid?: string): Promise<string> {
    const perHost = this.free.get(model);
    if (!perHost || perHost.size === 0) throw new Error(`no host in the pool serves ${model}`);
    let best: string | null = null;
    for (const host of this.usable(model, avoid)) {
      const n = perHost.get(host)!;
      if (n > 0 && (best === null || n > perHost.get(best)!)) best = host;
    }
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

  private give(model: string, host: string): void {
    const perHost = this.free.get(model)!;
    perHost.set(host, perHost.get(host)! + 1);
    this.inFlight.set(model, (this.inFlight.get(model) ?? 1) - 1);
    // A slot on a host that left goes to no one while another host serves the model: the waiter takes the next slot there.
    if (!this.usable(model).includes(host)) return;
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
