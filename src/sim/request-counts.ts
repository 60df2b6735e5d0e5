import type { ModelCounters, ModelSpec } from './sched-types.js';

/** What the simulator counts (requests, loads, reloads, evictions, calls in flight), in all and per model, for tests and benches. */
export class RequestCounts {
  #requests = 0;
  readonly #perModel = new Map<string, ModelCounters>();

  /** The live counters of one model (the scheduler and its attachments update them). */
  of(model: ModelSpec): ModelCounters {
    let stats = this.#perModel.get(model.name);
    if (!stats) {
      stats = { requests: 0, loads: 0, reloads: 0, evictions: 0, inFlight: 0, peakInFlight: 0 };
      this.#perModel.set(model.name, stats);
    }
    return stats;
  }

  request(model: ModelSpec): void {
    this.#requests++;
    this.of(model).requests++;
  }

  snapshot(): { requests: number; perModel: Record<string, ModelCounters> } {
    const perModel: Record<string, ModelCounters> = {};
    for (const [name, stats] of this.#perModel) perModel[name] = { ...stats };
    return { requests: this.#requests, perModel };
  }

  reset(): void {
    this.#requests = 0;
    for (const stats of this.#perModel.values()) {
      // inFlight describes the present, not history, so it survives a reset.
      Object.assign(stats, { requests: 0, loads: 0, reloads: 0, evictions: 0, peakInFlight: stats.inFlight });
    }
  }
}
