import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DebateEvent, DebateListener } from '../src/engine/events.js';
import { recorder } from '../src/engine/recorder.js';
import { runDebate } from '../src/engine/run-debate.js';
import { median } from '../src/bench/stats.js';
import { liveFileWriter } from '../src/events/live-file.js';
import { eventsWriter } from '../src/events/writer.js';
import { openStore } from '../src/store/open.js';
import { simModels, testPreset } from '../test/helpers/panel.js';
import { startSimProcess } from './sim-process.js';
import { collectGarbage } from './collect.js';

/**
 * The CPU cost of `--events`: the same 31-call debate (5 agents, round 0 and 4 critique rounds,
 * a judge each round, a synthesis) against a zero-latency simulator in a child process, run
 * without listeners, with the viewer's live file (what every `conclave run` on a file keeps),
 * and with the live file and the events writer (`run --events`), alternating, median of RUNS; and with
 * a listener that hears every streamed token and does nothing, which is the engine's own share.
 * Zero latency is the worst case: every token arrives at once, so nothing waits between them.
 */

const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const gc = collectGarbage;

type Mode = 'bare' | 'tokens heard' | 'live file' | 'live file + --events';

/** The engine events of the last debate run with `keep` set, to replay into the writer alone. */
const kept: DebateEvent[] = [];
let keep = false;

async function once(url: string, mode: Mode, dbPath: string) {
  const preset = testPreset(
    Array.from({ length: 5 }, (_, i) => `agent${i}`),
    { protocol: { maxRounds: 4, convergenceThreshold: 0.99, callTimeoutSeconds: 60 } },
  );
  const store = openStore(dbPath);
  const sink = createWriteStream('/dev/null');
  let lines = 0;
  const counted = Object.assign(Object.create(sink) as NodeJS.WritableStream, {
    write: (chunk: string) => {
      lines += 1;
      return sink.write(chunk);
    },
  });
  const listeners: DebateListener[] = [];
  // A listener that reads streamed tokens and does nothing: the engine's own cost of emitting them.
  if (mode === 'tokens heard') listeners.push(Object.assign(() => {}, { progress: true }));
  if (mode === 'live file' || mode === 'live file + --events') listeners.push(liveFileWriter(dbPath));
  const events = mode === 'live file + --events' ? eventsWriter(counted) : null;
  if (events) listeners.push(events);
  gc();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let tokens = 0;
  listeners.push(
    Object.assign(
      (e: DebateEvent) => {
        if (e.type === 'turn.progress') tokens += 1;
        if (keep) kept.push(e);
      },
      { progress: mode !== 'bare' },
    ),
  );
  const result = await runDebate({ question: 'Should we do A?', preset, host: url, recorder: recorder(store), listeners, numParallel: 4 });
  events?.end(result.status, 0, null);
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const calls = store.getDebate(result.id).calls.length;
  store.close();
  await new Promise<void>((resolve) => sink.end(resolve));
  return { cpuMs: (cpu.user + cpu.system) / 1000, wall, calls, lines, tokens };
}

const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-events-'));
const preset = testPreset(Array.from({ length: 5 }, (_, i) => `agent${i}`));
const sim = await startSimProcess({ models: simModels(preset), tokenMs: 0 });
try {
  const modes: Mode[] = ['bare', 'tokens heard', 'live file', 'live file + --events'];
  for (const m of modes) {
    // One debate's events, streamed tokens included, kept for the writer alone below.
    keep = m === 'tokens heard';
    await once(sim.url, m, join(dir, `warm-${m.replace(/\W+/g, '-')}.db`));
  }
  keep = false;
  const runs = new Map<Mode, Awaited<ReturnType<typeof once>>[]>(modes.map((m) => [m, []]));
  for (let i = 0; i < RUNS; i++) {
    // Rotated, so no mode always runs first after a collection.
    for (let k = 0; k < modes.length; k++) {
      const m = modes[(i + k) % modes.length]!;
      runs.get(m)!.push(await once(sim.url, m, join(dir, `run${i}-${k}.db`)));
    }
  }
  const cpu = (m: Mode): number => median(runs.get(m)!.map((r) => r.cpuMs));
  console.log(`CPU of --events: 5 agents × (round 0 + 4 critique rounds), zero-latency simulator in a child process, median of ${RUNS} runs`);
  console.log(`  calls per debate                      ${runs.get('bare')![0]!.calls}`);
  console.log(`  event lines per debate (--events)     ${median(runs.get('live file + --events')!.map((r) => r.lines))}`);
  console.log(`  streamed tokens per debate            ${median(runs.get('live file')!.map((r) => r.tokens))}`);
  for (const m of modes) console.log(`  ${`CPU, ${m}`.padEnd(38)}${cpu(m).toFixed(0)} ms (wall ${median(runs.get(m)!.map((r) => r.wall)).toFixed(0)} ms)`);
  const pct = (a: number, b: number): string => `${(((a - b) / b) * 100).toFixed(1)}%`;
  console.log(`  --events over the live file           ${pct(cpu('live file + --events'), cpu('live file'))}`);
  console.log(`  --events and live file over bare      ${pct(cpu('live file + --events'), cpu('bare'))}`);
  console.log(`  live file over bare                   ${pct(cpu('live file'), cpu('bare'))}`);
  console.log(`  tokens heard (no work) over bare      ${pct(cpu('tokens heard'), cpu('bare'))}`);

  // The writer alone, fed one debate's recorded events, on a clock that moves 100 ms per token:
  // every token becomes a delta line, the most --events can ever write for this debate.
  const replays: number[] = [];
  let replayLines = 0;
  for (let i = 0; i < RUNS; i++) {
    let clock = 0;
    replayLines = 0;
    const sink = createWriteStream('/dev/null');
    const out = Object.assign(Object.create(sink) as NodeJS.WritableStream, {
      write: (chunk: string) => {
        replayLines += 1;
        return sink.write(chunk);
      },
    });
    const writer = eventsWriter(out, { now: () => (clock += 100) });
    gc();
    const cpu0 = process.cpuUsage();
    for (const e of kept) writer(e);
    writer.end('completed', 0, null);
    const used = process.cpuUsage(cpu0);
    replays.push((used.user + used.system) / 1000);
    await new Promise<void>((resolve) => sink.end(resolve));
  }
  console.log(`  the writer alone, every token a line   ${median(replays).toFixed(1)} ms for ${replayLines} lines (${((median(replays) / cpu('bare')) * 100).toFixed(1)}% of a bare debate's CPU)`);
} finally {
  sim.stop();
  rmSync(dir, { recursive: true, force: true });
}
