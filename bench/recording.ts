import type { DebateEvent } from '../src/engine/events.js';
import { recorder } from '../src/engine/recorder.js';
import { runDebate } from '../src/engine/run-debate.js';
import type { Preset } from '../src/config/preset-schema.js';
import { openStore } from '../src/store/open.js';
import { emptyMetrics } from '../src/engine/structured-call.js';
import { median } from '../src/bench/stats.js';
import { testPreset } from '../test/helpers/panel.js';

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

/** One replayed copy of a debate, per call, in µs. */
export interface ReplayedCopy {
  /** The process's CPU over the copy: V8's background threads (garbage collection, compiling) included. */
  cpuUs: number;
  /** Time inside the writes alone, as `bench:engine` times the recorder inside its debates. */
  insideUs: number;
}

/**
 * Replays a captured debate `copies` times into one store at `dbPath`, each copy under a debate id
 * of its own and through a fresh recorder, and returns each copy's cost per call.
 * Unlike a loop of lone calls, this covers every write a debate makes: a rated call with its
 * rating, a round's turns, a judge's score with its stances, the synthesis, the start and the end.
 */
export function replayDebateWrites(writes: DebateWrites, dbPath: string, copies: number, gc: () => void): ReplayedCopy[] {
  const store = openStore(dbPath);
  const retag = (event: DebateEvent, id: string): DebateEvent => {
    const copy = structuredClone(event) as DebateEvent & { debateId?: string };
    if ('debateId' in copy) copy.debateId = id;
    if (copy.type === 'call.finished') copy.call.debateId = id;
    return copy;
  };
  const perCall: ReplayedCopy[] = [];
  for (let k = 0; k < copies; k++) {
    const id = `replay-${k}`;
    const groups = writes.groups.map((g) => (Array.isArray(g) ? g.map((e) => retag(e, id)) : retag(g, id)));
    const record = recorder(store);
    gc();
    let inside = 0n;
    const cpu0 = process.cpuUsage();
    for (const g of groups) {
      const t0 = process.hrtime.bigint();
      if (Array.isArray(g)) record.together!(g);
      else record(g);
      inside += process.hrtime.bigint() - t0;
    }
    const cpu = process.cpuUsage(cpu0);
    perCall.push({ cpuUs: (cpu.user + cpu.system) / writes.calls, insideUs: Number(inside) / 1000 / writes.calls });
  }
  store.close();
  return perCall;
}

/** CPU and wall time per call, in µs, of recording lone calls, and of the SQLite floor under them (medians over slices). */
export interface LoneCalls {
  wallUs: number;
  cpuUs: number;
  floorWallUs: number;
  floorCpuUs: number;
  /** Recording ÷ floor, CPU: the median over slices run one after the other, so the machine's drift cancels out. */
  overFloor: number;
  slices: number;
}

/**
 * Records `count` calls of ~4.5 KB straight to a store at `dbPath`, each its own transaction
 * with its checkpoint seal, chained; and, as a floor, as many rows with better-sqlite3 alone:
 * one insert and one update of a seal that differs each time, per transaction, nothing hashed
 * (rewriting a column with the value it holds writes no page). The two alternate in `slices`
 * slices, to the same file.
 */
export function recordLoneCalls(dbPath: string, count: number, gc: () => void, slices = 5): LoneCalls {
  const store = openStore(dbPath);
  const agents = [{ id: 'a', model: 'm', persona: null, cluster: null, role: 'debater' as const, digest: null }];
  const preset = testPreset(['a', 'b']);
  const message = 'x'.repeat(1500);
  const callOf = (i: number, debateId: string) => ({
    debateId, stage: 'critique' as const, round: i % 5, agentId: 'a', attempt: 0, host: 'h', model: 'm',
    messages: [{ role: 'user' as const, content: message }], options: { num_ctx: 8192 }, format: { type: 'object' },
    raw: message, parsed: { updatedPosition: message }, status: 'ok' as const, validationError: null, error: null, truncation: null,
    metrics: emptyMetrics(), startedAt: i, finishedAt: i + 1,
  });
  try {
    for (const id of ['bulk', 'floor']) store.createDebate({ id, question: 'q', preset, engineVersion: 'bench', host: 'h', agents, createdAt: Date.now() });
    const floorWrite = store.read('prepare the SQLite floor', (sqlite) => {
      const columns = ['debate_id', 'stage', 'round', 'agent_id', 'attempt', 'host', 'model', 'messages_json', 'options_json', 'format_json', 'raw', 'parsed_json', 'status', 'started_at', 'finished_at', 'prev_hash', 'hash'];
      const insert = sqlite.prepare(`insert into calls (${columns.join(', ')}) values (${columns.map(() => '?').join(', ')})`);
      const reseal = sqlite.prepare('update debates set seal = ? where id = ?');
      const hashes = Array.from({ length: 64 }, (_, k) => k.toString(16).padStart(64, '0'));
      const write = sqlite.transaction((i: number) => {
        const c = callOf(i, 'floor');
        const hash = hashes[i % 64]!;
        insert.run('floor', c.stage, c.round, c.agentId, c.attempt, c.host, c.model, JSON.stringify(c.messages), JSON.stringify(c.options), JSON.stringify(c.format), c.raw, JSON.stringify(c.parsed), c.status, c.startedAt, c.finishedAt, hash, hash);
        reseal.run(hash, 'floor');
      });
      return (i: number) => write.immediate(i);
    });
    const per = Math.ceil(count / slices);
    const recorded: Slice[] = [];
    const floor: Slice[] = [];
    for (let k = 0; k < slices; k++) {
      const first = k * per;
      recorded.push(timeSlice(per, gc, (i) => store.recordCall(callOf(first + i, 'bulk'))));
      floor.push(timeSlice(per, gc, (i) => floorWrite(first + i)));
    }
    return {
      wallUs: median(recorded.map((r) => r.wallUs)),
      cpuUs: median(recorded.map((r) => r.cpuUs)),
      floorWallUs: median(floor.map((r) => r.wallUs)),
      floorCpuUs: median(floor.map((r) => r.cpuUs)),
      overFloor: median(recorded.map((r, k) => r.cpuUs / floor[k]!.cpuUs)),
      slices,
    };
  } finally {
    store.close();
  }
}

interface Slice {
  wallUs: number;
  cpuUs: number;
}

/** Runs `write` `count` times after a garbage collection: wall and CPU time per run, in µs. */
function timeSlice(count: number, gc: () => void, write: (i: number) => void): Slice {
  gc();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) write(i);
  const cpu = process.cpuUsage(cpu0);
  return { wallUs: ((performance.now() - t0) / count) * 1000, cpuUs: (cpu.user + cpu.system) / count };
}
