import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIO } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import { builtinPresetNames, loadPreset } from '../../src/config/load-preset.js';
import { demoResponder, simModelsFor } from '../../src/sim/demo.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { capture } from '../helpers/cli.js';

const KEY = 'sk-test-3b1f9c0e7d5a';
const dir = mkdtempSync(join(tmpdir(), 'conclave-openai-'));
let vllm: SimHandle;
let ollama: SimHandle;
const bodies: { body: Record<string, unknown>; authorization: string | undefined }[] = [];

/** The CLI in-process, with the key in its environment as a user would export it. */
async function cli(args: string[], env: NodeJS.ProcessEnv = { VLLM_KEY: KEY }): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = capture();
  const stderr = capture();
  const io: CliIO = { stdout, stderr, env, cwd: dir };
  const code = await main(args, io);
  return { code, stdout: stdout.text, stderr: stderr.text };
}

interface DocCall {
  agentId: string;
  attempt: number;
  error: string | null;
  stage: string;
  round: number;
  host: string;
  api: string;
  startedAt: string;
  finishedAt: string;
  status: string;
}

const doc = async (id: string, db: string): Promise<{ status: string; calls: DocCall[] }> => JSON.parse((await cli(['show', id, '--db', db, '--json'])).stdout);
const idOf = (stderr: string): string => /Stored as (\S+)/.exec(stderr)?.[1] ?? '';

/** Every byte of the record: the database file and its write-ahead log, if any. */
function recordBytes(db: string): string {
  return readdirSync(dir)
    .filter((f) => f.startsWith(db.split('/').at(-1)!))
    .map((f) => readFileSync(join(dir, f)).toString('latin1'))
    .join('');
}

beforeAll(async () => {
  const presets = builtinPresetNames().map((n) => loadPreset(n).preset);
  const demo = demoResponder(presets);
  vllm = await startSimulator({ api: 'openai', apiKey: KEY, models: simModelsFor(presets), respond: demo, tokenMs: 2, numParallel: 4, observe: (r) => bodies.push(r) });
  ollama = await startSimulator({ models: simModelsFor(presets), respond: demo, tokenMs: 2, numParallel: 2 });
});

afterAll(async () => {
  await vllm?.close();
  await ollama?.close();
});

