import type { ModelSpec, Scheduler } from './scheduler.js';
import { canonicalName } from './models.js';
import { HttpError } from './request.js';
import type { SimOptions } from './sim-types.js';

/** What the endpoints read of the running simulator. */
export interface SimState {
  readonly options: SimOptions;
  /** Served models by canonical name. */
  readonly models: ReadonlyMap<string, ModelSpec>;
  readonly scheduler: Scheduler;
  readonly startedAt: Date;
  /** Counts a generation request: its number overall and for its model, from 0. */
  count(model: string): { index: number; modelIndex: number };
  /** The server dies: it stops listening and resets every open connection (see SimHandle.kill). */
  kill(): Promise<void>;
  /** The server stops listening, so a new connection is refused, and leaves its open connections as they are. */
  unplug(): void;
}

export function lookup(sim: SimState, name: string): ModelSpec {
  const spec = sim.models.get(canonicalName(name));
  if (!spec) throw new HttpError(404, `model '${name}' not found`);
  return spec;
}
