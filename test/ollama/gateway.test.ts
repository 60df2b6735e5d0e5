import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { CallError } from '../../src/backend/types.js';
import { Gateway } from '../../src/ollama/gateway.js';
import { startSimulator } from '../../src/sim/index.js';
import { callFailure } from '../helpers/errors.js';
import { closesAfterEach } from '../helpers/lifecycle.js';

const track = closesAfterEach();

// Chat calls are tested for both gateways in test/backend/gateways.test.ts.
describe('the Ollama gateway', () => {
  it('reads the facts endpoints: tags, ps, show and version', async () => {
    const sim = track(await startSimulator({ models: [{ name: 'llama3.2' }], respond: () => 'x' }));
    const gw = new Gateway(sim.url);
    expect((await gw.tags()).map((t) => t.name)).toEqual(['llama3.2:latest']);
    expect(await gw.ps()).toEqual([]);
    expect((await gw.show('llama3.2')).contextLength).toBe(8192);
    expect(await gw.version()).toMatch(/^\d+\.\d+/);
  });
});

/** A server that answers every request with `status` and `body`, as a proxy in front of a host that is down does. */
async function answeringServer(status: number, contentType: string, body: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(status, { 'content-type': contentType });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const PROXY_PAGE = '<html><head><style>h1 { color: red }</style></head><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>';

describe('the Ollama gateway facing a limit on requests', () => {
  it('reads a 429 from a proxy or a hosted service as a busy host to ask again after its Retry-After, naming the host and what to lower', async () => {
    const sim = track(await startSimulator({ models: [{ name: 'llama3.2' }], respond: () => ({ error: 'rate limit exceeded', status: 429, retryAfter: 7 }) }));
    const busy = await callFailure(new Gateway(sim.url).chat({ model: 'llama3.2', messages: [{ role: 'user', content: 'Say something.' }] }));
    expect([busy.code, busy.status, busy.retryAfterMs, busy.message]).toEqual(['HOST_BUSY', 429, 7000, `${sim.url} is busy: rate limit exceeded`]);
    expect(busy.hint).toContain('--num-parallel');
  });
});

describe('the Ollama gateway facing a host that does not answer as Ollama', () => {
  it('names the host, the request and the HTTP status of an HTML error page, and prints nothing', async () => {
    const proxy = track(await answeringServer(502, 'text/html', PROXY_PAGE));
    const gw = new Gateway(proxy.url);
    const log = vi.spyOn(console, 'log');
    const write = vi.spyOn(process.stdout, 'write');
    try {
      const requests: [string, () => Promise<unknown>][] = [
        ['GET /api/version', () => gw.version()],
        ['GET /api/tags', () => gw.tags()],
        ['GET /api/ps', () => gw.ps()],
        ['POST /api/show for llama3.2', () => gw.show('llama3.2')],
      ];
      for (const [request, call] of requests) {
        const error = (await call().catch((e: unknown) => e)) as CallError;
        expect(error).toBeInstanceOf(CallError);
        expect(error.code).toBe('SERVER_ERROR');
        expect(error.status).toBe(502);
        // The page's text, not its markup.
        expect(error.message).toBe(`${proxy.url} answered HTTP 502 Bad Gateway to ${request}: 502 Bad Gateway nginx`);
        expect(error.hint).toContain('proxy');
      }
      expect(log).not.toHaveBeenCalled();
      expect(write).not.toHaveBeenCalled();
    } finally {
      log.mockRestore();
      write.mockRestore();
    }
  });

  it("names a proxy's HTML error page on a chat call by its words, with the status and where to look", async () => {
    const proxy = track(await answeringServer(502, 'text/html', PROXY_PAGE));
    const error = await callFailure(new Gateway(proxy.url).chat({ model: 'llama3.2', messages: [{ role: 'user', content: 'Say something.' }] }));
    expect([error.code, error.message]).toEqual(['SERVER_ERROR', `${proxy.url} failed on llama3.2: 502 Bad Gateway nginx`]);
    expect(error.hint).toContain('proxy');
  });

  it('says so when a 200 answer is not JSON, on one line', async () => {
    const portal = track(await answeringServer(200, 'text/plain', 'captive\nportal\u2028login'));
    const error = (await new Gateway(portal.url).tags().catch((e: unknown) => e)) as CallError;
    expect(error).toBeInstanceOf(CallError);
    expect(error.code).toBe('SERVER_ERROR');
    expect(error.message).toBe(`${portal.url} answered GET /api/tags with HTTP 200 but not with JSON: captive portal login`);
  });

  it('keeps the error Ollama puts in a JSON body, and a 404 on /api/tags still means another kind of server', async () => {
    const busy = track(await answeringServer(500, 'application/json', JSON.stringify({ error: 'llama runner process has terminated' })));
    const error = (await new Gateway(busy.url).show('llama3.2').catch((e: unknown) => e)) as CallError;
    expect(error.message).toBe(`${busy.url} answered HTTP 500 Internal Server Error to POST /api/show for llama3.2: llama runner process has terminated`);
    const other = track(await answeringServer(404, 'text/plain', '404 page not found'));
    expect(((await new Gateway(other.url).tags().catch((e: unknown) => e)) as CallError).code).toBe('NOT_OLLAMA');
    expect(((await new Gateway(other.url).show('x').catch((e: unknown) => e)) as CallError).code).toBe('MODEL_MISSING');
  });

  it('says to drop /api, or to use the OpenAI API, when a host URL that ends in /api or /v1 answers 404', async () => {
    const other = track(await answeringServer(404, 'text/plain', '404 page not found'));
    const hintFor = async (url: string) => ((await new Gateway(url).tags().catch((e: unknown) => e)) as CallError).hint;
    expect(await hintFor(`${other.url}/api`)).toContain(`\`--host ${other.url}\``);
    expect(await hintFor(`${other.url}/v1`)).toContain(`\`--host ${other.url}/v1 --api openai\``);
    expect(await hintFor(other.url)).toContain(`\`--host ${other.url}/v1 --api openai\``);
  });

  it('puts the family, version and sizes the server reports on one line, and a model name it quotes', async () => {
    const family = 'llama\n\n# Injected\r\n| a | b |\u2028===\t\u001b[2Jend';
    const sim = track(
      await startSimulator({ models: [{ name: 'odd:1b', family, parameterSize: '8B\nmore', quantization: 'Q4\u2029K' }], version: '0.13.0\nsecond line', respond: () => 'x' }),
    );
    const gw = new Gateway(sim.url);
    const [tag] = await gw.tags();
    expect(tag).toMatchObject({ family: 'llama # Injected | a | b | === end', parameterSize: '8B more', quantization: 'Q4 K' });
    expect(tag!.families).toEqual(['llama # Injected | a | b | === end']);
    const details = await gw.show('odd:1b');
    expect(details).toMatchObject({ family: 'llama # Injected | a | b | === end', parameterSize: '8B more', quantization: 'Q4 K' });
    expect(await gw.version()).toBe('0.13.0 second line');

    const missing = (await gw.chat({ model: 'ghost\n# pulled:1b', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)) as CallError;
    expect(missing.code).toBe('MODEL_MISSING');
    expect(missing.message).toBe(`Model \`ghost # pulled:1b\` is not on ${sim.url}.`);
    expect(missing.hint).toBe('Run `ollama pull ghost # pulled:1b` on that host.');
  });
});

describe('a host that takes the connection and never answers', () => {
  it('fails each facts request after its time limit, naming the host and the request, for both kinds of gateway', async () => {
    const held: import('node:http').ServerResponse[] = [];
    const server = createServer((req, res) => {
      req.resume();
      held.push(res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const { OpenAIGateway } = await import('../../src/openai/gateway.js');
      const ollama = new Gateway(url, { factsTimeoutMs: 200 });
      for (const [where, ask] of [['GET /api/tags', () => ollama.tags()], ['GET /api/version', () => ollama.version()], ['POST /api/show', () => ollama.show('m')]] as const) {
        const err = await (ask as () => Promise<unknown>)().catch((e: unknown) => e);
        expect(err, where).toBeInstanceOf(CallError);
        expect((err as CallError).code).toBe('HOST_UNREACHABLE');
        expect((err as CallError).message).toBe(`${url} took the connection but did not answer ${where} within 0.2 s.`);
      }
      const openai = await new OpenAIGateway(`${url}/v1`, { factsTimeoutMs: 200 }).catalog().catch((e: unknown) => e);
      expect((openai as CallError).message).toBe(`${url}/v1 took the connection but did not answer GET /models within 0.2 s.`);
    } finally {
      for (const res of held) res.destroy();
      server.close();
    }
  });
});
