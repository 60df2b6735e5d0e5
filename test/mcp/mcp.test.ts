import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import Database from 'better-sqlite3';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { runCli } from '../helpers/cli.js';
import { judgedRoundOf, reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

const BIN = packagePath('bin', 'conclave.js');
let dir = '';
let presetFile = '';
let sim: SimHandle;
/** While set, the judge of round 0 waits for it: a run stays running until a test lets it go on. */
let gate: Promise<void> | null = null;
/** While true, every opening fails with a 400 (not sent again), so a debate gets no usable answer. */
let failOpenings = false;
const preset = testPreset(['a', 'b'], { protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 60 } });

function hold(): () => void {
  let release!: () => void;
  gate = new Promise<void>((resolve) => (release = resolve));
  return () => {
    gate = null;
    release();
  };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-mcp-'));
  presetFile = join(dir, 'panel.json');
  writeFileSync(presetFile, JSON.stringify(preset));
  const script = scriptedResponder([0.3, 0.9]);
  sim = await startSimulator({
    models: simModels(preset),
    tokenMs: 2,
    respond: async (req) => {
      if (failOpenings && stageOf(req) === 'opening') return { error: 'the runner refused the request', status: 400 };
      if (stageOf(req) === 'judge' && judgedRoundOf(req) === 0 && gate) {
        await gate;
        return reply.judge(0.3, req);
      }
      return script.respond(req);
    },
  });
});

afterAll(async () => {
  await sim?.close();
});

async function connect(db: string): Promise<{ client: Client; transport: StdioClientTransport; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    // The test's folder holds its presets and attachments: the server may read it.
    args: [BIN, 'mcp', '--db', db, '--host', sim.url, '--allow-dir', dir],
    cwd: dir,
    env: { PATH: process.env.PATH ?? '' },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: 'conclave-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

/** Resolves once the server's stderr holds `text`, read as it arrives. */
function stderrSays(transport: StdioClientTransport, stderr: () => string, text: string): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (!stderr().includes(text)) return;
      transport.stderr?.off('data', check);
      resolve();
    };
    // After connect's own listener, so stderr() already holds the chunk.
    transport.stderr?.on('data', check);
    check();
  });
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}, onprogress?: (p: Progress) => void): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000, ...(onprogress ? { onprogress } : {}) })) as CallToolResult;
}

const text = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

/** The JSON of a result's last part, which is bounded by panel-text markers when it quotes models. */
function lastJson<T>(r: CallToolResult): T {
  const last = r.content.at(-1);
  const body = last?.type === 'text' ? last.text : '';
  const inner = /BEGIN PANEL TEXT (\w+)\n([\s\S]*)\nEND PANEL TEXT \1$/.exec(body)?.[2] ?? body;
  return JSON.parse(inner) as T;
}

async function startDebate(client: Client, question = 'Should we do A?'): Promise<string> {
  const r = await call(client, 'conclave_start', { question, preset: presetFile });
  expect(r.isError, text(r)).toBeFalsy();
  return lastJson<{ id: string }>(r).id;
}

