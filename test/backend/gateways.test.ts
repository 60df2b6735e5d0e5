import { describe, expect, it } from 'vitest';
import type { ModelServer } from '../../src/backend/types.js';
import { stoppedError } from '../../src/backend/call-control.js';
import { Gateway } from '../../src/ollama/gateway.js';
import { OpenAIGateway } from '../../src/openai/gateway.js';
import { type SimOptions, startSimulator } from '../../src/sim/index.js';
import { callFailure, FAILING_REPLIES } from '../helpers/errors.js';
import { closesAfterEach } from '../helpers/lifecycle.js';

const track = closesAfterEach();

/** Both gateways over the simulator, which speaks Ollama's API and the OpenAI-compatible one. */
const gateways: { api: string; model: string; connect: (url: string) => ModelServer; sim?: Partial<SimOptions> }[] = [
  { api: 'Ollama', model: 'llama3.2', connect: (url) => new Gateway(url) },
  { api: 'OpenAI-compatible', model: 'llama3.2:latest', connect: (url) => new OpenAIGateway(`${url}/v1`), sim: { api: 'openai' } },
];

describe.each(gateways)('the $api gateway, streamed from undici callbacks', ({ model, connect, sim: simOptions }) => {
  async function gateway(respond: SimOptions['respond'], extra: Partial<SimOptions> = {}): Promise<{ gw: ModelServer; url: string; close: () => Promise<void> }> {
    const sim = track(await startSimulator({ models: [{ name: 'llama3.2' }], respond, ...simOptions, ...extra }));
    return { gw: connect(sim.url), url: sim.url, close: () => sim.close() };
  }
  const ask = { model, messages: [{ role: 'user' as const, content: 'Say something.' }] };

  it('streams a reply with every token reported and counted, on connections it goes on using', async () => {
    const { gw } = await gateway(() => 'one two three');
    const deltas: string[] = [];
    const r = await gw.chat(ask, { onProgress: (p) => deltas.push(p.delta) });
    expect(r.content).toBe('one two three');
    expect(deltas.join('')).toBe('one two three');
    expect(r.metrics.completionTokens).toBe(3);
    expect(r.metrics.doneReason).toBe('stop');
    for (let i = 0; i < 4; i++) expect((await gw.chat(ask)).content).toBe('one two three');
  });

  it('names each failure: missing model, server error, error mid-stream, a stream cut short, no server', async () => {
    const { gw, url, close } = await gateway(FAILING_REPLIES);
    expect((await callFailure(gw.chat({ ...ask, model: 'nope' }))).code).toBe('MODEL_MISSING');
    expect(await callFailure(gw.chat(ask))).toMatchObject({ code: 'SERVER_ERROR', status: 500 });
    const crash = await callFailure(gw.chat({ ...ask, messages: [{ role: 'user', content: 'crash' }] }));
    expect([crash.code, crash.message]).toEqual(['STREAM_ERROR', `${model} failed mid-reply on ${connect(url).host}: runner crashed`]);
    expect((await callFailure(gw.chat({ ...ask, messages: [{ role: 'user', content: 'stop' }] }))).code).toBe('STREAM_INCOMPLETE');
    await close();
    expect((await callFailure(connect(url).chat(ask))).code).toBe('HOST_UNREACHABLE');
  });

  it('names a connection lost in the middle of a reply as a reply cut short, naming the host and model, not as a host it cannot reach', async () => {
    const { gw, url } = await gateway(() => ({ content: 'one two three four', dropAfterTokens: 2 }));
    const cut = await callFailure(gw.chat(ask));
    expect([cut.code, cut.partial]).toEqual(['STREAM_INCOMPLETE', 'one two']);
    expect(cut.message).toMatch(new RegExp(`^The connection to ${url.replace(/[.]/g, '\\.')}(/v1)? broke in the middle of ${model}'s reply`));
    expect(cut.hint).toContain("server's log");
  });

  it('cuts only a silence after the first token: a first token later than the stall limit is waited for, the same pause once the reply has begun cuts it', async () => {
    const { gw, url } = await gateway((req) => (req.messages.at(-1)?.content === 'load slowly' ? { content: 'one two', delayMs: 600 } : { content: 'one two three four', stallAfterTokens: 2 }));
    const limits = { timeoutMs: 30_000, stallMs: 200 };
    expect((await gw.chat({ ...ask, messages: [{ role: 'user', content: 'load slowly' }] }, limits)).content).toBe('one two');
    const cut = await callFailure(gw.chat(ask, limits));
    expect([cut.code, cut.partial]).toEqual(['STREAM_INCOMPLETE', 'one two']);
    expect(cut.message).toMatch(new RegExp(`^${url.replace(/[.]/g, '\\.')}(/v1)? stopped sending in the middle of ${model}'s reply: nothing came for 0\\.2 s \\(a host that lost power or its network`));
    expect(cut.hint).toContain('protocol.stallSeconds');
  });

  it('gives a timeout under ten seconds in tenths', () => {
    const timedOut = (timeoutMs: number) => stoppedError(new Error('aborted'), 'm', { timedOut: true, aborted: false, timeoutMs })!.message;
    expect([timedOut(100), timedOut(2_500), timedOut(9_960), timedOut(90_000)]).toEqual(['m did not finish within 0.1 s.', 'm did not finish within 2.5 s.', 'm did not finish within 10 s.', 'm did not finish within 90 s.']);
  });

  it('says a call timed out before its first token (a model still loading, a call waiting for a slot), naming the model and host, apart from one cut mid-reply', async () => {
    const { gw } = await gateway((req) => (req.messages.at(-1)?.content === 'slow' ? { delayMs: 5000 } : 'a b c d e f g h i j k l m n o p'), { tokenMs: 150 });
    const silent = await callFailure(gw.chat({ ...ask, messages: [{ role: 'user', content: 'slow' }] }, { timeoutMs: 1000 }));
    expect([silent.code, silent.message]).toEqual(['CALL_TIMEOUT', `${model} on ${gw.host} sent nothing within 1 s: the server was still loading the model, or the call waited behind others for a slot.`]);
    expect(silent.hint).toContain('callTimeoutSeconds');
    const slow = await callFailure(gw.chat(ask, { timeoutMs: 1000 }));
    expect([slow.code, slow.message]).toEqual(['CALL_TIMEOUT', `${model} on ${gw.host} did not finish within 1 s.`]);
  });

  it("stops a call mid-stream on the caller's signal, keeping what came, and one past its time limit, then goes on", async () => {
    const { gw } = await gateway(() => 'a b c d e f g h i j k l m n o p', { tokenMs: 40 });
    const stop = new AbortController();
    const stopped = await callFailure(gw.chat(ask, { signal: stop.signal, onProgress: (p) => p.tokens === 2 && stop.abort() }));
    expect([stopped.code, stopped.partial]).toEqual(['CALL_ABORTED', 'a b']);
    expect((await callFailure(gw.chat(ask, { timeoutMs: 100 }))).code).toBe('CALL_TIMEOUT');
    expect((await gw.chat(ask, { timeoutMs: 5000 })).content).toBe('a b c d e f g h i j k l m n o p');
  });
});
