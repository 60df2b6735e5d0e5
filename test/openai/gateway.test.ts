import { afterEach, describe, expect, it } from 'vitest';
import { CallError } from '../../src/backend/types.js';
import { OpenAIGateway } from '../../src/openai/gateway.js';
import { type SimHandle, type SimOptions, startSimulator } from '../../src/sim/index.js';

let sim: SimHandle | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function gateway(respond: SimOptions['respond'], extra: Partial<SimOptions> = {}): Promise<OpenAIGateway> {
  sim = await startSimulator({ models: [{ name: 'llama3.2' }], respond, api: 'openai', ...extra });
  return new OpenAIGateway(`${sim.url}/v1`, extra.apiKey ? { apiKey: extra.apiKey, apiKeyEnv: 'SIM_KEY' } : {});
}

const ask = { model: 'llama3.2:latest', messages: [{ role: 'user' as const, content: 'Say something.' }] };

async function failure(promise: Promise<unknown>): Promise<CallError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(CallError);
    return err as CallError;
  }
  throw new Error('expected the call to fail');
}

describe('the OpenAI-compatible gateway, streamed from undici callbacks', () => {
  it('streams a reply with every token reported and the usage counted, on a connection it reuses', async () => {
    const gw = await gateway(() => 'one two three');
    const deltas: string[] = [];
    const r = await gw.chat(ask, { onProgress: (p) => deltas.push(p.delta) });
    expect(r.content).toBe('one two three');
    expect(deltas.join('')).toBe('one two three');
    expect(r.metrics.completionTokens).toBe(3);
    expect(r.metrics.doneReason).toBe('stop');
    for (let i = 0; i < 4; i++) expect((await gw.chat(ask)).content).toBe('one two three');
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
    expect(crash.code).toBe('STREAM_ERROR');
    expect(crash.message).toContain('runner crashed');
    expect((await failure(gw.chat({ ...ask, messages: [{ role: 'user', content: 'stop' }] }))).code).toBe('STREAM_INCOMPLETE');
    const url = sim!.url;
    await sim!.close();
    sim = undefined;
    expect((await failure(new OpenAIGateway(`${url}/v1`).chat(ask))).code).toBe('HOST_UNREACHABLE');
  });

  it('says the key was refused, naming its variable and never the key', async () => {
    await gateway(() => 'x', { apiKey: 'right-key' });
    const wrong = new OpenAIGateway(`${sim!.url}/v1`, { apiKey: 'wrong-key', apiKeyEnv: 'SIM_KEY' });
    const refused = await failure(wrong.chat(ask));
    expect(refused.code).toBe('KEY_REFUSED');
    expect(refused.hint).toContain('SIM_KEY');
    expect(`${refused.message} ${refused.hint}`).not.toContain('wrong-key');
  });

  it('stops a call mid-stream on the caller\'s signal, and one past its time limit, and goes on afterwards', async () => {
    const gw = await gateway(() => 'a b c d e f g h i j k l m n o p', { tokenMs: 40 });
    const stop = new AbortController();
    const stopped = failure(gw.chat(ask, { signal: stop.signal, onProgress: (p) => p.tokens === 2 && stop.abort() }));
    const partial = await stopped;
    expect(partial.code).toBe('CALL_ABORTED');
    expect(partial.partial).toBe('a b');
    expect((await failure(gw.chat(ask, { timeoutMs: 100 }))).code).toBe('CALL_TIMEOUT');
    expect((await gw.chat(ask, { timeoutMs: 5000 })).content).toBe('a b c d e f g h i j k l m n o p');
  });
});