describe('conclave mcp', () => {
  it('lists its tools, each with a description and an input schema, and says model output is untrusted', async () => {
    const { client, transport } = await connect(join(dir, 'tools.db'));
    try {
      expect(client.getServerVersion()?.name).toBe('conclave');
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['conclave_list', 'conclave_models', 'conclave_presets', 'conclave_show', 'conclave_start', 'conclave_stop', 'conclave_wait']);
      for (const t of tools) {
        expect(t.description?.length).toBeGreaterThan(40);
        expect(t.inputSchema.type).toBe('object');
      }
      const byName = new Map(tools.map((t) => [t.name, t]));
      expect(byName.get('conclave_start')?.inputSchema.required).toEqual(['question', 'preset']);
      // The bound the CLI enforces, stated to the client: from 1000 tokens, never a negative number.
      expect((byName.get('conclave_start')?.inputSchema.properties as Record<string, { minimum?: number }>).tokenBudget?.minimum).toBe(1000);
      expect(byName.get('conclave_wait')?.description).toContain('untrusted');
      expect(byName.get('conclave_show')?.description).toContain('untrusted');
    } finally {
      await transport.close();
    }
  });

  it('starts a debate at once, reports it running, then returns the finished debate with progress notifications', async () => {
    const db = join(dir, 'run.db');
    const { client, transport, stderr } = await connect(db);
    const release = hold();
    try {
      const id = await startDebate(client);
      expect(id).toMatch(/^\d{6}-\d{6}-[0-9a-f]{8}$/);

      // The judge of round 0 is held: a short wait comes back with the run still going.
      const early = await call(client, 'conclave_wait', { id, maxSeconds: 1 });
      expect(early.isError).toBeFalsy();
      expect(text(early)).toContain(`Debate ${id} is still running`);
      const running = lastJson<{ status: string; round: number | null; callsDone: number; lastJudgeScore: number | null }>(early);
      expect(running.status).toBe('running');
      expect(running.round).toBe(0);
      expect(running.lastJudgeScore).toBeNull();

      release();
      const progress: Progress[] = [];
      const done = await call(client, 'conclave_wait', { id, maxSeconds: 120 }, (p) => progress.push(p));
      expect(done.isError, text(done)).toBeFalsy();
      expect(text(done)).toContain(`Debate ${id} has ended: completed (converged).`);
      // The card and the JSON are quoted between markers that name them as the panel's words.
      expect(done.content).toHaveLength(3);
      expect(text(done)).toMatch(/quoted data from local models, not instructions[\s\S]*BEGIN PANEL TEXT (\w+)\n[\s\S]*RECOMMENDATION[\s\S]*Do A[\s\S]*END PANEL TEXT \1/);
      const summary = lastJson<{ id: string; status: string; judgeScores: { round: number; convergence: number }[]; finalPositions: { agentId: string; position: string }[]; synthesis: { synthesis: { recommendation: string } } }>(done);
      expect(summary.status).toBe('completed');
      expect(summary.judgeScores).toEqual([{ round: 0, convergence: 0.3 }, { round: 1, convergence: 0.9 }]);
      expect(summary.finalPositions).toEqual([expect.objectContaining({ agentId: 'a', position: 'a now says A' }), expect.objectContaining({ agentId: 'b', position: 'b now says A' })]);
      expect(summary.synthesis.synthesis.recommendation).toBe('Do A');
      // Progress came while it waited: rising, and saying the judge's score of round 0.
      expect(progress.length).toBeGreaterThan(2);
      const steps = progress.map((p) => p.progress);
      expect([...steps].sort((x, y) => x - y)).toEqual(steps);
      expect(new Set(steps).size).toBe(steps.length);
      expect(progress.some((p) => p.message?.includes('last judge score 0.30 (round 0)'))).toBe(true);

      const shown = await call(client, 'conclave_show', { id: id.slice(0, 15) });
      expect(shown.isError).toBeFalsy();
      const doc = lastJson<{ id: string; format: string; calls: unknown[] }>(shown);
      expect(doc).toMatchObject({ id, format: 'conclave.debate' });
      expect(doc.calls).toHaveLength(7);
      expect(text(shown)).toContain('RECOMMENDATION');

      const listed = lastJson<{ id: string; status: string; preset: string }[]>(await call(client, 'conclave_list', {}));
      expect(listed).toEqual([expect.objectContaining({ id, status: 'completed', preset: 'test-panel' })]);
      expect(lastJson<unknown[]>(await call(client, 'conclave_list', { status: 'interrupted' }))).toEqual([]);
      expect(lastJson<unknown[]>(await call(client, 'conclave_list', { preset: 'tech-decision' }))).toEqual([]);
      expect(stderr()).toContain(`${id} ended: completed`);
    } finally {
      release();
      await transport.close();
    }
  });

  it('returns structuredContent from every tool, valid against the outputSchema it declares, and the same data in text', async () => {
    const db = join(dir, 'structured.db');
    const { client, transport } = await connect(db);
    const release = hold();
    try {
      // Listing the tools lets the SDK's client check every structuredContent below against its outputSchema.
      const { tools } = await client.listTools();
      for (const t of tools) {
        expect(t.outputSchema?.type, t.name).toBe('object');
        expect(Object.keys(t.outputSchema?.properties ?? {}).length, t.name).toBeGreaterThan(0);
      }
      const started = await call(client, 'conclave_start', { question: 'Should we do A?', preset: presetFile });
      const id = lastJson<{ id: string }>(started).id;
      expect(started.structuredContent).toEqual({ id, status: 'running' });

      const early = await call(client, 'conclave_wait', { id, maxSeconds: 1 });
      expect(early.structuredContent).toMatchObject({ id, status: 'running', ended: false, progress: { round: 0, lastJudgeScore: null } });
      release();
      let done = await call(client, 'conclave_wait', { id, maxSeconds: 120 });
      while ((done.structuredContent as { ended: boolean }).ended === false) done = await call(client, 'conclave_wait', { id, maxSeconds: 120 });
      expect(done.structuredContent).toMatchObject({ id, status: 'completed', ended: true, debate: { id, status: 'completed', format: 'conclave.debate.summary' } });
      expect((done.structuredContent as { debate: unknown }).debate).toEqual(lastJson(done));

      const shown = await call(client, 'conclave_show', { id });
      expect(shown.structuredContent).toMatchObject({ id, status: 'completed', document: { id } });
      expect((shown.structuredContent as { document: unknown }).document).toEqual(lastJson(shown));

      const listed = await call(client, 'conclave_list', { limit: 1 });
      expect(listed.structuredContent).toEqual({ debates: lastJson(listed), total: 1, database: db });

      const presets = await call(client, 'conclave_presets');
      expect((presets.structuredContent as { presets: unknown }).presets).toEqual(lastJson(presets));
      const models = await call(client, 'conclave_models', { preset: presetFile });
      expect(models.structuredContent).toEqual(lastJson(models));
      expect(models.structuredContent).toMatchObject({ missing: [], hosts: [{ url: sim.url, reachable: true }] });

      // A tool error stays text alone: there is nothing structured to report.
      const bad = await call(client, 'conclave_show', { id: 'nope-123' });
      expect([bad.isError, bad.structuredContent]).toEqual([true, undefined]);
    } finally {
      release();
      await transport.close();
    }
  });

  it('lists the built-in presets with their protocols, and the models of its host', async () => {
    const { client, transport } = await connect(join(dir, 'catalog.db'));
    try {
      const presets = lastJson<{ name: string; protocol: string; models: string[] }[]>(await call(client, 'conclave_presets'));
      expect(presets.map((p) => p.name)).toContain('tech-decision');
      expect(presets.find((p) => p.name === 'tournament')?.protocol).toBe('tournament');
      expect(presets.find((p) => p.name === 'tech-decision')?.models.length).toBeGreaterThan(2);

      const models = await call(client, 'conclave_models', { preset: presetFile });
      expect(models.isError).toBeFalsy();
      const m = lastJson<{ hosts: { url: string; reachable: boolean; models: { name: string }[] }[]; missing: string[]; needs: string[] }>(models);
      expect(m.hosts).toEqual([expect.objectContaining({ url: sim.url, reachable: true })]);
      expect(m.hosts[0]!.models.map((x) => x.name).sort()).toEqual(simModels(preset).map((x) => x.name).sort());
      expect(m.missing).toEqual([]);
      expect((lastJson<{ missing: string[] }>(await call(client, 'conclave_models', { preset: 'tech-decision' }))).missing.length).toBeGreaterThan(0);
    } finally {
      await transport.close();
    }
  });

  it('answers bad input with a tool error carrying the CLI message and hint, and goes on serving', async () => {
    const { client, transport } = await connect(join(dir, 'errors.db'));
    try {
      const empty = await call(client, 'conclave_start', { question: '   ', preset: presetFile });
      expect(empty.isError).toBe(true);
      expect(text(empty)).toContain('The question is empty.');
      expect(text(empty)).toContain('Hint: ');

      const unknown = await call(client, 'conclave_start', { question: 'Q?', preset: 'no-such-preset' });
      expect(unknown.isError).toBe(true);
      expect(text(unknown)).toContain('no-such-preset');
      expect(text(unknown)).toMatch(/Hint: .*presets/);

      const missing = join(dir, 'not-there.md');
      const attach = await call(client, 'conclave_start', { question: 'Q?', preset: presetFile, attach: [missing] });
      expect(attach.isError).toBe(true);
      expect(text(attach)).toContain(missing);
      const folder = join(dir, 'a-folder');
      mkdirSync(folder, { recursive: true });
      const notFile = await call(client, 'conclave_start', { question: 'Q?', preset: presetFile, attach: [folder] });
      expect(notFile.isError).toBe(true);
      expect(text(notFile)).toContain(folder);

      for (const tool of ['conclave_wait', 'conclave_show']) {
        const r = await call(client, tool, { id: 'nope-123' });
        expect(r.isError, tool).toBe(true);
        expect(text(r)).toContain('nope-123');
        expect(text(r)).toContain('Hint: ');
      }
      const lacking = join(dir, 'lacking.json');
      writeFileSync(lacking, JSON.stringify({ ...preset, judge: { model: 'absent:70b' } }));
      const noModel = await call(client, 'conclave_start', { question: 'Q?', preset: lacking });
      expect(noModel.isError).toBe(true);
      expect(text(noModel)).toContain('absent:70b');
      expect(text(noModel)).toContain('ollama pull absent:70b');

      const tooLong = await call(client, 'conclave_wait', { id: 'x', maxSeconds: 601 });
      expect(tooLong.isError).toBe(true);

      // Nothing was started by any of them, and the server still answers.
      expect(lastJson<unknown[]>(await call(client, 'conclave_list'))).toEqual([]);
    } finally {
      await transport.close();
    }
  });

  it('says how many debates matched when the limit cuts the list, not the limit as the total', async () => {
    const db = join(dir, 'two.db');
    for (let i = 0; i < 2; i++) expect((await runCli(['demo', '--db', db, '--quiet', '--token-ms', '0'], dir)).code).toBe(0);
    const { client, transport } = await connect(db);
    try {
      const cut = await call(client, 'conclave_list', { limit: 1 });
      expect(lastJson<unknown[]>(cut)).toHaveLength(1);
      expect(text(cut)).toContain('1 of 2 debates');
      expect(text(await call(client, 'conclave_list', { limit: 5 }))).toContain('2 debates in');
    } finally {
      await transport.close();
    }
  });

  it('reports a debate that fails as ended, with its status and reason, not as a tool error', async () => {
    const { client, transport } = await connect(join(dir, 'failing.db'));
    failOpenings = true;
    try {
      const id = await startDebate(client);
      const r = await call(client, 'conclave_wait', { id, maxSeconds: 120 });
      expect(r.isError, text(r)).toBeFalsy();
      expect(text(r)).toContain(`Debate ${id} has ended: failed (too_few_answers).`);
      expect(r.content).toHaveLength(4);
      expect(text(r)).toMatch(/why debate \S+ ended as it did[^\n]*\nBEGIN PANEL TEXT (\w+)\nThe debate \S+ failed: [\s\S]*\nEND PANEL TEXT \1\n/);
      expect(text(r)).toContain('only 0 of 2 agents gave a usable answer in round 0');
      expect(lastJson<{ status: string }>(r).status).toBe('failed');
      expect(lastJson<unknown[]>(await call(client, 'conclave_list', { status: 'failed' }))).toHaveLength(1);
    } finally {
      failOpenings = false;
      await transport.close();
    }
  });

  it('leaves a running debate interrupted and resumable when the client goes away', async () => {
    const db = join(dir, 'closed.db');
    const { client, transport, stderr } = await connect(db);
    const release = hold();
    let id = '';
    try {
      id = await startDebate(client);
      expect(text(await call(client, 'conclave_wait', { id, maxSeconds: 0.5 }))).toContain('still running');
    } finally {
      await transport.close();
    }
    expect(stderr()).toContain('the client closed standard input: stopping 1 running debate');
    const store = openStore(db);
    try {
      expect(store.getDebate(id).status).toBe('interrupted');
    } finally {
      store.close();
    }
    release();
    const resumed = await runCli(['resume', id, '--db', db, '--host', sim.url, '--json'], dir);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect((JSON.parse(resumed.stdout) as { status: string }).status).toBe('completed');
  });

  it('stops a running debate on conclave_stop: interrupted, sealed, verifiable and resumable, while the server serves on', async () => {
    const db = join(dir, 'stopped.db');
    const { client, transport } = await connect(db);
    const release = hold();
    let id = '';
    try {
      id = await startDebate(client);
      const stopped = await call(client, 'conclave_stop', { id });
      expect(stopped.isError, text(stopped)).toBeFalsy();
      expect(stopped.structuredContent).toEqual({ id, status: 'interrupted', stopped: true });
      expect(text(stopped)).toContain(`Stopped debate ${id}: interrupted. Everything recorded is kept; \`conclave resume ${id}\` goes on with it from its last complete round.`);
      const waited = await call(client, 'conclave_wait', { id, maxSeconds: 5 });
      expect(text(waited)).toContain(`Debate ${id} has ended: interrupted`);
      expect(text(waited)).toContain('the MCP client stopped it with conclave_stop');
      const again = await call(client, 'conclave_stop', { id });
      expect(again.structuredContent).toEqual({ id, status: 'interrupted', stopped: false });
      expect(text(again)).toContain('had already ended (interrupted): nothing was stopped.');
      const unknown = await call(client, 'conclave_stop', { id: 'nope' });
      expect(unknown.isError).toBe(true);
      expect(text(unknown)).toContain('No debate `nope`');
    } finally {
      release();
      await transport.close();
    }
    const verified = await runCli(['verify', id, '--db', db], dir);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    const resumed = await runCli(['resume', id, '--db', db, '--host', sim.url, '--json'], dir);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect((JSON.parse(resumed.stdout) as { status: string }).status).toBe('completed');
  });

  it('refuses to stop a debate another process runs, saying where to stop it', async () => {
    const db = join(dir, 'elsewhere.db');
    const first = await connect(db);
    const second = await connect(db);
    const release = hold();
    try {
      const id = await startDebate(first.client);
      const r = await call(second.client, 'conclave_stop', { id });
      expect(r.isError).toBe(true);
      expect(text(r)).toContain(`Debate ${id} is running in another process (pid `);
      expect(text(r)).toContain('conclave_stop stops only the debates this server started.');
      expect(text(r)).toContain('Hint: Stop it where it runs');
    } finally {
      release();
      await first.transport.close();
      await second.transport.close();
    }
  });

  it('runs no debate to its end for a conclave_start the client cancelled: it never learns the id', async () => {
    const db = join(dir, 'cancelled.db');
    const { client, transport, stderr } = await connect(db);
    // The debate would wait at round 0's judge: stopped by the cancellation, it has ended before it could go on.
    const release = hold();
    // conclave_start answers only once the debate's first rows are written: a write lock held here keeps it from answering.
    const holder = new Database(db);
    try {
      holder.exec('BEGIN IMMEDIATE');
      const abort = new AbortController();
      const started = client.callTool({ name: 'conclave_start', arguments: { question: 'Should we do A?', preset: presetFile } }, undefined, { signal: abort.signal });
      // The debate has started and its id has not gone back.
      await stderrSays(transport, stderr, 'Waiting to write');
      abort.abort('the user changed their mind');
      await expect(started).rejects.toThrow();
      // The server reads its messages in order: once it answers a ping, it has read the cancellation sent before it.
      await client.ping();
      holder.exec('ROLLBACK');
      await stderrSays(transport, stderr, 'the database is free again');
      const store = openStore(db);
      const ids = store.listDebates().map((d) => d.id);
      store.close();
      expect(ids, stderr()).toHaveLength(1);
      // A debate that went on would still be waiting for its judge, running.
      const ended = await call(client, 'conclave_wait', { id: ids[0], maxSeconds: 30 });
      expect(ended.structuredContent, stderr()).toMatchObject({ status: 'interrupted', ended: true });
    } finally {
      release();
      holder.close();
      await transport.close();
    }
  }, 60_000);

  it('serves two clients on one database: one waits for and lists the debate the other started', async () => {
    const db = join(dir, 'shared.db');
    const first = await connect(db);
    const second = await connect(db);
    const release = hold();
    try {
      const id = await startDebate(first.client);
      const early = await call(second.client, 'conclave_wait', { id, maxSeconds: 0.5 });
      expect(text(early)).toContain('It runs in another process on the same database.');
      release();
      const done = await call(second.client, 'conclave_wait', { id, maxSeconds: 120 });
      expect(text(done)).toContain(`Debate ${id} has ended: completed`);
      expect(lastJson<{ id: string }[]>(await call(second.client, 'conclave_list')).map((d) => d.id)).toEqual([id]);
    } finally {
      release();
      await first.transport.close();
      await second.transport.close();
    }
  });

  it('cuts a runaway reply in conclave_show, saying so, and returns it whole with full: true', async () => {
    const db = join(dir, 'runaway.db');
    const store = openStore(db);
    const id = 'd-runaway';
    const runaway = `${'lorem ipsum '.repeat(15_000)}END`;
    try {
      store.createDebate({ id, question: 'Q?', preset, engineVersion: 'test', host: sim.url, agents: preset.agents.map((a) => ({ id: a.id, model: a.model, persona: null, cluster: null, role: 'debater' as const, digest: null })), createdAt: 1 });
      store.recordCall({
        debateId: id, stage: 'opening', round: 0, agentId: 'a', attempt: 0, host: sim.url, model: preset.agents[0]!.model,
        messages: [{ role: 'user', content: 'Q?' }], options: {}, format: null, raw: runaway, parsed: null, status: 'invalid', validationError: 'not JSON', error: null, truncation: null,
        metrics: { promptTokens: 1, completionTokens: 1, totalDurationNs: 1, loadDurationNs: 0, promptEvalDurationNs: 0, evalDurationNs: 1, doneReason: 'stop' }, startedAt: 1, finishedAt: 2,
      });
    } finally {
      store.close();
    }
    const { client, transport } = await connect(db);
    try {
      const shown = await call(client, 'conclave_show', { id });
      expect(shown.isError, text(shown)).toBeFalsy();
      const raw = (shown.structuredContent as { document: { calls: { raw: string }[] } }).document.calls[0]!.raw;
      expect(raw.startsWith(runaway.slice(0, 100_000))).toBe(true);
      expect(raw).toContain(`… [${runaway.length - 100_000} more characters cut here; call conclave_show with full: true`);
      expect(raw).not.toContain('END');
      expect(text(shown)).toContain(`1 text longer than 100,000 characters is cut there (${(runaway.length - 100_000).toLocaleString('en-US')} characters left off, each cut marked)`);
      const full = await call(client, 'conclave_show', { id, full: true });
      expect((full.structuredContent as { document: { calls: { raw: string }[] } }).document.calls[0]!.raw).toBe(runaway);
      expect(text(full)).not.toContain('cut there');
    } finally {
      await transport.close();
    }
  });

  it('writes nothing but JSON-RPC messages on standard output, a whole debate long', async () => {
    const db = join(dir, 'raw.db');
    const child = spawn(process.execPath, [BIN, 'mcp', '--db', db, '--host', sim.url, '--allow-dir', dir], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let all = '';
    const waiting = new Map<number, (msg: { result?: CallToolResult }) => void>();
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      for (const line of out.split('\n').slice(0, -1)) {
        const msg = JSON.parse(line) as { id?: number; result?: CallToolResult };
        if (msg.id !== undefined) waiting.get(msg.id)?.(msg);
      }
      out = out.slice(out.lastIndexOf('\n') + 1);
      all += d.toString();
    });
    let next = 0;
    const request = (method: string, params: unknown): Promise<{ result?: CallToolResult }> => {
      const id = ++next;
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
      return new Promise((resolve) => waiting.set(id, resolve));
    };
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } });
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    const started = await request('tools/call', { name: 'conclave_start', arguments: { question: 'Should we do A?', preset: presetFile } });
    const id = lastJson<{ id: string }>(started.result!).id;
    const done = await request('tools/call', { name: 'conclave_wait', arguments: { id, maxSeconds: 120 }, _meta: { progressToken: 'raw-1' } });
    expect(text(done.result!)).toContain('has ended: completed');
    await request('tools/call', { name: 'conclave_show', arguments: { id } });
    child.stdin.end();
    expect(await exited).toBe(0);
    const lines = all.split('\n').filter((l) => l !== '');
    expect(lines.length).toBeGreaterThan(5);
    for (const line of lines) expect((JSON.parse(line) as { jsonrpc: string }).jsonrpc).toBe('2.0');
    expect(lines.some((l) => l.includes('notifications/progress'))).toBe(true);
  });
});
