import { afterEach, describe, expect, it } from 'vitest';
import { CallError } from '../../src/backend/types.js';
import { Gateway } from '../../src/ollama/gateway.js';
import { type SimHandle, type SimOptions, startSimulator } from '../../src/sim/index.js';

let sim: SimHandle | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function gateway(respond: SimOptions['respond'], extra: Partial<SimOptions> = {}): Promise<Gateway> {
  sim = await startSimulator({ models: [{ name: 'llama3.2' }], respond, ...extra });
  return new Gateway(sim.url);
}

const ask = { model: 'llama3.2', messages: [{ role: 'user' as const, content: 'Say something.' }] };

async function failure(promise: Promise<unknown>): Promise<CallError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(CallError);
    return err as CallError;
  }
  throw new Error('expected the call to fail');
}

describe('the gateway over its own fetch', () => {
  it('streams a reply with every token reported, and Ollama counters from the last chunk', async () => {
    const gw = await gateway(() => 'one two three');
    const deltas: string[] = [];
    const r = await gw.chat(ask, { onProgress: (p) => deltas.push(p.delta) });
    expect(r.content).toBe('one two three');
    expect(deltas.join('')).toBe('one two three');
    expect(r.metrics.completionTokens).toBe(3);
    expect(r.metrics.doneReason).toBe('stop');
  });

  it('reads the facts endpoints: tags, ps, show and version', async () => {
    const gw = await gateway(() => 'x');
    expect((await gw.tags()).map((t) => t.name)).toEqual(['llama3.2:latest']);
    expect(await gw.ps()).toEqual([]);
    expect((await gw.show('llama3.2')).contextLength).toBe(8192);
    expect(await gw.version()).toMatch(/^\d+\.\d+/);
  });

  it('names each failure: missing model, server error, error mid-stream, a stream cut short, no server', async () => {
    const gw = await gateway((req) =>
      req.messages.at(-1)?.content === 'crash'
        ? { content: 'one two three', error: 'runner crashed', failAfterTokens: 1 }
        : req.messages.at(-1)?.content === 'stop'
          ? { content: 'again again', silentStop: true }
          : { error: 'model runner has unexpectedly stopped', status: 500 },
    );
    expect((await failure(gw.chat({ ...ask, model: 'nope' }))).code).toBe('MODEL_MISSING');
    expect(await failure(gw.chat(ask))).toMatchObject({ code: 'SERVER_ERROR', status: 500 });
    const crash = await failure(gw.chat({ ...ask, messages: [{ role: 'user', content: 'crash' }] }));
    expect([crash.code, crash.message]).toEqual(['STREAM_ERROR', 'llama3.2 failed mid-reply: runner crashed']);
    expect((await failure(gw.chat({ ...ask, messages: [{ role: 'user', content: 'stop' }] }))).code).toBe('STREAM_INCOMPLETE');
    const url = sim!.url;
    await sim!.close();
    sim = undefined;
    expect((await failure(new Gateway(url).chat(ask))).code).toBe('HOST_UNREACHABLE');
  });

  it('stops a call mid-stream on the caller\'s signal, and one past its time limit', async () => {
    const gw = await gateway(() => 'a b c d e f g h i j k l m n o p', { tokenMs: 40 });
    const stop = new AbortController();
    const stopped = failure(gw.chat(ask, { signal: stop.signal, onProgress: (p) => p.tokens === 2 && stop.abort() }));
    expect((await stopped).code).toBe('CALL_ABORTED');
    expect((await failure(gw.chat(ask, { timeoutMs: 100 }))).code).toBe('CALL_TIMEOUT');
    // The connection pool is still usable afterwards.
    expect((await gw.chat(ask, { timeoutMs: 5000 })).content).toBe('a b c d e f g h i j k l m n o p');
  });
});
