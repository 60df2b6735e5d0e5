/**
 * The embedded engine on the tiny random-weight model: tokens/s with and without a grammar, the
 * engine's CPU per call against a bare node-llama-cpp generation of the same length, and peak RSS.
 * Run: npm run bench:embedded
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { engine, loadLibrary } from '../src/embedded/engine.js';
import { EmbeddedServer } from '../src/embedded/server.js';
import { formatSchemaOf } from '../src/protocol/grammar.js';
import { openingSchema } from '../src/protocol/schemas.js';
import { writeTinyGguf } from '../test/helpers/gguf.js';

const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-embedded-'));
const path = writeTinyGguf(join(dir, 'tiny.gguf'));
const server = new EmbeddedServer(dir);
const calls = 8;
const messages = [{ role: 'user' as const, content: 'Should the team move the order events to a topic? Answer in JSON.' }];
const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function measure(label: string, format?: Record<string, unknown>): Promise<{ tokens: number }> {
  let tokens = 0;
  let seconds = 0;
  const c0 = cpu();
  for (let i = 0; i < calls; i++) {
    const r = await server.chat({ model: 'tiny', messages, options: { num_predict: 128, seed: i, temperature: 0.8, num_ctx: 2048 }, ...(format ? { format } : {}) });
    tokens += r.metrics.completionTokens ?? 0;
    seconds += (r.metrics.evalDurationNs ?? 0) / 1e9;
  }
  const perCall = (cpu() - c0) / calls;
  console.log(`${label.padEnd(16)} ${(tokens / seconds).toFixed(0).padStart(6)} tokens/s  ${(tokens / calls).toFixed(0).padStart(4)} tokens/call  CPU ${perCall.toFixed(0)} ms/call`);
  return { tokens: tokens / calls };
}

await server.warm('tiny', { num_ctx: 2048 });
await measure('no grammar');
const grammar = await measure('opening grammar', formatSchemaOf(openingSchema));

// The same length, straight through node-llama-cpp: what the engine adds is the difference.
const { LlamaChat } = await loadLibrary();
const lease = await engine.acquire(path, 2048, 1);
const c0 = cpu();
for (let i = 0; i < calls; i++) {
  const chat = new LlamaChat({ contextSequence: lease.sequence });
  await chat.generateResponse([{ type: 'user', text: messages[0]!.content }, { type: 'model', response: [] }], { maxTokens: Math.round(grammar.tokens), seed: i, temperature: 0.8 });
  chat.dispose({ disposeSequence: false });
}
console.log(`bare node-llama-cpp, ${Math.round(grammar.tokens)} tokens: CPU ${((cpu() - c0) / calls).toFixed(0)} ms/call`);
lease.release();
console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
await engine.unload();
rmSync(dir, { recursive: true, force: true });
