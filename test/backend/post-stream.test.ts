import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { postStream, type RefusedResponse } from '../../src/backend/post-stream.js';

let server: Server | undefined;
const agent = new Agent({ keepAliveTimeout: 30_000 });

afterEach(async () => {
  server?.closeAllConnections();
  server?.close();
  server = undefined;
});

/** A real HTTP server on a free port; `handle` answers each request. Counts requests and the sockets they came on. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: URL; sockets: Set<Socket>; requests: string[]; closed: Promise<void>[] }> {
  const sockets = new Set<Socket>();
  const requests: string[] = [];
  const closed: Promise<void>[] = [];
  server = createServer((req, res) => {
    sockets.add(req.socket);
    closed.push(once(res, 'close').then(() => undefined));
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString('utf8')));
    req.on('end', () => {
      requests.push(`${req.method} ${req.url} ${body}`);
      handle(req, res);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { url: new URL(`http://127.0.0.1:${port}/api/chat`), sockets, requests, closed };
}

const refused = (r: RefusedResponse): Error => Object.assign(new Error(`refused ${r.status} ${r.contentType} ${r.text}`), { response: r });

function post(url: URL, onChunk: (chunk: Uint8Array) => void, signal = new AbortController().signal): Promise<void> {
  return postStream(agent, { url, headers: { 'content-type': 'application/json' }, body: '{"q":1}', signal, onChunk, refused });
}

describe('a streamed POST read from undici callbacks', () => {
  it('hands on every chunk in order, resolves at the end, and hands the connection back to the pool', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      let i = 0;
      const tick = (): void => {
        if (i === 3) return void res.end('done\n');
        res.write(`line ${i++}\n`);
        setImmediate(tick);
      };
      tick();
    });
    const decoder = new TextDecoder();
    for (let k = 0; k < 6; k++) {
      let text = '';
      await post(s.url, (chunk) => (text += decoder.decode(chunk, { stream: true })));
      expect(text).toBe('line 0\nline 1\nline 2\ndone\n');
    }
    expect(s.requests).toEqual(Array.from({ length: 6 }, () => 'POST /api/chat {"q":1}'));
    // Six requests one after another on at most two connections (as undici's own request does): they are reused.
    expect(s.sockets.size).toBeLessThanOrEqual(2);
  });

  it('rejects a status that is not 2xx with the whole body, and hands none of it on as reply', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json', 'retry-after': '2' });
      res.write('{"error":"model runner');
      setImmediate(() => res.end(' has stopped"}'));
    });
    const chunks: Uint8Array[] = [];
    const err = (await post(s.url, (c) => chunks.push(c)).catch((e: unknown) => e)) as Error & { response: RefusedResponse };
    expect(err.response).toEqual({ status: 500, contentType: 'application/json', retryAfter: '2', text: '{"error":"model runner has stopped"}' });
    expect(chunks).toEqual([]);
  });

  it('stops at once on the signal, mid-body, with its reason, and closes the connection', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200);
      res.write('first\n');
      // Never ends on its own.
    });
    const stop = new AbortController();
    const reason = new Error('stopped by the user');
    const seen: string[] = [];
    const done = post(s.url, (c) => {
      seen.push(Buffer.from(c).toString());
      stop.abort(reason);
    }, stop.signal);
    await expect(done).rejects.toBe(reason);
    expect(seen).toEqual(['first\n']);
    await Promise.all(s.closed);
  });

  it('sends nothing when the signal has already stopped it', async () => {
    const s = await serve((_req, res) => res.end('x'));
    const stop = new AbortController();
    stop.abort(new Error('already stopped'));
    await expect(post(s.url, () => undefined, stop.signal)).rejects.toThrow('already stopped');
    // A request sent after it is the only one the server sees.
    await post(s.url, () => undefined);
    expect(s.requests).toHaveLength(1);
  });

  it('rejects with what the chunk handler threw, and aborts the request', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200);
      res.write('{"error":"runner crashed"}\n');
    });
    await expect(
      post(s.url, () => {
        throw new Error('runner crashed');
      }),
    ).rejects.toThrow('runner crashed');
    await Promise.all(s.closed);
  });

  it('rejects with the transport error when nothing listens', async () => {
    const s = await serve((_req, res) => res.end());
    const url = s.url;
    server!.close();
    await once(server!, 'close');
    server = undefined;
    const err = (await post(url, () => undefined).catch((e: unknown) => e)) as { code?: string };
    expect(err.code).toBe('ECONNREFUSED');
  });
});
