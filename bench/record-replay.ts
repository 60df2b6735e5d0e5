import type { DebateEvent } from '../src/engine/events.js';
import { recorder } from '../src/engine/recorder.js';
import { runDebate } from '../src/engine/run-debate.js';
import type { Preset } from '../src/config/preset-schema.js';
import { openStore } from '../src/store/open.js';

/** One debate's events as the runner handed them to its recorder: one by one, or together. */
export interface DebateWrites {
  groups: (DebateEvent | DebateEvent[])[];
  calls: number;
}

/** Runs one debate against `host`, recording it to `dbPath`, and keeps every event its recorder was given, in order. */
export async function captureDebateWrites(host: string, preset: Preset, dbPath: string): Promise<DebateWrites> {
  const store = openStore(dbPath);
  const real = recorder(store);
  const groups: (DebateEvent | DebateEvent[])[] = [];
  const capture = Object.assign(
    (event: DebateEvent) => {
      groups.push(event);
      real(event);
    },
    {
      progress: false,
      together: (events: readonly DebateEvent[]) => {
        groups.push([...events]);
        real.together!(events);
      },
    },
  );
  await runDebate({ question: 'Should we do A?', preset, host, recorder: capture, numParallel: 4 });
  await real.drain();
  store.close();
  return { groups, calls: groups.flat().filter((e) => e.type === 'call.finished').length };
}

/**
 * Replays a captured debate `copies` times into one store at `dbPath`, each copy under a debate id
 * of its own and through a fresh recorder, and returns the CPU of each copy per call, in µs.
 * Unlike a loop of lone calls, this covers every write a debate makes: a rated call with its
 * rating, a round's turns, a judge's score with its stances, the synthesis, the start and the end.
 */
export function replayDebateWrites(writes: DebateWrites, dbPath: string, copies: number, gc: () => void): number[] {
  const store = openStore(dbPath);
  const retag = (event: DebateEvent, id: string): DebateEvent => {
    const copy = structuredClone(event) as DebateEvent & { debateId?: string };
    if ('debateId' in copy) copy.debateId = id;
    if (copy.type === 'call.finished') copy.call.debateId = id;
    return copy;
  };
  const perCall: number[] = [];
  for (let k = 0; k < copies; k++) {
    const id = `replay-${k}`;
    const groups = writes.groups.map((g) => (Array.isArray(g) ? g.map((e) => retag(e, id)) : retag(g, id)));
    const record = recorder(store);
    gc();
    const cpu0 = process.cpuUsage();
    for (const g of groups) {
      if (Array.isArray(g)) record.together!(g);
      else record(g);
    }
    const cpu = process.cpuUsage(cpu0);
    perCall.push((cpu.user + cpu.system) / writes.calls);
  }
  store.close();
  return perCall;
}
