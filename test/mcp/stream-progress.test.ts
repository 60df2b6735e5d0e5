import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { agentOf, reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

const BIN = packagePath('bin', 'conclave.js');
let dir = '';
let sim: SimHandle;
const preset = testPreset(['a', 'b'], { protocol: { maxRounds: 1, convergenceThreshold: 0.85, callTimeoutSeconds: 60 } });
const LONG = `a holds \u001b[2Jthat ${Array.from({ length: 40 }, (_, i) => `point${i}`).join(' ')} done`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-mcp-stream-'));
  writeFileSync(join(dir, 'panel.json'), JSON.stringify(preset));
  const script = scriptedResponder([0.3, 0.9], (req) => (stageOf(req) === 'opening' && agentOf(req) === 'a' ? reply.opening('a', LONG) : undefined));
  // Slow enough that the openings are still being written when the wait starts.
  sim = await startSimulator({ models: simModels(preset), tokenMs: 60, respond: script.respond });
});

afterAll(async () => {
  await sim?.close();
});

describe('conclave mcp progress', () => {
  it('names the agent and the first words it is writing while its call streams', { timeout: 120_000 }, async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp', '--db', join(dir, 'run.db'), '--host', sim.url, '--allow-dir', dir],
      cwd: dir,
      env: { PATH: process.env.PATH ?? '' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'conclave-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const started = (await client.callTool({ name: 'conclave_start', arguments: { question: 'Should we do A?', preset: join(dir, 'panel.json') } })) as CallToolResult;
      const id = /Started debate (\S+)\./.exec(started.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n'))?.[1];
      expect(id).toBeDefined();
      const progress: Progress[] = [];
      const done = (await client.callTool({ name: 'conclave_wait', arguments: { id, maxSeconds: 110 } }, undefined, { timeout: 120_000, onprogress: (p) => progress.push(p) })) as CallToolResult;
      expect(done.isError).toBeFalsy();
      const writing = progress.map((p) => p.message ?? '').filter((m) => m.includes('a is writing (opening): "a holds that'));
      expect(writing.length).toBeGreaterThan(0);
      // Twelve words at most, with the escape sequence in them left out.
      const words = /"(.*)…"/.exec(writing.at(-1)!)?.[1] ?? '';
      expect(words.split(' ').length).toBeLessThanOrEqual(12);
      expect(progress.some((p) => /\u001b/.test(p.message ?? ''))).toBe(false);
      const steps = progress.map((p) => p.progress);
      expect(steps).toEqual([...steps].sort((x, y) => x - y));
      expect(new Set(steps).size).toBe(steps.length);
    } finally {
      await transport.close();
    }
  });
});
