import { Ollama } from 'ollama';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type SimHandle, type SimOptions, startSimulator } from '../../src/sim/index.js';

const RFC3339_NANO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/;

let sim: SimHandle | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function start(options: Partial<SimOptions> = {}): Promise<{ sim: SimHandle; client: Ollama }> {
  sim = await startSimulator({ models: [{ name: 'llama3.2' }], ...options });
  return { sim, client: new Ollama({ host: sim.url }) };
}

async function caught(promise: Promise<unknown>): Promise<Error & { status_code?: number }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { status_code?: number };
  }
  throw new Error('expected a rejection');
}

const ask = [{ role: 'user', content: 'Should we ship on Friday?' }];

describe('POST /api/chat', () => {
  it('streams the reply in several chunks and ends with one done chunk carrying integer metrics', async () => {
    const { client } = await start({ respond: () => 'We should wait until Monday, because  Friday deploys are risky.' });
    const chunks = [];
    for await (const chunk of await client.chat({ model: 'llama3.2', messages: ask, stream: true })) chunks.push(chunk);

    const final = chunks.at(-1)!;
    const body = chunks.slice(0, -1);
    expect(body.length).toBeGreaterThan(3);
    expect(body.map((c) => c.message.content).join('')).toBe('We should wait until Monday, because  Friday deploys are risky.');
    for (const chunk of body) {
      expect(chunk.done).toBe(false);
      expect(chunk).not.toHaveProperty('total_duration');
      expect(chunk).not.toHaveProperty('done_reason');
      expect(String(chunk.created_at)).toMatch(RFC3339_NANO_UTC);
    }
    expect(chunks.filter((c) => c.done)).toHaveLength(1);
    expect(final).toMatchObject({ model: 'llama3.2', done: true, done_reason: 'stop', message: { role: 'assistant', content: '' } });
    expect(final.eval_count).toBe(body.length);
    expect(final.prompt_eval_count).toBe(Math.ceil(ask[0]!.content.length / 4));
    for (const key of ['total_duration', 'load_duration', 'prompt_eval_duration', 'eval_duration'] as const) {
      expect(Number.isInteger(final[key])).toBe(true);
      expect(final[key]).toBeGreaterThan(0);
    }
  });

  it('sends application/x-ndjson and no headers until the model is loaded', async () => {
    const { sim } = await start({ loadMs: 150 });
    const began = Date.now();
    const res = await fetch(`${sim.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: 'llama3.2', messages: ask }),
    });
    expect(Date.now() - began).toBeGreaterThanOrEqual(100);
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    const lines = (await res.text()).split('\n');
    expect(lines.at(-1)).toBe('');
    const parsed = lines.slice(0, -1).map((line) => JSON.parse(line) as { done: boolean });
    expect(parsed.at(-1)!.done).toBe(true);
  });

  it('answers stream:false with one object holding the whole content and the metrics', async () => {
    const { client } = await start({ respond: () => 'Ship it.' });
    const res = await client.chat({ model: 'llama3.2', messages: ask, stream: false });
    expect(res).toMatchObject({ done: true, done_reason: 'stop', message: { role: 'assistant', content: 'Ship it.' } });
    expect(res.eval_count).toBe(2);
  });

  it('fills a JSON-schema format with schema-valid JSON when no reply is scripted', async () => {
    const schema = z.object({
      stance: z.enum(['for', 'against', 'undecided']),
      confidence: z.number().min(0).max(1),
      reasons: z.array(z.object({ claim: z.string().min(5), weight: z.number().int().min(1).max(3) })).min(1),
      rebuttal: z.string().nullable(),
    });
    const { client } = await start();
    for (let i = 0; i < 3; i++) {
      const res = await client.chat({ model: 'llama3.2', messages: ask, format: z.toJSONSchema(schema) });
      expect(() => schema.parse(JSON.parse(res.message.content))).not.toThrow();
    }
  });

  it('answers format "json" with an empty JSON object', async () => {
    const { client } = await start();
    const res = await client.chat({ model: 'llama3.2', messages: ask, format: 'json' });
    expect(res.message.content).toBe('{}');
  });

  it('rejects an unknown model with a 404 ResponseError', async () => {
    const { client } = await start();
    const error = await caught(client.chat({ model: 'mistral', messages: ask }));
    expect(error.name).toBe('ResponseError');
    expect(error.status_code).toBe(404);
    expect(error.message).toBe("model 'mistral' not found");
  });

  it('rejects an empty model name with 400 model is required and an empty body with 400', async () => {
    const { sim, client } = await start();
    const error = await caught(client.chat({ model: '', messages: ask }));
    expect([error.status_code, error.message]).toEqual([400, 'model is required']);
    const res = await fetch(`${sim.url}/api/chat`, { method: 'POST' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'missing request body' });
  });

  it('fails a format that is neither "json" nor an object with 500 and the runner text', async () => {
    const { client } = await start();
    const error = await caught(client.chat({ model: 'llama3.2', messages: ask, format: 'yaml' }));
    expect(error.status_code).toBe(500);
    expect(error.message).toBe('invalid format: "\\"yaml\\""; expected "json" or a valid JSON Schema object');
  });

  it('refuses a schema whose pattern is not anchored, as llama.cpp grammar conversion does', async () => {
    const { client } = await start();
    const format = z.toJSONSchema(z.object({ code: z.string().regex(/[A-Z]{3}/) }));
    const error = await caught(client.chat({ model: 'llama3.2', messages: ask, format }));
    expect([error.status_code, error.message]).toEqual([500, 'invalid JSON schema in format']);
  });

  it('turns a mid-stream error into an Error thrown by the client after the chunks already sent', async () => {
    const { client } = await start({ respond: () => ({ content: 'one two three four', error: 'runner crashed', failAfterTokens: 2 }) });
    const seen: string[] = [];
    const stream = await client.chat({ model: 'llama3.2', messages: ask, stream: true });
    const error = await caught(
      (async () => {
        for await (const chunk of stream) seen.push(chunk.message.content);
      })(),
    );
    expect(error.message).toBe('runner crashed');
    expect(error.name).toBe('Error');
    expect(seen).toEqual(['one', ' two']);
  });

  it('fails before the first byte with the scripted status when the reply says so', async () => {
    const { client } = await start({ respond: () => ({ error: 'model runner has unexpectedly stopped', status: 500 }) });
    const error = await caught(client.chat({ model: 'llama3.2', messages: ask, stream: true }));
    expect([error.name, error.status_code, error.message]).toEqual(['ResponseError', 500, 'model runner has unexpectedly stopped']);
  });

  it('ends a silent stop without done, so the client reports the missing done', async () => {
    const { client } = await start({ respond: () => ({ content: 'again again again', silentStop: true }) });
    const stream = await client.chat({ model: 'llama3.2', messages: ask, stream: true });
    const error = await caught(
      (async () => {
        for await (const _ of stream);
      })(),
    );
    expect(error.message).toBe('Did not receive done or success response in stream.');
  });

  it('loads the model for empty messages and unloads it for empty messages with keep_alive 0', async () => {
    const { sim, client } = await start();
    const loaded = await client.chat({ model: 'llama3.2', messages: [] });
    expect(loaded).toMatchObject({ done: true, done_reason: 'load', message: { role: 'assistant', content: '' } });
    expect(sim.loaded()).toEqual(['llama3.2']);
    const unloaded = await client.chat({ model: 'llama3.2', messages: [], keep_alive: 0 });
    expect(unloaded.done_reason).toBe('unload');
    expect(sim.loaded()).toEqual([]);
  });

  it('cuts the reply at num_predict chunks and reports done_reason length', async () => {
    const { client } = await start({ respond: () => 'a b c d e f' });
    const res = await client.chat({ model: 'llama3.2', messages: ask, options: { num_predict: 3 } });
    expect([res.message.content, res.done_reason, res.eval_count]).toEqual(['a b c', 'length', 3]);
  });

  it('drops the oldest non-system messages when the prompt overflows num_ctx', async () => {
    const seen: string[][] = [];
    const { client } = await start({
      respond: (req) => {
        seen.push(req.messages.map((m) => m.role));
        return 'ok';
      },
    });
    const long = 'x'.repeat(400);
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: long },
      { role: 'assistant', content: long },
      { role: 'user', content: 'And now?' },
    ];
    const res = await client.chat({ model: 'llama3.2', messages, options: { num_ctx: 150 } });
    expect(seen[0]).toEqual(['system', 'assistant', 'user']);
    expect(res.prompt_eval_count).toBe(Math.ceil(('Be brief.'.length + 400 + 'And now?'.length) / 4));
  });

  it('stops generating and frees the slot when the client aborts mid-stream', async () => {
    const words = Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ');
    const { sim, client } = await start({ tokenMs: 20, respond: (req) => (req.index === 0 ? words : 'short') });
    const stream = await client.chat({ model: 'llama3.2', messages: ask, stream: true });
    let received = 0;
    const drained = (async () => {
      for await (const _ of stream) if (++received === 2) stream.abort();
    })();
    await drained.catch((error: Error) => expect(error.name).toBe('AbortError'));
    const next = await client.chat({ model: 'llama3.2', messages: ask });
    expect(next.message.content).toBe('short');
    expect(sim.counters().perModel['llama3.2']!.inFlight).toBe(0);
  });
});

describe('POST /api/generate', () => {
  it('streams response chunks and ends with context and metrics', async () => {
    const { client } = await start({ respond: () => 'Plain answer here.' });
    const chunks = [];
    for await (const chunk of await client.generate({ model: 'llama3.2', prompt: 'Why?', stream: true })) chunks.push(chunk);
    expect(chunks.slice(0, -1).map((c) => c.response).join('')).toBe('Plain answer here.');
    const final = chunks.at(-1)!;
    expect(final).toMatchObject({ done: true, done_reason: 'stop', response: '' });
    expect(final.context.length).toBeGreaterThan(0);
  });

  it('loads for an empty prompt and answers an empty model name with 404', async () => {
    const { sim, client } = await start();
    expect((await client.generate({ model: 'llama3.2', prompt: '' })).done_reason).toBe('load');
    expect(sim.loaded()).toEqual(['llama3.2']);
    const error = await caught(client.generate({ model: '', prompt: 'x' }));
    expect([error.status_code, error.message]).toEqual([404, "model '' not found"]);
  });
});
