import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ollama } from 'ollama';
import pLimit from 'p-limit';
import type { StoredCall } from '../src/store/store.js';
import { type Recorder, recorder } from '../src/engine/recorder.js';
import type { DebateEvent } from '../src/engine/events.js';
import { runDebate } from '../src/engine/run-debate.js';
import { median, quantile } from '../src/bench/stats.js';
import { openStore } from '../src/store/open.js';
import { packagePath } from '../src/package-root.js';
import { simModels, testPreset } from '../test/helpers/panel.js';
import { captureDebateWrites, recordLoneCalls, replayDebateWrites } from './recording.js';
import { startSimProcess } from './sim-process.js';
import { collectGarbage } from './collect.js';

/**
 * Engine overhead: debates against a zero-latency simulator running in a child process,
 * so the CPU time measured here is Conclave's (prompting, validation, streaming, recording).
 * Also: the whole `conclave run` process against the bare client's (needs `npm run build`),
 * peak RSS of a 10-agent debate, SQLite recording of 10,000 calls, `list` over 10,000 debates.
 * Each figure is printed against its target.
 */

/**
 * In process, a debate pair costs a fraction of a second, and one pair's ratio varies by half on
 * this kind of machine: more pairs, after warm-up runs that let the JIT settle (the first debates
 * cost several times the later ones), so the median is of the steady state a long bench runs in.
 */
const PAIRS = Number(process.env.BENCH_PAIRS ?? 21);
/** Runs of each debate size as whole processes: start-up varies, so more runs than in process. */
const PROCESS_RUNS = Number(process.env.BENCH_RUNS ?? 11);
const WARM_UP = 4;
/** Engine CPU per call ÷ the bare client's, in process; the whole `conclave run` process ÷ the bare client's; CPU of recording one call. */
const TARGET = { ratio: 1.2, processRatio: 1.5, recordUs: 100 };
const verdict = (met: boolean): string => (met ? 'meets the target' : 'MISSES the target');

// Each measured run starts from a collected heap, so one run's garbage is never charged to the next
// (the engine and the bare client alternate).
const gc = collectGarbage;

async function startSimChild(agents: number) {
  const preset = testPreset(Array.from({ length: agents }, (_, i) => `agent${i}`));
  return startSimProcess({ models: simModels(preset), tokenMs: 0 });
}

/**
 * The floor: the bare `ollama` client (its default fetch) streaming the same requests the
 * engine sent, from the same simulator, as many at a time, doing nothing with the replies.
 */
async function bareOnce(url: string, requests: StoredCall[], parallel: number) {
  const client = new Ollama({ host: url });
  const limit = pLimit(parallel);
  gc();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    requests.map((c) =>
      limit(async () => {
        const stream = await client.chat({
          model: c.model,
          messages: c.messages,
          options: c.options,
          ...(c.format ? { format: c.format } : {}),
          stream: true,
        });
        let content = '';
        for await (const chunk of stream) content += chunk.message.content;
        return content;
      }),
    ),
  );
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { wall, cpuMs: (cpu.user + cpu.system) / 1000, calls: requests.length };
}

/** `agents` agents that never converge, for round 0 and `rounds` critique rounds. */
function panelPreset(agents: number, rounds: number) {
  return testPreset(
    Array.from({ length: agents }, (_, i) => `agent${i}`),
    { protocol: { maxRounds: rounds, convergenceThreshold: 0.99, callTimeoutSeconds: 60 } },
  );
}

async function debateOnce(url: string, agents: number, rounds: number, dbPath: string) {
  const preset = panelPreset(agents, rounds);
  const store = openStore(dbPath);
  const record = timed(recorder(store));
  gc();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await runDebate({ question: 'Should we do A?', preset, host: url, recorder: record, numParallel: 4 });
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const calls = store.getDebate(result.id).calls.length;
  store.close();
  return { wall, cpuMs: (cpu.user + cpu.system) / 1000, calls, recordingMs: record.ms() };
}

/**
 * The recorder, with the time spent inside it added up. It writes synchronously, so this is what
 * recording costs within the debate, interleaved with everything else the engine does: a measure
 * of one run, where "recording adds" below is a difference between two runs.
 */
function timed(inner: Recorder): Recorder & { ms(): number } {
  let ns = 0n;
  const time = (write: () => void): void => {
    const t0 = process.hrtime.bigint();
    try {
      write();
    } finally {
      ns += process.hrtime.bigint() - t0;
    }
  };
  return Object.assign((event: DebateEvent) => time(() => inner(event)), {
    progress: false as const,
    together: (events: readonly DebateEvent[]) => time(() => inner.together!(events)),
    drain: () => inner.drain(),
    unwritten: () => inner.unwritten(),
    ms: () => Number(ns) / 1e6,
  });
}

