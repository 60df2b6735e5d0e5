import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildReport } from '../../src/bench/report.js';
import { executeBench } from '../../src/bench/runner.js';
import { HostError, InputError, InterruptedError, StoreError } from '../../src/errors.js';
import { getBenchRun, loadBenchData, resolveBenchRunId } from '../../src/store/bench.js';
import { benchTrials } from '../../src/store/schema-bench.js';
import { openStore } from '../../src/store/open.js';
import { type BenchSetup, items, scripts, setupBench } from './fixture.js';

let bench: BenchSetup | null = null;

afterEach(async () => {
  await bench?.close();
  bench = null;
});

function trialRows(setup: BenchSetup, runId: string) {
  return setup.store.use('read trials', (db) => db.select().from(benchTrials).all()).filter((t) => t.runId === runId);
}

describe('bench resume', () => {
  it('keeps every finished item when interrupted mid-item, and a resume runs only what is left', async () => {
    const controller = new AbortController();
    const file = join(mkdtempSync(join(tmpdir(), 'conclave-bench-')), 'record.db');
    // Stop while item i3's debate is under way: i1 and i2 are finished by then.
    bench = await setupBench({ dbPath: file, onRequest: (req) => {
      if (req.messages.some((m) => m.content.includes(items[2]!.question))) controller.abort();
      return undefined;
    } });
    const runId = bench.create();
    await expect(bench.execute(runId, { signal: controller.signal })).rejects.toBeInstanceOf(InterruptedError);

    expect(getBenchRun(bench.store, runId).status).toBe('interrupted');
    const before = trialRows(bench, runId);
    expect(before.map((t) => [t.itemId, t.status])).toEqual([
      ['i1', 'done'],
      ['i2', 'done'],
      ['i3', 'interrupted'],
    ]);
    // The interrupted item still points at its (interrupted) debate.
    expect(bench.store.getDebate(before[2]!.debateId!).status).toBe('interrupted');
    const debatesBefore = bench.store.listDebates().length;

    // A fresh process: reopen the same file.
    bench.store.close();
    const store = openStore(file);
    bench.store = store;
    await executeBench({ store, runId });

    const after = trialRows(bench, runId);
    expect(after.filter((t) => t.status === 'done').map((t) => t.itemId).sort()).toEqual(['i1', 'i2', 'i3', 'i4']);
    // i1 and i2 were not run again: same rows, and only two new debates (i3 again, i4).
    expect(after.find((t) => t.itemId === 'i1' && t.status === 'done')!.id).toBe(before[0]!.id);
    expect(store.listDebates().length).toBe(debatesBefore + 2);
    expect(getBenchRun(store, runId).status).toBe('completed');
    const report = buildReport(loadBenchData(store, runId));
    expect(report.conditions.find((c) => c.condition === 'debate-vote')).toMatchObject({ n: 4, correct: 3 });
  });

  it('refuses to resume a run that has finished, and says where to look instead', async () => {
    bench = await setupBench();
    const runId = await bench.start({ limit: 1 });
    const err = await executeBench({ store: bench.store, runId }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).code).toBe('BENCH_FINISHED');
    expect((err as InputError).message).toContain('1 of 1 items done');
    expect((err as InputError).hint).toContain(`conclave bench report ${runId}`);
  });

  it('says so when asked to resume a run that does not exist', async () => {
    bench = await setupBench();
    const err = (() => {
      try {
        resolveBenchRunId(bench!.store, 'b000000-nope');
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe('BENCH_RUN_NOT_FOUND');
    expect((err as StoreError).message).toContain('b000000-nope');
  });

  it('uses only the first N items with a limit', async () => {
    bench = await setupBench();
    const runId = await bench.start({ limit: 2 });
    const data = loadBenchData(bench.store, runId);
    expect(data.items.map((i) => i.id)).toEqual(['i1', 'i2']);
    expect(data.trials).toHaveLength(2);
  });

  it('runs several items at once with --concurrency and still records each one whole', async () => {
    bench = await setupBench();
    const seenProgress: number[] = [];
    const runId = await bench.start({ concurrency: 3, onProgress: (p) => seenProgress.push(p.done) });
    expect(seenProgress).toEqual([1, 2, 3, 4]);
    const report = buildReport(loadBenchData(bench.store, runId));
    expect(report.conditions.filter((c) => c.available).map((c) => c.correct)).toEqual([3, 3, 1, 3, 3, 3, 2, 3, 2]);
  });

  it('shares one set of call slots between items run side by side, so no model gets more calls than --num-parallel', async () => {
    // The server would take 4 at once; the bench is told 1 slot per model, and must keep to it across items.
    bench = await setupBench({ serverSlots: 4, tokenMs: 2 });
    await bench.start({ concurrency: 3 });
    const perModel = Object.values(bench.sim.counters().perModel);
    expect(perModel.some((c) => c.requests > 0)).toBe(true);
    for (const counters of perModel) expect(counters.peakInFlight).toBeLessThanOrEqual(1);
  });
});

describe('answer calls', () => {
  it('reads an answer given in prose without a repair, and takes the answer a repair request brings', async () => {
    const custom = {
      ...scripts,
      i1: { ...scripts.i1!, singleRaw: { a: 'Adding them up, the result is 10.' }, single: { c: null }, singleRepair: { c: '10' } },
    };
    bench = await setupBench({ scripts: custom });
    const runId = await bench.start({ limit: 1 });
    const trial = loadBenchData(bench.store, runId).trials[0]!;
    const single = (agent: string) => trial.results.find((r) => r.condition === 'single' && r.variant === agent)!;
    expect(single('a')).toMatchObject({ answer: '10', correct: true, calls: 1 });
    expect(single('c')).toMatchObject({ answer: '10', correct: true, calls: 2 });
    const read = (agent: string) => trial.answers.find((a) => a.source === 'single' && a.slot === agent)!;
    expect(read('a').method).toBe('last-number');
    expect(read('c').method).toBe('json');
  });

  it('reads a debate opening whose answer is in its reasoning rather than its position', async () => {
    bench = await setupBench({ scripts: { ...scripts, i1: { ...scripts.i1!, answerInReasoning: ['c'] } } });
    const runId = await bench.start({ limit: 1 });
    const trial = loadBenchData(bench.store, runId).trials[0]!;
    expect(trial.answers.find((a) => a.source === 'debate' && a.round === 0 && a.slot === 'c')).toMatchObject({ status: 'ok', answer: '4', correct: false });
  });

  it('stops the bench instead of scoring wrong answers when the server loses a model, and the resume redoes the item', async () => {
    let broken = true;
    bench = await setupBench({
      onRequest: (req) => {
        const answerCall = 'answer' in ((req.format as { properties?: object } | null)?.properties ?? {});
        if (broken && answerCall && req.messages[1]!.content.includes(items[1]!.question)) return { status: 404, error: `model '${req.model}' not found` };
        return undefined;
      },
    });
    const runId = bench.create();
    const err = await bench.execute(runId).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HostError);
    expect((err as HostError).code).toBe('BENCH_HOST_LOST');
    expect((err as HostError).hint).toContain(`conclave bench --resume ${runId}`);
    const done = () => loadBenchData(bench!.store, runId).trials.map((t) => t.itemId);
    expect(done()).toEqual(['i1']);
    broken = false;
    await bench.execute(runId);
    expect(done()).toEqual(['i1', 'i2', 'i3', 'i4']);
  });

  it('names the bench run to resume, not the debate, when the server goes away during a debate', async () => {
    let gone = false;
    bench = await setupBench({
      onRequest: (req) => {
        // The host goes away as item i2's debate asks its first question.
        if (!gone && req.messages.some((m) => m.content.includes(items[1]!.question))) {
          gone = true;
          void bench!.sim.close();
          return { content: '{}', delayMs: 5000 };
        }
        return undefined;
      },
    });
    const runId = bench.create();
    const err = await bench.execute(runId).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HostError);
    const { message, hint, code } = err as HostError;
    expect(code).toBe('HOST_UNREACHABLE');
    expect(message).toContain(`Item \`i2\` of bench run ${runId} could not be completed: Debate `);
    expect(hint).toContain(`conclave bench --resume ${runId}`);
    expect(hint).not.toMatch(/conclave resume \d/);
    expect(getBenchRun(bench.store, runId).status).toBe('interrupted');
    expect(loadBenchData(bench.store, runId).trials.map((t) => t.itemId)).toEqual(['i1']);
  });
});
