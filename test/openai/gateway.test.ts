import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { isTransient } from '../../src/engine/call/retry.js';
import { OpenAIGateway } from '../../src/openai/gateway.js';
import { startSimulator } from '../../src/sim/index.js';
import { callFailure } from '../helpers/errors.js';
import { closesAfterEach } from '../helpers/lifecycle.js';

const track = closesAfterEach();

// Chat calls are tested for both gateways in test/backend/gateways.test.ts.
describe('the OpenAI-compatible gateway', () => {
  it('says the key was refused, naming its variable and never the key', async () => {
    const sim = track(await startSimulator({ models: [{ name: 'llama3.2' }], respond: () => 'x', api: 'openai', apiKey: 'right-key' }));
    const wrong = new OpenAIGateway(`${sim.url}/v1`, { apiKey: 'wrong-key', apiKeyEnv: 'SIM_KEY' });
    const refused = await callFailure(wrong.chat({ model: 'llama3.2:latest', messages: [{ role: 'user', content: 'Say something.' }] }));
    expect(refused.code).toBe('KEY_REFUSED');
    expect(refused.hint).toContain('SIM_KEY');
    expect(`${refused.message} ${refused.hint}`).not.toContain('wrong-key');
    const right = new OpenAIGateway(`${sim.url}/v1`, { apiKey: 'right-key' });
    expect((await right.chat({ model: 'llama3.2:latest', messages: [{ role: 'user', content: 'Say something.' }] })).content).toBe('x');
  });

  it('reads the whole reply of a server that ignores `stream`, and names an error it sends under HTTP 200 instead of calling the reply cut short', async () => {
    const sim = track(
      await startSimulator({
        models: [{ name: 'llama3.2' }],
        api: 'openai',
        respond: (req) => (req.messages.at(-1)?.content === 'fail' ? { error: 'the prompt is longer than the context', status: 200 } : { content: 'one two three', ignoresStream: true }),
      }),
    );
    const gateway = new OpenAIGateway(`${sim.url}/v1`);
    const deltas: string[] = [];
    const whole = await gateway.chat({ model: 'llama3.2:latest', messages: [{ role: 'user', content: 'Say something.' }] }, { onProgress: (p) => deltas.push(p.delta) });
    expect([whole.content, whole.metrics.doneReason, whole.metrics.completionTokens, deltas.join('')]).toEqual(['one two three', 'stop', 3, 'one two three']);
    const refused = await callFailure(gateway.chat({ model: 'llama3.2:latest', messages: [{ role: 'user', content: 'fail' }] }));
    expect([refused.code, refused.message]).toEqual(['BAD_REQUEST', `${sim.url}/v1 refused the request for llama3.2:latest with HTTP 400: the prompt is longer than the context`]);
  });

  it('names a 200 answer that is neither an event stream nor a completion, with what it said and where to look', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>Sign in</title>');
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const failed = await callFailure(new OpenAIGateway(url).chat({ model: 'm', messages: [{ role: 'user', content: 'Say something.' }] }));
      expect(failed.code).toBe('SERVER_ERROR');
      expect(failed.message).toBe(`${url} answered the chat request for m with HTTP 200 but sent no reply, neither an event stream nor a chat completion: Sign in`);
      expect(failed.hint).toContain('ending in /v1');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it("names a proxy's HTML pages by their words, with the status and what to fix: a 502 on a chat, a 404 or a web page on the model list", async () => {
    let models: [number, string] = [404, '<html><head><title>404 Not Found</title></head><body><h1>404 Not Found</h1><hr>nginx</body></html>'];
    const server = createServer((req, res) => {
      req.resume();
      const [status, page] = req.method === 'POST' ? [502, '<html><body><h1>502 Bad Gateway</h1></body></html>'] : models;
      res.writeHead(status, { 'content-type': 'text/html' });
      res.end(page);
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/llm/v1`;
      const gateway = new OpenAIGateway(url);
      const failed = await callFailure(gateway.chat({ model: 'm', messages: [{ role: 'user', content: 'Say something.' }] }));
      expect([failed.code, failed.message]).toEqual(['SERVER_ERROR', `${url} failed on m with HTTP 502: 502 Bad Gateway`]);
      expect(failed.hint).toContain('proxy');
      const missing = await callFailure(gateway.catalog());
      expect([missing.code, missing.message]).toEqual(['BAD_REQUEST', `${url} answered HTTP 404 to GET /models: it is not the base of an OpenAI-compatible API (404 Not Found 404 Not Found nginx).`]);
      expect(missing.hint).toContain('ending in /v1');
      models = [200, '<!doctype html><html><body><h1>Open WebUI</h1></body></html>'];
      const page = await callFailure(gateway.catalog());
      expect([page.code, page.message]).toEqual(['SERVER_ERROR', `${url} answered GET /models with HTTP 200 but not with JSON: Open WebUI`]);
      // A list whose entries carry no id (another API's shape): no model could be asked for by name.
      models = [200, JSON.stringify({ object: 'list', data: [{ name: 'qwen3:8b' }, { model: 'llama3.1:8b' }] })];
      const unnamed = await callFailure(gateway.catalog());
      expect([unnamed.code, unnamed.message]).toEqual(['BAD_REQUEST', `${url}/models listed 2 entries but none with an \`id\`, the name an OpenAI-compatible API gives each model, so no model can be asked for by name.`]);
      models = [200, JSON.stringify({ object: 'list', data: [] })];
      expect(await gateway.catalog()).toEqual([]);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('names the model and server of a stream whose event is not JSON, keeping what came before it', async () => {
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"choices":[{"delta":{"content":"one"}}]}\n\ndata: {"choices":[{"delta":\n\n');
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const failed = await callFailure(new OpenAIGateway(url).chat({ model: 'm', messages: [{ role: 'user', content: 'Say something.' }] }));
      expect([failed.code, failed.message, failed.partial]).toEqual(['STREAM_ERROR', `m on ${url} sent an event that is not JSON in the middle of its reply: {"choices":[{"delta":`, 'one']);
      expect(failed.hint).toContain('proxy');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it("reads a refusal sent as a stream's first event (vLLM's context overflow) as a refused request, not one to send again", async () => {
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify({ error: { object: 'error', message: "This model's maximum context length is 4096 tokens.", type: 'BadRequestError', code: 400 } })}\n\ndata: [DONE]\n\n`);
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const refused = await callFailure(new OpenAIGateway(url).chat({ model: 'm', messages: [{ role: 'user', content: 'Say something.' }] }));
      expect([refused.code, refused.message, isTransient(refused)]).toEqual(['BAD_REQUEST', `${url} refused the request for m with HTTP 400: This model's maximum context length is 4096 tokens.`, false]);
      expect(refused.hint).toContain('--max-model-len');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('says a llama-server still loading its model is busy loading it, and to wait for it, not to lower the concurrency', async () => {
    const sim = track(await startSimulator({ models: [{ name: 'llama3.2' }], api: 'openai', respond: () => ({ error: 'Loading model', status: 503 }) }));
    const busy = await callFailure(new OpenAIGateway(`${sim.url}/v1`).chat({ model: 'llama3.2:latest', messages: [{ role: 'user', content: 'Say something.' }] }));
    expect([busy.code, busy.message]).toEqual(['HOST_BUSY', `${sim.url}/v1 is busy loading its model, HTTP 503 to llama3.2:latest: Loading model`]);
    expect(busy.hint).toContain('Wait until the server has loaded its model');
  });

  it("reads a family the server reports as one line of inert text, as it is shown on the card's one-line PANEL entries", async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: [{ id: 'm1', family: 'fam\n\n# Heading\u001b[2J\u202eevil' }, { id: 'm2', arch: '  ' }] }));
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    try {
      const gateway = new OpenAIGateway(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`);
      const listed = await gateway.catalog();
      expect(listed.map((m) => m.family)).toEqual(['fam # Heading<U+202E>evil', null]);
    } finally {
      server.close();
    }
  });
});
