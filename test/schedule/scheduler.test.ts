import { afterEach, describe, expect, it } from 'vitest';
import { presetSchema } from '../../src/config/preset-schema.js';
import type { DebateEvent } from '../../src/engine/events.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { HostError, InputError } from '../../src/errors.js';
import { gatherHostFacts } from '../../src/schedule/facts.js';
import { packGroups, planSchedule, vramNeed } from '../../src/schedule/plan.js';
import { SlotPool, runGrouped } from '../../src/schedule/pool.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { scriptedResponder } from '../helpers/panel.js';

const GB = 1e9;
let sims: SimHandle[] = [];
afterEach(async () => {
  await Promise.all(sims.map((s) => s.close()));
  sims = [];
});

function panel(models: string[], hosts: { url: string; vramGiB?: number; numParallel?: number; maxLoadedModels?: number }[], maxRounds = 1) {
  return presetSchema.parse({
    name: 'sched',
    agents: models.map((model, i) => ({ id: `a${i}`, model, persona: `You are agent a${i}.` })),
    judge: { model: 'judge:1b' },
    synthesizer: { model: 'synth:1b' },
    protocol: { maxRounds, convergenceThreshold: 0.99 },
    hosts,
  });
}

const support = [
  { name: 'judge:1b', sizeBytes: 1 * GB },
  { name: 'synth:1b', sizeBytes: 1 * GB },
];

describe('SlotPool', () => {
  it('never runs more calls of a model than its slots, and queues the rest in order', async () => {
    const pool = new SlotPool([{ url: 'h1', numParallel: 2, models: ['m'] }]);
    const order: number[] = [];
    let inFlight = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        pool.run('m', async () => {
          inFlight += 1;
          peak = Math.max(peak, inFlight);
          order.push(i);
          await new Promise((r) => setTimeout(r, 5));
          inFlight -= 1;
        }),
      ),
    );
    expect(peak).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    expect(pool.peakInFlight('m')).toBe(2);
  });

  it('sends a call to the host with the most free slots for its model', async () => {
    const pool = new SlotPool([
      { url: 'h1', numParallel: 1, models: ['m'] },
      { url: 'h2', numParallel: 3, models: ['m'] },
    ]);
    const hosts: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const runs = Array.from({ length: 4 }, () => pool.run('m', async (host) => (hosts.push(host), gate)));
    await new Promise((r) => setTimeout(r, 1));
    expect(hosts.sort()).toEqual(['h1', 'h2', 'h2', 'h2']);
    release();
    await Promise.all(runs);
  });
});

describe('planning', () => {
  it('counts the KV cache for every parallel slot', () => {
    expect(vramNeed(4 * GB, 131_072, 8192, 2)).toBe(4 * GB + 8192 * 2 * 131_072);
  });

  it('packs models into groups that fit the VRAM and the loaded-model cap', () => {
    const need = (m: string): number => ({ a: 6, b: 5, c: 5, d: 2 })[m]! * GB;
    expect(packGroups(['a', 'b', 'c', 'd'], need, 12 * GB, 3)).toEqual([['a', 'b'], ['c', 'd']]);
    expect(packGroups(['a', 'b', 'c', 'd'], need, 100 * GB, 2)).toEqual([['a', 'b'], ['c', 'd']]);
    expect(packGroups(['a', 'b'], need, 100 * GB, 3)).toEqual([['a', 'b']]);
  });

  it('warns, naming models and sizes, when the panel cannot stay loaded together', () => {
    const hosts = [{ url: 'h', vramBytes: 16 * 2 ** 30, numParallel: 1, models: { x: { sizeBytes: 9.1 * GB, kvBytesPerToken: 1 }, y: { sizeBytes: 8.4 * GB, kvBytesPerToken: 1 } } }];
    const plan = planSchedule(hosts, ['x', 'y'], [], { x: 4096, y: 4096 });
    expect(plan.groups).toEqual([['x'], ['y']]);
    expect(plan.warnings.join('\n')).toMatch(/x \(9\.1 GB\) and y \(8\.4 GB\) cannot all stay loaded .* 16 GiB GPU/);
  });

  it('names only the models that load after the panel: no judge for a protocol without one', () => {
    const hosts = [{ url: 'h', vramBytes: 16 * 2 ** 30, numParallel: 1, models: { x: { sizeBytes: 6 * GB, kvBytesPerToken: 1 }, y: { sizeBytes: 6 * GB, kvBytesPerToken: 1 }, s: { sizeBytes: 6 * GB, kvBytesPerToken: 1 }, j: { sizeBytes: 1 * GB, kvBytesPerToken: 1 } } }];
    const parallel = planSchedule(hosts, ['x', 'y'], ['s'], { x: 4096, y: 4096, s: 4096 });
    expect(parallel.warnings).toContain('`s` does not fit next to the panel: it is loaded after the panel\'s calls, evicting a panel model.');
    expect(parallel.warnings.join('\n')).not.toContain('judge');
    const debate = planSchedule(hosts, ['x', 'y'], ['j', 's'], { x: 4096, y: 4096, s: 4096, j: 4096 });
    expect(debate.warnings).toContain('`j` and `s` do not fit next to the panel: they are loaded after the panel\'s calls, evicting a panel model.');
  });

  it('runs groups whose models are already loaded first', async () => {
    const started: string[] = [];
    const task = (model: string) => ({ model, run: async () => void started.push(model) });
    await runGrouped([task('a'), task('c'), task('b')], [['a', 'b'], ['c']], new Set(['c']));
    expect(started).toEqual(['c', 'a', 'b']);
  });
});