describe('an OpenAI-compatible server from the CLI', () => {
  it('runs a six-agent cluster vote, many calls sharing one stop signal, with no MaxListenersExceededWarning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => {
      warnings.push(`${w.name}: ${w.message}`);
    };
    process.on('warning', onWarning);
    const wide = await startSimulator({ api: 'openai', apiKey: KEY, models: simModelsFor([loadPreset('cluster-vote').preset]), respond: demoResponder([loadPreset('cluster-vote').preset]), tokenMs: 2, numParallel: 32 });
    try {
      const db = join(dir, 'cluster-vote.db');
      const run = await cli(['run', 'Should we migrate this tool from SQLite to Postgres now?', '--preset', 'cluster-vote', '--host', `${wide.url}/v1`, '--api', 'openai', '--api-key-env', 'VLLM_KEY', '--db', db]);
      expect(run.code).toBe(0);
      // A warning is emitted on the next tick: let it arrive before looking.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.includes('MaxListeners'))).toEqual([]);
      expect((await doc(idOf(run.stderr), db)).calls.filter((c) => c.stage === 'vote').length).toBeGreaterThan(10);
    } finally {
      process.off('warning', onWarning);
      await wide.close();
    }
  });

  const protocols = [
    ['debate', 'tech-decision'],
    ['parallel', 'parallel'],
    ['tournament', 'tournament'],
    ['decompose', 'decompose'],
    ['pipeline', 'code-review'],
  ] as const;
  for (const [kind, preset] of protocols) {
    it(`runs the ${kind} protocol (${preset}) on a /v1 server with a key, every call recorded as served by it`, async () => {
      const db = join(dir, `${preset}.db`);
      const before = bodies.length;
      const run = await cli(['run', 'Should we migrate this tool from SQLite to Postgres now?', '--preset', preset, '--host', `${vllm.url}/v1`, '--api', 'openai', '--api-key-env', 'VLLM_KEY', '--db', db]);
      // No stack trace (a frame reads `    at fn (file:line:col)`); a wrapped progress line may start with "at".
      expect(run.stderr).not.toMatch(/^\s+at .*:\d+:\d+\)?$/m);
      expect(run.code).toBe(0);
      const id = idOf(run.stderr);
      const d = await doc(id, db);
      expect(d.status).toBe('completed');
      expect(d.calls.length).toBeGreaterThan(2);
      for (const c of d.calls) {
        expect(c.api).toBe('openai');
        expect(c.host).toBe(`${vllm.url}/v1`);
      }
      // What went over the wire: streamed with usage, the schema as response_format, the key as a bearer header.
      const sent = bodies.slice(before);
      expect(sent.length).toBe(d.calls.length);
      for (const { body, authorization } of sent) {
        expect(body.stream).toBe(true);
        expect(body.stream_options).toEqual({ include_usage: true });
        const format = body.response_format as { type: string; json_schema: { name: string; schema: { type: string; properties: object } } };
        expect(format.type).toBe('json_schema');
        expect(format.json_schema.schema.type).toBe('object');
        expect(Object.keys(format.json_schema.schema.properties).length).toBeGreaterThan(0);
        expect(body).not.toHaveProperty('options');
        expect(body).not.toHaveProperty('format');
        expect(authorization).toBe(`Bearer ${KEY}`);
      }
      // Tokens were counted from the usage chunk.
      const stored = new Database(db, { readonly: true });
      const counted = stored.prepare('select count(*) as n from calls where debate_id = ? and prompt_tokens > 0 and completion_tokens > 0').get(id) as { n: number };
      stored.close();
      expect(counted.n).toBe(d.calls.length);
      expect(recordBytes(db)).not.toContain(KEY);
      expect((await cli(['verify', id, '--db', db])).stdout).toContain('sealed');
    });
  }

  it('says an OpenAI-compatible server given without --api is one, with the flags that reach it, not that it cannot be reached', async () => {
    const db = join(dir, 'not-ollama.db');
    const run = await cli(['run', 'Is a monorepo right for us?', '--preset', 'tech-decision', '--host', vllm.url, '--db', db]);
    expect(run.code).toBe(3);
    expect(run.stderr).not.toContain('Cannot reach');
    expect(run.stderr).toContain(`${vllm.url} is an OpenAI-compatible server, not Ollama`);
    expect(run.stderr).toContain(`--host ${vllm.url}/v1 --api openai`);
    const models = await cli(['models', '--host', vllm.url]);
    expect(models.code).toBe(3);
    expect(models.stderr).not.toContain('`null`');
    expect(models.stderr).toContain(`--host ${vllm.url}/v1 --api openai`);
  });

  it('sends round 0 of a debate in parallel to the server', async () => {
    const db = join(dir, 'parallel-round0.db');
    const run = await cli(['run', 'Is a monorepo right for us?', '--preset', 'tech-decision', '--host', `${vllm.url}/v1`, '--api', 'openai', '--api-key-env', 'VLLM_KEY', '--db', db]);
    expect(run.code).toBe(0);
    const opening = (await doc(idOf(run.stderr), db)).calls.filter((c) => c.stage === 'opening');
    // A send that fails for a passing reason on a loaded machine is sent again, as its own call: each agent's first send is what round 0 sends at once.
    const firstSends = new Map<string, (typeof opening)[number]>();
    for (const c of [...opening].sort((x, y) => Date.parse(x.startedAt) - Date.parse(y.startedAt))) if (!firstSends.has(c.agentId)) firstSends.set(c.agentId, c);
    const seen = JSON.stringify(opening.map((c) => [c.agentId, c.attempt, c.status, c.error]));
    expect(firstSends.size, seen).toBe(3);
    expect(new Set(opening.filter((c) => c.status === 'ok').map((c) => c.agentId)).size, seen).toBe(3);
    const spans = [...firstSends.values()].map((c) => [Date.parse(c.startedAt), Date.parse(c.finishedAt)] as const);
    // Each agent's first opening call started before any of them finished.
    const firstEnd = Math.min(...spans.map(([, e]) => e));
    expect(spans.filter(([s]) => s < firstEnd).length, seen).toBe(3);
  });

  it('runs a debate over a pool that mixes an Ollama host and an OpenAI-compatible one, and says which served each call', async () => {
    const hosts = join(dir, 'mixed.yaml');
    writeFileSync(hosts, `- url: ${ollama.url}\n  numParallel: 2\n- url: ${vllm.url}/v1\n  api: openai\n  apiKeyEnv: VLLM_KEY\n  numParallel: 4\n`);
    const db = join(dir, 'mixed.db');
    const run = await cli(['run', 'Should we migrate this tool from SQLite to Postgres now?', '--preset', 'tech-decision', '--hosts', hosts, '--db', db]);
    expect(run.code).toBe(0);
    const id = idOf(run.stderr);
    const d = await doc(id, db);
    const served = new Set(d.calls.map((c) => `${c.api} ${c.host}`));
    expect(served).toEqual(new Set([`ollama ${ollama.url}`, `openai ${vllm.url}/v1`]));
    const shown = (await cli(['show', id, '--db', db])).stdout;
    expect(shown).toContain(`- Host ${vllm.url}/v1: OpenAI-compatible server (key from $VLLM_KEY): manages its own memory, 4 parallel slots per model`);
    expect(shown).toMatch(new RegExp(`- Host ${ollama.url}: Ollama, \\d+ GiB VRAM, 2 parallel slots per model`));
    expect(shown).toMatch(/- Calls served: .*\(Ollama\) \d+, .*\(OpenAI-compatible\) \d+|- Calls served: .*\(OpenAI-compatible\) \d+, .*\(Ollama\) \d+/);
    expect(recordBytes(db)).not.toContain(KEY);

    const listed = await cli(['hosts', '--hosts', hosts]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`${vllm.url}/v1 · OpenAI-compatible · key from $VLLM_KEY · manages its own memory · 4 slots per model (config)`);
    expect(listed.stdout).toContain(`${ollama.url} · Ollama`);
    const models = await cli(['models', '--hosts', hosts, '--preset', 'tech-decision']);
    expect(models.code).toBe(0);
    expect(models.stdout).toContain(`${vllm.url}/v1 · OpenAI-compatible`);
    expect(models.stdout).toContain('qwen2.5:7b');
    expect(models.stdout).toContain('Preset tech-decision: all');
  });

  it('lists what /v1/models serves, with the context length the server gives', async () => {
    const models = await cli(['models', '--host', `${vllm.url}/v1`, '--api', 'openai', '--api-key-env', 'VLLM_KEY', '--json']);
    expect(models.code).toBe(0);
    const listed = JSON.parse(models.stdout) as { api: string; models: { name: string }[] };
    expect(listed.api).toBe('openai');
    expect(listed.models.map((m) => m.name)).toContain('llama3.1:8b');
    const hosts = await cli(['hosts', '--host', `${vllm.url}/v1`, '--api', 'openai', '--api-key-env', 'VLLM_KEY']);
    // No numParallel given: the slot count comes from the server (llama-server's /props).
    expect(hosts.stdout).toContain('4 slots per model (probe)');
    expect(hosts.stdout).toMatch(/llama3\.1:8b\s+\d+/);
  });

  it('stops with a clear message, no stack and nothing recorded when the server refuses the key', async () => {
    const db = join(dir, 'refused.db');
    const run = await cli(['run', 'Is it worth it?', '--preset', 'tech-decision', '--host', `${vllm.url}/v1`, '--api', 'openai', '--api-key-env', 'VLLM_KEY', '--db', db], { VLLM_KEY: 'sk-wrong-key-000' });
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('refused the API key (HTTP 401)');
    expect(run.stderr).toContain('Set VLLM_KEY to a key this server accepts');
    expect(run.stderr).not.toContain('sk-wrong-key-000');
    expect(run.stderr).not.toContain('    at ');
    expect((await cli(['list', '--db', db])).stdout).not.toContain('Is it worth it?');

    const unset = await cli(['run', 'Is it worth it?', '--preset', 'tech-decision', '--host', `${vllm.url}/v1`, '--api', 'openai', '--api-key-env', 'VLLM_KEY', '--db', db], {});
    expect(unset.code).toBe(2);
    expect(unset.stderr).toContain('The environment variable VLLM_KEY, which holds the API key for');
    const noV1 = await cli(['run', 'Is it worth it?', '--preset', 'tech-decision', '--host', vllm.url, '--api', 'openai', '--db', db]);
    expect(noV1.code).toBe(2);
    expect(noV1.stderr).toContain('does not end in /v1');
  });

  it('runs the arithmetic bench on a /v1 server, its baseline calls recorded as served by it, and synthesizes a stored debate there again', async () => {
    const db = join(dir, 'bench.db');
    const bench = await cli(['bench', '--suite', 'arithmetic', '--preset', 'small-8gb', '--limit', '2', '--host', `${vllm.url}/v1`, '--api', 'openai', '--api-key-env', 'VLLM_KEY', '--db', db, '--quiet']);
    expect(bench.stderr).not.toContain('    at ');
    expect(bench.stderr).toBe('');
    expect(bench.code).toBe(0);
    const stored = new Database(db, { readonly: true });
    const apis = stored.prepare('select api, host, count(*) as n from bench_calls group by api, host').all() as { api: string | null; host: string; n: number }[];
    const debateApis = stored.prepare('select distinct api from calls').all() as { api: string | null }[];
    const debateId = (stored.prepare('select id from debates limit 1').get() as { id: string }).id;
    stored.close();
    expect(apis).toEqual([{ api: 'openai', host: `${vllm.url}/v1`, n: apis[0]!.n }]);
    expect(apis[0]!.n).toBeGreaterThan(0);
    expect(debateApis).toEqual([{ api: 'openai' }]);

    const again = await cli(['synthesize', debateId, '--db', db, '--host', `${vllm.url}/v1`, '--api', 'openai', '--api-key-env', 'VLLM_KEY', '--quiet']);
    expect(again.code).toBe(0);
    const calls = (await doc(debateId, db)).calls;
    expect(calls.at(-1)!.stage).toBe('synthesis');
    expect(calls.at(-1)!.api).toBe('openai');

    // The record names that server and its key variable; a record can come from someone else, so without --host the key goes only with consent.
    const before = (await doc(debateId, db)).calls.length;
    const refused = await cli(['synthesize', debateId, '--db', db, '--quiet']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`The record names the server ${vllm.url}/v1 and asks to send it the API key in $VLLM_KEY`);
    expect(refused.stderr).toContain('--trust-recorded-hosts');
    expect((await doc(debateId, db)).calls.length).toBe(before);
    const trusted = await cli(['synthesize', debateId, '--db', db, '--quiet', '--trust-recorded-hosts']);
    expect(trusted.code, trusted.stderr).toBe(0);
    expect((await doc(debateId, db)).calls.at(-1)!.api).toBe('openai');
  });

  it('sends a call again after a 5xx or a stream that breaks mid-reply, as for Ollama, recording each failed try', async () => {
    const presets = builtinPresetNames().map((n) => loadPreset(n).preset);
    const demo = demoResponder(presets);
    let calls = 0;
    const flaky = await startSimulator({
      api: 'openai',
      models: simModelsFor(presets),
      tokenMs: 1,
      numParallel: 4,
      respond: (req) => {
        calls += 1;
        if (calls === 1) return { error: 'runner process has terminated', status: 500 };
        if (calls === 2) return { error: 'connection to the runner was lost', failAfterTokens: 3 };
        return demo(req);
      },
    });
    try {
      const db = join(dir, 'flaky.db');
      const run = await cli(['run', 'Is it worth it?', '--preset', 'parallel', '--host', `${flaky.url}/v1`, '--api', 'openai', '--db', db]);
      expect(run.code).toBe(0);
      const stored = new Database(db, { readonly: true });
      const failed = stored.prepare("select error from calls where status = 'error' order by id").all() as { error: string }[];
      stored.close();
      expect(failed.map((f) => f.error.split(':')[0])).toEqual(['SERVER_ERROR', 'STREAM_ERROR']);
      expect((await doc(idOf(run.stderr), db)).status).toBe('completed');
    } finally {
      await flaky.close();
    }
  });
});
