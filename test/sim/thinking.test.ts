import { Ollama } from 'ollama';
import { afterEach, describe, expect, it } from 'vitest';
import { type SimHandle, type SimReply, startSimulator } from '../../src/sim/index.js';
import { splitIntoChunks } from '../../src/sim/server.js';

let sim: SimHandle | null = null;

afterEach(async () => {
  await sim?.close();
  sim = null;
});

async function thinker(reply?: SimReply) {
  sim = await startSimulator({
    models: [{ name: 'thinker:8b', capabilities: ['completion', 'thinking'], thinkingTokens: 50 }, { name: 'plain:7b' }],
    ...(reply ? { respond: () => reply } : {}),
  });
  return new Ollama({ host: sim.url });
}

async function streamed(client: Ollama, request: Record<string, unknown>) {
  let thinking = '';
  let content = '';
  let last: Record<string, unknown> = {};
  const stream = await client.chat({ model: 'thinker:8b', messages: [{ role: 'user', content: 'Pick one.' }], stream: true, ...request } as never);
  for await (const chunk of stream as AsyncIterable<{ message: { thinking?: string; content: string }; done: boolean }>) {
    thinking += chunk.message.thinking ?? '';
    content += chunk.message.content;
    last = chunk as unknown as Record<string, unknown>;
  }
  return { thinking, content, last };
}

describe('simulated thinking models', () => {
  it('lists the thinking capability in /api/show', async () => {
    const client = await thinker();
    expect((await client.show({ model: 'thinker:8b' })).capabilities).toContain('thinking');
    expect((await client.show({ model: 'plain:7b' })).capabilities).not.toContain('thinking');
  });

  it('streams thinking in message.thinking before the answer, and counts both in eval_count', async () => {
    const client = await thinker('{"pick":"A"}');
    const r = await streamed(client, {});
    expect(r.thinking.split(' ')).toHaveLength(50);
    expect(r.content).toBe('{"pick":"A"}');
    expect(r.last.eval_count).toBe(50 + splitIntoChunks('{"pick":"A"}').length);
    expect(r.last.done_reason).toBe('stop');
  });

  it('honours think: false with no thinking at all', async () => {
    const client = await thinker('{"pick":"A"}');
    const r = await streamed(client, { think: false });
    expect(r.thinking).toBe('');
    expect(r.content).toBe('{"pick":"A"}');
  });

  it('cuts a reply at num_predict while the model is still thinking, with empty content and done_reason length', async () => {
    const client = await thinker('{"pick":"A"}');
    const r = await streamed(client, { options: { num_predict: 30 } });
    expect(r.thinking.split(' ')).toHaveLength(30);
    expect(r.content).toBe('');
    expect(r.last.done_reason).toBe('length');
  });

  it('can put the answer at the end of the thinking and leave the content empty', async () => {
    const client = await thinker({ content: '{"pick":"A"}', answerInThinking: true });
    const r = await streamed(client, {});
    expect(r.thinking.endsWith('{"pick":"A"}')).toBe(true);
    expect(r.content).toBe('');
  });

  it('refuses think: true for a model without the capability with a 400', async () => {
    const client = await thinker();
    const error = await client.chat({ model: 'plain:7b', messages: [{ role: 'user', content: 'x' }], think: true }).catch((e: unknown) => e);
    expect((error as { status_code: number }).status_code).toBe(400);
    expect((error as Error).message).toContain('"plain:7b" does not support thinking');
  });
});
