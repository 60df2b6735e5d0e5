import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engine } from '../../src/embedded/engine.js';
import { EmbeddedServer, splitThought, withThinking } from '../../src/embedded/server.js';
import { formatSchemaOf } from '../../src/protocol/grammar.js';
import { openingSchema } from '../../src/protocol/schemas.js';
import { writeTinyGguf } from '../helpers/gguf.js';

describe('a thinking model under a grammar, through the real llama.cpp', { timeout: 120_000 }, () => {
  let dir: string;
  let server: EmbeddedServer;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'conclave-embedded-think-'));
    writeTinyGguf(join(dir, 'thinker.gguf'), { thinking: true });
    writeTinyGguf(join(dir, 'plain.gguf'));
    server = new EmbeddedServer(dir);
  });
  afterAll(async () => {
    await engine.unload();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports the model family from the architecture in the file, as Ollama does', async () => {
    expect((await server.show('plain')).family).toBe('llama');
    // `conclave models` lists it too, and reads the panel's families from the listing.
    expect((await server.tags()).map((t) => [t.name, t.family])).toEqual([['plain', 'llama'], ['thinker', 'llama']]);
  });

  it('says which models think, from the chat template in the file', async () => {
    expect((await server.show('thinker')).capabilities).toContain('thinking');
    expect((await server.show('plain')).capabilities).not.toContain('thinking');
  });

  it('records the thought as thinking and keeps it out of the reply the schema binds', async () => {
    const format = formatSchemaOf(openingSchema);
    const r = await server.chat({ model: 'thinker', messages: [{ role: 'user', content: 'Queue or topic?' }], format, options: { num_predict: 200, seed: 1, temperature: 0.8, num_ctx: 1024 } });
    expect(r.thinking.length).toBeGreaterThan(0);
    // The reply is the JSON after the thought (the random model may still write the tags' text inside a string).
    expect(r.content.trimStart().startsWith('{')).toBe(true);
    expect(r.thinkingTokens).toBeGreaterThan(0);
  });

  it('records a thought cut off by the token limit as thinking, leaving the reply empty', async () => {
    const format = formatSchemaOf(openingSchema);
    const r = await server.chat({ model: 'thinker', messages: [{ role: 'user', content: 'Queue or topic?' }], format, options: { num_predict: 3, seed: 1, temperature: 0.8, num_ctx: 1024 } });
    expect(r.metrics.doneReason).toBe('length');
    expect(r.content).toBe('');
    expect(r.thinking.length).toBeGreaterThan(0);
    expect(r.thinkingTokens).toBe(r.metrics.completionTokens);
  });

  it('does not think when the call says think: false', async () => {
    const format = formatSchemaOf(openingSchema);
    const r = await server.chat({ model: 'thinker', messages: [{ role: 'user', content: 'Queue or topic?' }], format, think: false, options: { num_predict: 120, seed: 1, temperature: 0.8, num_ctx: 1024 } });
    expect(r.thinking).toBe('');
    expect(r.content.trimStart().startsWith('{')).toBe(true);
  });

  it('lets the grammar open with a thought only before the reply', () => {
    const text = withThinking('root ::= ws obj ws\nobj ::= "{}"\nws ::= [ ]?\n');
    expect(text).toMatch(/^root ::= think-block\? ws obj ws$/m);
    expect(text).toContain('think-block ::= "<think>" [^<]* "</think>"');
    expect(splitThought('<think>weigh it</think>\n{"a":1}')).toMatchObject({ thinking: 'weigh it', content: '{"a":1}' });
    expect(splitThought('{"a":"<think>x</think>"}')).toBeNull();
    expect(splitThought('<think>still weighing')).toBeNull();
    expect(splitThought('<think>still weighing', true)).toMatchObject({ thinking: 'still weighing', content: '' });
    expect(splitThought('<think>a</think>{"b":"</think>"}', true)).toMatchObject({ thinking: 'a', content: '{"b":"</think>"}' });
  });
});
