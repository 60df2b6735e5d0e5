import pLimit, { type LimitFunction } from 'p-limit';

/**
 * Caps calls in flight per model. Ollama serves OLLAMA_NUM_PARALLEL requests per model
 * (1 by default since v0.10) and queues the rest where our own timeouts would count
 * queueing as generation time, so extra calls wait here instead.
 */
export class ModelLimiter {
  private readonly limits = new Map<string, LimitFunction>();
  constructor(private readonly slotsFor: (model: string) => number) {}

  run<T>(model: string, fn: () => Promise<T>): Promise<T> {
    let limit = this.limits.get(model);
    if (!limit) {
      limit = pLimit(Math.max(1, this.slotsFor(model)));
      this.limits.set(model, limit);
    }
    return limit(fn);
  }
}