/** The same debate with nothing recorded: a listener that counts the calls, so recording's share shows. */
async function unrecordedOnce(url: string, agents: number, rounds: number) {
  let calls = 0;
  const counter: Recorder = Object.assign((e: DebateEvent) => void (e.type === 'call.finished' && calls++), {
    together: (events: readonly DebateEvent[]) => void (calls += events.filter((e) => e.type === 'call.finished').length),
    drain: async () => {},
    unwritten: () => [],
  });
  gc();
  const cpu0 = process.cpuUsage();
  await runDebate({ question: 'Should we do A?', preset: panelPreset(agents, rounds), host: url, recorder: counter, numParallel: 4 });
  const cpu = process.cpuUsage(cpu0);
  return { cpuMs: (cpu.user + cpu.system) / 1000, calls };
}

/**
 * The whole process, as a user runs it: `conclave run` (the built CLI) against the bare client
 * in a process of its own sending the same requests, for debates of 7, 31 and 79 calls (5 agents,
 * none, 4 or 12 critique rounds). The difference between two sizes, divided by the calls between
 * them, is the CPU per call with start-up cancelled out. Start-up (most of a process's CPU) varies
 * by more than 24 calls cost, so each run of the sizes is paired: its ratio is taken from its
 * own differences, and the median and quartiles are of those ratios. 31 − 7 is the measure the
 * target is set on; 79 − 7 has more calls between the sizes for the start-up's noise to hide in.
 * Each process reports its own CPU time as it exits.
 */
async function wholeProcess(dir: string): Promise<void> {
  const cli = packagePath('bin', 'conclave.js');
  if (!existsSync(packagePath('dist', 'cli', 'entry.js'))) {
    console.log('\nWhole process: skipped, the CLI is not built (run `npm run build` first).');
    return;
  }
  const probe = join(dir, 'cpu.mjs');
  writeFileSync(probe, "import { writeSync } from 'node:fs';\nprocess.on('exit', () => { const u = process.cpuUsage(); writeSync(3, `${u.user + u.system}\\n`); });\n");
  const cpuMs = (args: string[]): number => {
    const r = spawnSync(process.execPath, ['--import', probe, ...args], { cwd: packagePath(), env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'ignore', 'pipe', 'pipe'], encoding: 'utf8' });
    const text = (r.output[3] as string | null) ?? '';
    if (r.status !== 0 || text.trim() === '') throw new Error(`\`${args.join(' ')}\` exited ${r.status}: ${String(r.stderr).slice(0, 400)}`);
    return Number(text.trim()) / 1000;
  };
  const ids = Array.from({ length: 5 }, (_, i) => `agent${i}`);
  const sim = await startSimChild(5);
  try {
    const sizes = [0, 4, 12].map((maxRounds) => {
      const presetFile = join(dir, `whole-${maxRounds}.json`);
      writeFileSync(presetFile, JSON.stringify({ name: 'test-panel', agents: ids.map((id, i) => ({ id, model: `model-${i}:1b`, persona: `You are agent ${id}.` })), judge: { model: 'judge:1b' }, synthesizer: { model: 'synth:1b' }, protocol: { maxRounds, convergenceThreshold: 0.99, callTimeoutSeconds: 60 } }));
      const db = join(dir, `whole-${maxRounds}.db`);
      const run = (): number => cpuMs([cli, 'run', 'Should we do A?', '--preset', presetFile, '--host', sim.url, '--db', db, '--num-parallel', '4', '--quiet']);
      run(); // warms the file cache, and records the requests the bare client sends
      const record = openStore(db, { readonly: true });
      const requests = record.getDebate(record.listDebates()[0]!.id).calls.map((c) => ({ model: c.model, messages: c.messages, options: c.options, format: c.format }));
      record.close();
      const requestsFile = join(dir, `whole-${maxRounds}.json.requests`);
      writeFileSync(requestsFile, JSON.stringify(requests));
      const bare = (): number => cpuMs([packagePath('bench', 'bare-client.mjs'), sim.url, requestsFile]);
      bare();
      return { calls: requests.length, run, bare, engineMs: [] as number[], bareMs: [] as number[] };
    });
    for (let i = 0; i < PROCESS_RUNS; i++) {
      for (const s of sizes) {
        s.engineMs.push(s.run());
        s.bareMs.push(s.bare());
      }
    }
    type Size = (typeof sizes)[0];
    const [small, middle, large] = sizes as [Size, Size, Size];
    console.log(`\nWhole process, CPU of \`conclave run\` (built CLI) against the bare client in its own process, same requests, ${PROCESS_RUNS} runs of each size (medians)`);
    for (const s of sizes) console.log(`  ${s.calls}-call debate: conclave run ${median(s.engineMs).toFixed(0)} ms, bare client ${median(s.bareMs).toFixed(0)} ms`);
    const perCall = (to: Size) => {
      const extra = to.calls - small.calls;
      const engine = to.engineMs.map((ms, i) => (ms - small.engineMs[i]!) / extra);
      const bare = to.bareMs.map((ms, i) => (ms - small.bareMs[i]!) / extra);
      return { label: `${to.calls} − ${small.calls}`, engine, bare, ratios: engine.map((e, i) => e / bare[i]!) };
    };
    for (const [d, judged] of [[perCall(middle), true], [perCall(large), false]] as const) {
      const ratio = median(d.ratios);
      const target = judged ? `target ≤ ${TARGET.processRatio}×: ${verdict(ratio <= TARGET.processRatio)}` : 'a cross-check, with more calls between the sizes';
      console.log(`  per call (${d.label}, start-up cancelled): conclave run ${median(d.engine).toFixed(2)} ms, bare client ${median(d.bare).toFixed(2)} ms`);
      console.log(`    conclave run ÷ bare client  ${ratio.toFixed(2)}×  (median of ${PROCESS_RUNS} paired runs, 25th–75th percentile ${quantile(d.ratios, 0.25).toFixed(2)}–${quantile(d.ratios, 0.75).toFixed(2)}; ${target})`);
    }
  } finally {
    sim.stop();
  }
}

