import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/sim/index.js';
import { closesAfterEach } from '../helpers/lifecycle.js';

const track = closesAfterEach();

/** POSTs a streamed chat and reads it raw: the body as far as it got, and how the connection ended. */
function chat(url: string): Promise<{ body: string; ended: 'end' | string }> {
  return new Promise((resolve) => {
    let body = '';
    const req = request(`${url}/api/chat`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ body, ended: 'end' }));
      res.on('error', (err: NodeJS.ErrnoException) => resolve({ body, ended: err.code ?? err.message }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ body, ended: err.code ?? err.message }));
    req.end(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true }));
  });
}

describe('a simulator that dies', () => {
  it('resets a reply mid-stream after crashAfterTokens chunks, then refuses every new connection', async () => {
    const sim = track(await startSimulator({ models: [{ name: 'm' }], respond: () => ({ content: 'one two three four five six', crashAfterTokens: 2 }) }));
    const cut = await chat(sim.url);
    expect(cut.body.split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { message: { content: string } }).message.content)).toEqual(['one', ' two']);
    expect(cut.ended).toBe('ECONNRESET');
    expect((await chat(sim.url)).ended).toBe('ECONNREFUSED');
  });

  it('kill() refuses new connections, and a simulator started on its port serves again', async () => {
    const sim = track(await startSimulator({ models: [{ name: 'm' }], respond: () => 'fine' }));
    await sim.kill();
    expect((await chat(sim.url)).ended).toBe('ECONNREFUSED');
    const again = track(await startSimulator({ port: sim.port, models: [{ name: 'm' }], respond: () => 'fine' }));
    expect((await chat(again.url)).ended).toBe('end');
  });
});