describe('the planned scheduler against the simulator', () => {
  it('loads each model once per round when the panel does not fit, never reloads, and respects slots', async () => {
    // Three 5 GB panel models, VRAM for two of them plus judge and synthesizer, two slots each.
    const sim = await startSimulator({
      models: [...['m1:5b', 'm2:5b', 'm3:5b'].map((name) => ({ name, sizeBytes: 5 * GB })), ...support],
      vramBytes: 12.8 * GB,
      numParallel: 2,
      maxLoadedModels: 4,
      loadMs: 20,
      tokenMs: 1,
      respond: scriptedResponder([0.1]).respond,
    });
    sims.push(sim);
    const preset = panel(['m1:5b', 'm1:5b', 'm2:5b', 'm2:5b', 'm3:5b', 'm3:5b'], [{ url: sim.url, vramGiB: 12.8 / 1.073741824, numParallel: 2, maxLoadedModels: 4 }], 2);
    const result = await runDebate({ question: 'Q?', preset, host: sim.url });
    expect(result.scheduler.plan.groups).toHaveLength(2);
    const c = sim.counters();
    expect(c.reloads).toBe(0);
    // Round 0 loads m1, m2, m3 and the judge; rounds 1 and 2 bring back one panel model each; then the synthesizer.
    expect(c.loads).toBe(7);
    for (const m of ['m1:5b', 'm2:5b', 'm3:5b']) expect(c.perModel[m]!.peakInFlight).toBeLessThanOrEqual(2);
  });

  it('lets an unbounded run exceed what the planned run loads on the same panel', async () => {
    const make = () =>
      startSimulator({
        models: [...['m1:5b', 'm2:5b', 'm3:5b'].map((name) => ({ name, sizeBytes: 5 * GB })), ...support],
        vramBytes: 12.8 * GB,
        numParallel: 2,
        maxLoadedModels: 4,
        loadMs: 20,
        tokenMs: 1,
        respond: scriptedResponder([0.1]).respond,
      });
    const planned = await make();
    const unbounded = await make();
    sims.push(planned, unbounded);
    const models = ['m1:5b', 'm1:5b', 'm2:5b', 'm2:5b', 'm3:5b', 'm3:5b'];
    const host = (url: string) => [{ url, vramGiB: 12.8 / 1.073741824, numParallel: 2, maxLoadedModels: 4 }];
    await runDebate({ question: 'Q?', preset: panel(models, host(planned.url), 2), host: planned.url });
    await runDebate({ question: 'Q?', preset: panel(models, host(unbounded.url), 2), host: unbounded.url, strategy: 'unbounded' });
    expect(unbounded.counters().loads).toBeGreaterThan(planned.counters().loads);
  });

  it('spreads one model over a pool of hosts and skips a host that does not answer, with a warning', async () => {
    const a = await startSimulator({ models: [{ name: 'm1:5b' }, ...support], numParallel: 2, tokenMs: 2, respond: scriptedResponder([0.1]).respond });
    const b = await startSimulator({ models: [{ name: 'm1:5b' }, ...support], numParallel: 2, tokenMs: 2, respond: scriptedResponder([0.1]).respond });
    sims.push(a, b);
    const preset = panel(Array.from({ length: 4 }, () => 'm1:5b'), [
      { url: a.url, numParallel: 2 },
      { url: b.url, numParallel: 2 },
      { url: 'http://127.0.0.1:9', numParallel: 2 },
    ]);
    const events: DebateEvent[] = [];
    await runDebate({ question: 'Q?', preset, host: a.url, listeners: [(e) => events.push(e)] });
    const started = events.find((e) => e.type === 'debate.started');
    expect(started?.type === 'debate.started' && started.warnings.join()).toContain('Host http://127.0.0.1:9 is skipped');
    expect(a.counters().perModel['m1:5b']!.requests).toBeGreaterThan(0);
    expect(b.counters().perModel['m1:5b']!.requests).toBeGreaterThan(0);
    expect(a.counters().perModel['m1:5b']!.peakInFlight).toBeLessThanOrEqual(2);
    expect(b.counters().perModel['m1:5b']!.peakInFlight).toBeLessThanOrEqual(2);
  });

  it('records the plan with the debate', async () => {
    const sim = await startSimulator({ models: [{ name: 'm1:5b' }, ...support], respond: scriptedResponder([0.9]).respond });
    sims.push(sim);
    const { openStore } = await import('../../src/store/open.js');
    const { recorder } = await import('../../src/engine/recorder.js');
    const store = openStore(':memory:');
    const result = await runDebate({ question: 'Q?', preset: panel(['m1:5b', 'm1:5b'], [{ url: sim.url, vramGiB: 24 }]), host: sim.url, recorder: recorder(store) });
    const plan = store.getDebate(result.id).plan as { models: { model: string; numCtx: number }[] };
    expect(plan.models.map((m) => m.model).sort()).toEqual(['judge:1b', 'm1:5b', 'synth:1b']);
    expect(plan.models.every((m) => m.numCtx >= 4096)).toBe(true);
    store.close();
  });
});

