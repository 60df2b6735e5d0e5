import { Ollama } from 'ollama';
import { afterEach, describe, expect, it } from 'vitest';
import { type SimHandle, type SimOptions, startSimulator } from '../../src/sim/index.js';

let sim: SimHandle | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function start(options: SimOptions): Promise<{ sim: SimHandle; client: Ollama }> {
  sim = await startSimulator(options);
  return { sim, client: new Ollama({ host: sim.url }) };
}

const ask = [{ role: 'user', content: 'Argue your side.' }];
const GB = 1e9;
// Default num_ctx 4096 × 1 slot × 2048 bytes of KV cache per token.
const KV = 4096 * 2048;

/** Streams one chat and records when its first and last chunks arrive, in a shared event log. */
async function streamed(client: Ollama, model: string, label: string, log: string[], options: Record<string, unknown> = {}) {
  const stream = await client.chat({ model, messages: ask, stream: true, options });
  let first = true;
  let last: { load_duration?: number } = {};
  for await (const chunk of stream) {
    if (first) log.push(`${label} start`);
    first = false;
    last = chunk;
  }
  log.push(`${label} end`);
  return last;
}

describe('simulated scheduler', () => {
  it('serializes two requests to one model when numParallel is 1', async () => {
    const { sim, client } = await start({ models: [{ name: 'a' }], tokenMs: 10, respond: () => 'one two three four five' });
    const log: string[] = [];
    await Promise.all([streamed(client, 'a', 'x', log), streamed(client, 'a', 'y', log)]);
    expect(log).toEqual(['x start', 'x end', 'y start', 'y end']);
    expect(sim.counters().perModel.a).toMatchObject({ requests: 2, loads: 1, inFlight: 0, peakInFlight: 1 });
  });

  it('runs two requests to one model side by side when numParallel is 2', async () => {
    const { sim, client } = await start({
      models: [{ name: 'a' }],
      numParallel: 2,
      tokenMs: 10,
      respond: () => 'one two three four five',
    });
    const log: string[] = [];
    await Promise.all([streamed(client, 'a', 'x', log), streamed(client, 'a', 'y', log)]);
    expect(log.slice(0, 2).sort()).toEqual(['x start', 'y start']);
    expect(sim.counters().perModel.a!.peakInFlight).toBe(2);
  });

  it('evicts the least recently used idle model when VRAM holds two of three', async () => {
    const { sim, client } = await start({
      models: ['a', 'b', 'c'].map((name) => ({ name, sizeBytes: GB })),
      vramBytes: 2 * (GB + KV) + 1000,
    });
    for (const model of ['a', 'b', 'c', 'a', 'b', 'b']) await client.chat({ model, messages: ask });
    const counters = sim.counters();
    expect(counters).toMatchObject({ requests: 6, loads: 5, reloads: 0, evictions: 3 });
    expect(counters.perModel.a).toMatchObject({ loads: 2, evictions: 1 });
    expect(counters.perModel.b).toMatchObject({ loads: 2, evictions: 1 });
    expect(counters.perModel.c).toMatchObject({ loads: 1, evictions: 1 });
    expect(sim.loaded()).toEqual(['a', 'b']);
  });

  it('caps loaded models at maxLoadedModels even when VRAM is unlimited', async () => {
    const { sim, client } = await start({ models: [{ name: 'a' }, { name: 'b' }], maxLoadedModels: 1 });
    await client.chat({ model: 'a', messages: ask });
    await client.chat({ model: 'b', messages: ask });
    expect(sim.counters()).toMatchObject({ loads: 2, evictions: 1 });
    expect(sim.loaded()).toEqual(['b']);
  });

  it('waits for a busy model to finish instead of evicting it, and loads one model at a time', async () => {
    const { sim, client } = await start({
      models: [{ name: 'a', sizeBytes: GB }, { name: 'b', sizeBytes: GB }],
      vramBytes: 1.5 * GB,
      loadMs: 20,
      tokenMs: 10,
      respond: () => 'one two three four five six',
    });
    const log: string[] = [];
    const first = streamed(client, 'a', 'a', log);
    await new Promise((resolve) => setTimeout(resolve, 40));
    const second = await streamed(client, 'b', 'b', log);
    await first;
    expect(log).toEqual(['a start', 'a end', 'b start', 'b end']);
    expect(second.load_duration).toBeGreaterThan(0);
    expect(sim.counters()).toMatchObject({ loads: 2, evictions: 1 });
  });

  it('reloads a loaded model when num_ctx changes, after its running request ends', async () => {
    const { sim, client } = await start({ models: [{ name: 'a' }], tokenMs: 10, respond: () => 'one two three four' });
    const log: string[] = [];
    await streamed(client, 'a', 'warm', log, { num_ctx: 2048 });
    const running = streamed(client, 'a', 'old', log, { num_ctx: 2048 });
    await new Promise((resolve) => setTimeout(resolve, 15));
    const reloaded = await streamed(client, 'a', 'new', log, { num_ctx: 8192 });
    await running;
    expect(log.slice(2)).toEqual(['old start', 'old end', 'new start', 'new end']);
    expect(reloaded.load_duration).toBeGreaterThan(0);
    expect(sim.counters().perModel.a).toMatchObject({ loads: 2, reloads: 1, evictions: 0 });

    const again = await client.chat({ model: 'a', messages: ask, options: { num_ctx: 8192 } });
    expect(again).not.toHaveProperty('load_duration');
    expect(sim.counters().perModel.a!.reloads).toBe(1);
    const ps = await client.ps();
    expect(ps.models[0]).toMatchObject({ name: 'a:latest', context_length: 8192 });
  });

  it('reloads when a request leaves num_ctx out after one that set it', async () => {
    const { sim, client } = await start({ models: [{ name: 'a' }] });
    await client.chat({ model: 'a', messages: ask, options: { num_ctx: 8192 } });
    await client.chat({ model: 'a', messages: ask });
    expect(sim.counters().reloads).toBe(1);
  });

  it('answers 503 server busy once the load queue is full', async () => {
    const { client } = await start({
      models: ['a', 'b', 'c'].map((name) => ({ name })),
      maxLoadedModels: 1,
      maxQueue: 1,
      loadMs: 300,
    });
    const pause = () => new Promise((resolve) => setTimeout(resolve, 40));
    const loading = client.chat({ model: 'a', messages: ask });
    await pause();
    const queued = client.chat({ model: 'b', messages: ask });
    await pause();
    const rejected = await client.chat({ model: 'c', messages: ask }).catch((error: Error & { status_code?: number }) => error);
    expect(rejected).toMatchObject({
      name: 'ResponseError',
      status_code: 503,
      message: 'server busy, please try again.  maximum pending requests exceeded',
    });
    await Promise.all([loading, queued]);
  });

  it('keeps a model larger than VRAM loaded alone, partly on the CPU', async () => {
    const { client } = await start({ models: [{ name: 'big', sizeBytes: 20 * GB }], vramBytes: 8 * GB });
    await client.chat({ model: 'big', messages: [] });
    const [row] = (await client.ps()).models;
    expect(row!.size).toBe(20 * GB + KV);
    expect(row!.size_vram).toBe(8 * GB);
  });

  it('applies keep_alive per model with the last request winning', async () => {
    const { sim, client } = await start({ models: [{ name: 'a' }, { name: 'b' }] });
    await client.chat({ model: 'a', messages: ask, keep_alive: -1 });
    await client.chat({ model: 'b', messages: ask, keep_alive: '10m' });
    const ps = await client.ps();
    expect(ps.models.map((m) => m.name)).toEqual(['a:latest', 'b:latest']);
    expect(new Date(ps.models[0]!.expires_at).getUTCFullYear()).toBeGreaterThan(2200);
    const inTen = new Date(ps.models[1]!.expires_at).getTime() - Date.now();
    expect(inTen).toBeGreaterThan(9 * 60_000);
    expect(inTen).toBeLessThanOrEqual(10 * 60_000);

    await client.chat({ model: 'a', messages: ask, keep_alive: 0 });
    expect(sim.loaded()).toEqual(['b']);
  });

  it('rejects keep_alive strings without a unit as Go does', async () => {
    const { client } = await start({ models: [{ name: 'a' }] });
    const error = await client.chat({ model: 'a', messages: ask, keep_alive: '10' }).catch((e: Error) => e);
    expect(error).toMatchObject({ status_code: 400, message: 'time: missing unit in duration "10"' });
  });

  it('counts nothing from before resetCounters', async () => {
    const { sim, client } = await start({ models: [{ name: 'a' }] });
    await client.chat({ model: 'a', messages: ask });
    sim.resetCounters();
    await client.chat({ model: 'a', messages: ask });
    expect(sim.counters()).toMatchObject({ requests: 1, loads: 0 });
    expect(sim.counters().perModel.a).toMatchObject({ requests: 1, peakInFlight: 1 });
  });
});
