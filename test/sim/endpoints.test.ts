import { Ollama } from 'ollama';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';

let sim: SimHandle;
let client: Ollama;

beforeAll(async () => {
  sim = await startSimulator({
    models: [
      { name: 'qwen3:8b', family: 'qwen3', sizeBytes: 5.2e9, contextLength: 40960, capabilities: ['completion', 'tools', 'thinking'] },
      { name: 'llama3.2', parameterSize: '3.2B' },
    ],
    version: '0.12.9',
  });
  client = new Ollama({ host: sim.url });
});

afterAll(() => sim.close());

describe('simulator metadata endpoints', () => {
  it('lists models in /api/tags with a tag, size, digest and details', async () => {
    const { models } = await client.list();
    expect(models.map((m) => m.name)).toEqual(['qwen3:8b', 'llama3.2:latest']);
    const [qwen] = models;
    expect(qwen).toMatchObject({
      model: 'qwen3:8b',
      size: 5.2e9,
      details: { format: 'gguf', family: 'qwen3', families: ['qwen3'], quantization_level: 'Q4_K_M' },
    });
    expect(qwen!.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(String(qwen!.modified_at)).toMatch(/Z$/);
  });

  it('describes a model in /api/show with context length, capabilities and a parameters string', async () => {
    const show = await client.show({ model: 'qwen3:8b' });
    // ollama-js types model_info as a Map, but at runtime it is the plain JSON object.
    const info = show.model_info as unknown as Record<string, unknown>;
    expect(info['qwen3.context_length']).toBe(40960);
    expect(info['general.architecture']).toBe('qwen3');
    expect(show.capabilities).toEqual(['completion', 'tools', 'thinking']);
    expect(show.details.family).toBe('qwen3');
    expect(show.parameters.split('\n')[0]).toMatch(/^stop {27}"<\|im_end\|>"$/);
    const missing = await client.show({ model: 'nope' }).catch((e: Error & { status_code?: number }) => e);
    expect(missing).toMatchObject({ name: 'ResponseError', status_code: 404, message: "model 'nope' not found" });
  });

  it('shows loaded models in /api/ps with size, VRAM share, expiry and context length', async () => {
    await client.chat({ model: 'llama3.2', messages: [], options: { num_ctx: 2048 } });
    const { models } = await client.ps();
    expect(models).toHaveLength(1);
    expect(models[0]).toMatchObject({ name: 'llama3.2:latest', size: 4.7e9 + 2048 * 2048, size_vram: 4.7e9 + 2048 * 2048, context_length: 2048 });
    expect(String(models[0]!.expires_at)).toMatch(/Z$/);
  });

  it('refuses thinking and tools on models without those capabilities', async () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const thinking = await client.chat({ model: 'llama3.2', messages, think: true }).catch((e: Error) => e);
    expect(thinking).toMatchObject({ status_code: 400, message: '"llama3.2" does not support thinking' });
    const tools = [{ type: 'function', function: { name: 'f', description: 'f', parameters: { type: 'object', properties: {} } } }];
    const tooled = await client.chat({ model: 'llama3.2', messages, tools }).catch((e: Error) => e);
    expect(tooled).toMatchObject({ status_code: 400, message: 'registry.ollama.ai/library/llama3.2:latest does not support tools' });
    await expect(client.chat({ model: 'qwen3:8b', messages, think: true })).resolves.toMatchObject({ done: true });
  });

  it('reports the configured version and answers the root with Ollama is running', async () => {
    expect(await client.version()).toEqual({ version: '0.12.9' });
    const root = await fetch(`${sim.url}/`);
    expect(await root.text()).toBe('Ollama is running');
    const head = await fetch(`${sim.url}/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect((await fetch(`${sim.url}/api/nothing`)).status).toBe(404);
  });
});