/** A file system in RAM to record into for comparison, when this machine has one. */
const RAM_FS = '/dev/shm';

function ramDir(): string | null {
  try {
    return mkdtempSync(join(RAM_FS, 'conclave-bench-'));
  } catch {
    return null;
  }
}

const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-'));
try {
  const sim5 = await startSimChild(5);
  await debateOnce(sim5.url, 5, 4, join(dir, 'warm.db'));
  const recorded = openStore(join(dir, 'warm.db'));
  const requests = recorded.getDebate(recorded.listDebates()[0]!.id).calls;
  recorded.close();
  for (let i = 0; i < WARM_UP; i++) {
    await debateOnce(sim5.url, 5, 4, join(dir, `warm${i}.db`));
    await bareOnce(sim5.url, requests, 4);
  }
  // Interleaved, so both see the same machine load.
  const runs: Awaited<ReturnType<typeof debateOnce>>[] = [];
  const bare: Awaited<ReturnType<typeof bareOnce>>[] = [];
  const unrecorded: Awaited<ReturnType<typeof unrecordedOnce>>[] = [];
  for (let i = 0; i < PAIRS; i++) {
    runs.push(await debateOnce(sim5.url, 5, 4, join(dir, `run${i}.db`)));
    bare.push(await bareOnce(sim5.url, requests, 4));
    unrecorded.push(await unrecordedOnce(sim5.url, 5, 4));
  }
  const writes = await captureDebateWrites(sim5.url, panelPreset(5, 4), join(dir, 'capture.db'));
  sim5.stop();
  const calls = runs[0]!.calls;
  const engineCpu = median(runs.map((r) => r.cpuMs / r.calls));
  const bareCpu = median(bare.map((r) => r.cpuMs / r.calls));
  console.log(`Engine overhead, 5 agents × (round 0 + 4 critique rounds), zero-latency simulator in a child process, ${PAIRS} runs each after ${WARM_UP + 1} to warm up`);
  console.log(`  calls per debate              ${calls}`);
  console.log(`  wall time per debate (median) ${median(runs.map((r) => r.wall)).toFixed(1)} ms   (min ${Math.min(...runs.map((r) => r.wall)).toFixed(1)}, max ${Math.max(...runs.map((r) => r.wall)).toFixed(1)})`);
  console.log(`  engine CPU per call (median)  ${engineCpu.toFixed(2)} ms`);
  console.log(`  bare ollama client, same requests and replies: CPU per call (median) ${bareCpu.toFixed(2)} ms`);
  // Each engine run is paired with the bare run right after it, so the ratio of a pair shares the machine's load.
  const ratios = runs.map((r, i) => r.cpuMs / r.calls / (bare[i]!.cpuMs / bare[i]!.calls));
  const ratio = median(ratios);
  console.log(`  engine ÷ bare client          ${ratio.toFixed(2)}×  (median of ${PAIRS} paired runs, 25th–75th percentile ${quantile(ratios, 0.25).toFixed(2)}–${quantile(ratios, 0.75).toFixed(2)}; target ≤ ${TARGET.ratio}×: ${verdict(ratio <= TARGET.ratio)})`);
  console.log(`  wall time per call (median)   ${median(runs.map((r) => r.wall / r.calls)).toFixed(2)} ms`);
  const unrecordedRatio = median(unrecorded.map((u, i) => u.cpuMs / u.calls / (bare[i]!.cpuMs / bare[i]!.calls)));
  const recordingMs = median(runs.map((r, i) => r.cpuMs / r.calls - unrecorded[i]!.cpuMs / unrecorded[i]!.calls));
  console.log(`  the engine recording nothing ÷ bare client ${unrecordedRatio.toFixed(2)}×  (median of ${PAIRS} runs, each beside the same pair); recording adds ${recordingMs.toFixed(2)} ms per call`);
  const insideUs = median(runs.map((r) => (r.recordingMs / r.calls) * 1000));
  console.log(`  time inside the recorder       ${insideUs.toFixed(0)} µs per call  (median of the same ${PAIRS} runs, timed around each write)`);

  const sim10 = await startSimChild(10);
  const rss0 = process.memoryUsage().rss;
  let peak = rss0;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  const big = await debateOnce(sim10.url, 10, 4, join(dir, 'ten.db'));
  clearInterval(sampler);
  sim10.stop();
  console.log(`\n10 agents × 5 rounds: ${big.calls} calls, ${big.wall.toFixed(0)} ms, peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB (before: ${(rss0 / 2 ** 20).toFixed(0)} MiB)`);

  await wholeProcess(dir);

  const lone = recordLoneCalls(join(dir, 'bulk.db'), 10_000, gc);
  console.log(`\nSQLite: recording 10,000 calls (each its own transaction with its checkpoint seal, ~4.5 KB, chained), in ${lone.slices} slices alternating with the floor`);
  console.log(`  per call ${lone.wallUs.toFixed(0)} µs wall, ${lone.cpuUs.toFixed(0)} µs CPU  (median of the slices; target < ${TARGET.recordUs} µs of CPU: ${verdict(lone.cpuUs < TARGET.recordUs)})`);
  console.log(`  floor: the same insert and a seal update per transaction with better-sqlite3 alone: ${lone.floorWallUs.toFixed(0)} µs wall, ${lone.floorCpuUs.toFixed(0)} µs CPU`);
  console.log(`  recording ÷ floor             ${lone.overFloor.toFixed(2)}×  (median of ${lone.slices} paired slices: what the store adds to SQLite's own work, drift cancelled)`);
  // The same on a file system in RAM, where no disk and no journal of the file system is paid: what is left is Conclave's and SQLite's own.
  const ram = ramDir();
  if (ram) {
    try {
      const inRam = recordLoneCalls(join(ram, 'bulk.db'), 10_000, gc);
      console.log(`  the same in RAM (${RAM_FS}, tmpfs): ${inRam.cpuUs.toFixed(0)} µs CPU per call, floor ${inRam.floorCpuUs.toFixed(0)} µs, recording ÷ floor ${inRam.overFloor.toFixed(2)}×`);
    } finally {
      rmSync(ram, { recursive: true, force: true });
    }
  }
  // Every kind of write a debate makes, not only lone calls: the first copies warm the store and are left out.
  const replayed = replayDebateWrites(writes, join(dir, 'replay.db'), 25, gc).slice(5);
  console.log(`SQLite: recording a whole ${writes.calls}-call debate (its calls with their ratings, turns, judge scores, steps, synthesis, start and end), replayed 20 times`);
  const cpuUs = replayed.map((r) => r.cpuUs);
  const aloneUs = median(replayed.map((r) => r.insideUs));
  console.log(`  per call of the debate ${median(cpuUs).toFixed(0)} µs CPU (median; min ${Math.min(...cpuUs).toFixed(0)}, max ${Math.max(...cpuUs).toFixed(0)}), of which ${aloneUs.toFixed(0)} µs inside the writes (the rest: V8's threads collecting and compiling)`);
  // The same writes cost more inside a debate, where the engine's work between them leaves the CPU's caches cold for SQLite and the store.
  console.log(`  time inside the recorder, in the engine's debates ÷ replayed alone ${(insideUs / aloneUs).toFixed(2)}×  (${insideUs.toFixed(0)} ÷ ${aloneUs.toFixed(0)} µs per call)`);
  const store = openStore(join(dir, 'list.db'));
  const agents = [{ id: 'a', model: 'm', persona: null, cluster: null, role: 'debater' as const, digest: null }];
  const preset = testPreset(['a', 'b']);
  for (let i = 0; i <= 10_000; i++) {
    store.createDebate({ id: `d${i}`, question: `question ${i}`, preset, engineVersion: 'bench', host: 'h', agents, createdAt: i });
  }
  const listTimes: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    store.listDebates({ limit: 50 });
    listTimes.push(performance.now() - t);
  }
  const fullTimes: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    store.listDebates({ limit: 100_000 });
    fullTimes.push(performance.now() - t);
  }
  console.log(`list over 10,001 debates: first page of 50 ${median(listTimes).toFixed(1)} ms, all rows ${median(fullTimes).toFixed(0)} ms (medians)`);
  store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