describe('host facts', () => {
  it('asks the server version for `hosts`, and a debate plans without asking it', async () => {
    const sim = await startSimulator({ models: [{ name: 'm1:5b' }], version: '0.42.1', respond: () => 'x' });
    try {
      const shown = await gatherHostFacts({ url: sim.url }, ['m1:5b']);
      expect(shown.ok).toBe(true);
      expect(shown.version).toBe('0.42.1');
      const planned = await gatherHostFacts({ url: sim.url }, ['m1:5b'], { version: false });
      expect(planned.ok).toBe(true);
      expect(planned.version).toBeNull();
      expect(Object.keys(planned.details)).toEqual(['m1:5b']);
    } finally {
      await sim.close();
    }
  });
});

describe('bad host configuration', () => {
  it('refuses a zero or negative vramGiB and numParallel before any call, naming the host', async () => {
    const sim = await startSimulator({ models: [{ name: 'm1:5b' }, ...support], respond: scriptedResponder([0.9]).respond });
    sims.push(sim);
    for (const bad of [{ vramGiB: 0 }, { numParallel: 0 }, { vramGiB: -4 }]) {
      const err = await runDebate({ question: 'Q?', preset: { ...panel(['m1:5b', 'm1:5b'], [{ url: sim.url }]), hosts: [{ url: sim.url, ...bad }] }, host: sim.url }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InputError);
      expect((err as Error).message).toContain(sim.url);
    }
    expect(sim.counters().requests).toBe(0);
  });

  it('refuses a model that cannot fit in the stated VRAM, naming it and the number', async () => {
    const sim = await startSimulator({ models: [{ name: 'big:70b', sizeBytes: 40 * GB }, ...support], respond: scriptedResponder([0.9]).respond });
    sims.push(sim);
    const err = await runDebate({ question: 'Q?', preset: panel(['big:70b', 'big:70b'], [{ url: sim.url, vramGiB: 24 }]), host: sim.url }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toMatch(/`big:70b` \(40\.0 GB\) does not fit in the 24 GiB/);
    expect(sim.counters().requests).toBe(0);
  });

  it('names every host when none answers', async () => {
    const err = await runDebate({
      question: 'Q?',
      preset: panel(['m', 'm'], [{ url: 'http://127.0.0.1:9' }, { url: 'http://127.0.0.1:7' }]),
      host: 'http://127.0.0.1:9',
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HostError);
    expect((err as Error).message).toContain('http://127.0.0.1:9, http://127.0.0.1:7');
  });
});
