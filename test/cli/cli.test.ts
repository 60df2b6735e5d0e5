import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import type { CliIO } from '../../src/cli/io.js';
import { packagePath } from '../../src/package-root.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { scriptedResponder, simModels, testPreset } from '../helpers/panel.js';
import { capture, runCli } from '../helpers/cli.js';

async function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const stdout = capture();
  const stderr = capture();
  const io: CliIO = { stdout, stderr, env: { ...env }, cwd: dir };
  const code = await main(args, io);
  return { code, stdout: stdout.text, stderr: stderr.text };
}

let dir = '';
let db = '';
let presetFile = '';
let sim: SimHandle;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-cli-'));
  db = join(dir, 'record.db');
  const preset = testPreset(['a', 'b', 'c']);
  presetFile = join(dir, 'panel.json');
  writeFileSync(presetFile, JSON.stringify(preset));
  sim = await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.3, 0.9]).respond });
});

afterAll(async () => {
  await sim?.close();
});

describe('conclave CLI', () => {
  let debateId = '';

  it('runs a debate and prints one JSON object with the id at the top level, progress on stderr', async () => {
    const r = await cli(['run', 'Should we do A?', '--preset', presetFile, '--host', sim.url, '--db', db, '--json']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { id: string; status: string; rounds: unknown[]; calls: unknown[]; synthesis: unknown };
    expect(doc.id).toMatch(/^\d{6}-\d{6}-[0-9a-f]{8}$/);
    expect(doc.status).toBe('completed');
    expect(doc.rounds).toHaveLength(2);
    expect(doc.calls.length).toBeGreaterThanOrEqual(9);
    expect(r.stderr).toContain('Round 0 · independent answers');
    expect(r.stderr).toContain('judge: convergence 0.90');
    debateId = doc.id;
  });

  it('runs one agent on another model with --agent ID=MODEL, recorded in the preset snapshot, and names an unknown id with the nearest one', async () => {
    const r = await cli(['run', 'Should we do A?', '--preset', presetFile, '--host', sim.url, '--db', db, '--json', '--quiet', '--agent', 'a=model-2:1b', '--agent', 'b=judge:1b']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { preset: { agents: { id: string; model: string }[] }; calls: { agentId: string | null; model: string; stage: string }[] };
    expect(doc.preset.agents.map((a) => [a.id, a.model])).toEqual([['a', 'model-2:1b'], ['b', 'judge:1b'], ['c', 'model-2:1b']]);
    const modelsOf = (agent: string) => [...new Set(doc.calls.filter((c) => c.agentId === agent && c.stage !== 'judge' && c.stage !== 'synthesis').map((c) => c.model))];
    expect([modelsOf('a'), modelsOf('b'), modelsOf('c')]).toEqual([['model-2:1b'], ['judge:1b'], ['model-2:1b']]);

    const unknown = await cli(['run', 'Q?', '--preset', presetFile, '--host', sim.url, '--db', db, '--agent', 'aa=model-2:1b']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--agent names `aa`, which is not an agent of the preset test-panel. Did you mean `a`?');
    expect(unknown.stderr).toContain('Its agents are a, b, c.');
    const malformed = await cli(['run', 'Q?', '--preset', presetFile, '--host', sim.url, '--db', db, '--agent', 'a']);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('--agent takes ID=MODEL; got `a`.');
    // A model no host has is named as any missing model of a preset is.
    const absent = await cli(['run', 'Q?', '--preset', presetFile, '--host', sim.url, '--db', db, '--agent', 'c=absent:70b']);
    expect(absent.code).toBe(3);
    expect(absent.stderr).toContain('ollama pull absent:70b');
    expect(absent.stderr).not.toContain('Did you mean');
    // A name one slip from a served model, numbers alike, is a typo to correct, not a model to pull; another size is pulled.
    const typo = await cli(['run', 'Q?', '--preset', presetFile, '--host', sim.url, '--db', db, '--agent', 'c=model_2:1b', '--agent', 'b=model-2:7b']);
    expect(typo.code).toBe(3);
    expect(typo.stderr).toContain('Did you mean `model-2:1b` for `model_2:1b`? It is served there.');
    expect(typo.stderr).toContain('Correct that name in the preset (or pass --agent ID=MODEL), and run `ollama pull model-2:7b` on that host.');
    expect(typo.stderr).not.toContain('ollama pull model_2:1b');
  });

  it('prints the plan, the calls and estimates with --dry-run, calling no model and recording nothing', async () => {
    const chats: string[] = [];
    const script = scriptedResponder([0.3, 0.9]);
    const preset = testPreset(['a', 'b', 'c']);
    const watched = await startSimulator({ models: simModels(preset), respond: (req) => (chats.push(req.model), script.respond(req)) });
    try {
      const fresh = join(dir, 'dry-run.db');
      const r = await cli(['run', 'Should we do A?', '--preset', presetFile, '--host', watched.url, '--db', fresh, '--dry-run']);
      expect(r.code).toBe(0);
      expect(chats).toEqual([]);
      expect(existsSync(fresh)).toBe(false);
      expect(r.stdout).toContain('no model was called and nothing was recorded. Every figure below is an estimate.');
      expect(r.stdout).toContain(`${watched.url}: Ollama`);
      // Three agents over round 0 and 3 critique rounds, a judge call per round, one synthesis: 12 + 4 + 1.
      expect(r.stdout).toMatch(/a: critique rounds\s+model-0:1b\s+3 /);
      expect(r.stdout).toMatch(/judge, each round\s+judge:1b\s+4 /);
      expect(r.stdout).toMatch(/17 calls, about [\d,]+ tokens at most/);
      expect(r.stdout).toMatch(/about \d+ (s|min)/);
      const asJson = JSON.parse((await cli(['run', 'Q?', '--preset', presetFile, '--host', watched.url, '--db', fresh, '--dry-run', '--json'])).stdout) as { estimate: boolean; calls: number; tokens: number };
      expect(asJson).toMatchObject({ estimate: true, calls: 17 });
      expect(asJson.tokens).toBeGreaterThan(17 * 64);
      expect(chats).toEqual([]);
    } finally {
      await watched.close();
    }
  });

  it('prints the card on stdout and nothing on stderr with --quiet', async () => {
    const r = await cli(['run', 'Q2?', '--preset', presetFile, '--host', sim.url, '--db', db, '--quiet']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('RECOMMENDATION');
    expect(r.stdout).toContain('TRIGGERS TO REVISIT');
    expect(r.stderr).toBe('');
  });

  it('reads the host from OLLAMA_HOST when --host is absent', async () => {
    const r = await cli(['run', 'Q3?', '--preset', presetFile, '--db', db, '--quiet', '--max-rounds', '0'], { OLLAMA_HOST: sim.url });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('0 critique rounds');
  });

  it('lets an explicit --host replace the host list written in the preset', async () => {
    const withHosts = join(dir, 'with-hosts.json');
    writeFileSync(withHosts, JSON.stringify({ ...testPreset(['a', 'b', 'c']), hosts: [{ url: 'http://127.0.0.1:9' }] }));
    const unreachable = await cli(['run', 'Q?', '--preset', withHosts, '--db', db, '--quiet'], { OLLAMA_HOST: sim.url });
    expect(unreachable.code).toBe(3);
    const r = await cli(['run', 'Q?', '--preset', withHosts, '--host', sim.url, '--db', db, '--quiet', '--max-rounds', '0']);
    expect(r.code).toBe(0);
  });

  it('lists, shows, exports and replays stored debates without a model server', async () => {
    const list = await cli(['list', '--db', db, '--json']);
    expect(JSON.parse(list.stdout).map((d: { id: string }) => d.id)).toContain(debateId);
    const show = await cli(['show', debateId, '--db', db, '--json']);
    expect(JSON.parse(show.stdout).id).toBe(debateId);
    const md = await cli(['export', debateId, '--format', 'md', '--db', db]);
    expect(md.stdout).toContain('## Round 1: critique');
    const replay = await cli(['replay', debateId, '--db', db], { OLLAMA_HOST: 'http://127.0.0.1:9' });
    expect(replay.code).toBe(0);
    expect(replay.stdout).toContain('Round 1 · critique');
    expect(replay.stdout).toContain('RECOMMENDATION');
  });

  it('explains an unknown preset and exits 2 without a stack trace', async () => {
    const r = await cli(['run', 'Q?', '--preset', 'nope', '--db', db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('There is no preset named `nope`');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('explains an invalid preset file with the field path', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'name: x\nagents:\n  - {id: a, model: m, colour: red}\n  - {id: b}\njudge: {model: j}\nsynthesizer: {model: s}\n');
    const r = await cli(['run', 'Q?', '--preset', bad, '--db', db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('agents.0: unknown field `colour`');
    expect(r.stderr).toContain('agents.1.model');
  });

  it('names an unreachable host and exits 3', async () => {
    const r = await cli(['run', 'Q?', '--preset', presetFile, '--host', 'http://127.0.0.1:9', '--db', db]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('Cannot reach Ollama at http://127.0.0.1:9');
    expect(r.stderr).toContain('ollama serve');
  });

  it('names missing models with the pull command, for run and for models --preset', async () => {
    const r = await cli(['run', 'Q?', '--preset', 'small-8gb', '--host', sim.url, '--db', db]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('ollama pull llama3.2:3b');
    const m = await cli(['models', '--preset', 'small-8gb', '--host', sim.url]);
    expect(m.code).toBe(3);
    expect(m.stdout).toContain('ollama pull qwen2.5:3b');
    expect(m.stdout).toContain('judge:1b');
    expect(m.stderr).toMatch(/Exit 3: the preset needs \d+ models missing here/);
    // The missing models and their pull commands line up in two columns; sizes line up on the right.
    const missingRows = m.stdout.split('\n').filter((l) => l.includes('ollama pull '));
    expect(missingRows.length).toBeGreaterThan(1);
    expect(new Set(missingRows.map((l) => l.indexOf('ollama pull '))).size).toBe(1);
    const sizes = m.stdout.split('\n').filter((l) => / GB /.test(l));
    expect(new Set(sizes.map((l) => l.indexOf(' GB '))).size).toBe(1);    // A pipe reads whole lines: the output ends with its last row and a newline, no dangling indent.
    expect(m.stdout).toMatch(/ollama pull \S+\n$/);
  });

  it('refuses a database file that is not SQLite, naming it, and exits 4', async () => {
    const notDb = join(dir, 'notes.txt');
    writeFileSync(notDb, 'just some text, not a database at all'.repeat(200));
    const r = await cli(['list', '--db', notDb]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(notDb);
  });

  it('says which id is unknown', async () => {
    const r = await cli(['show', 'zzz', '--db', db]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('No debate `zzz`');
  });

  it('rejects bad flag values and unknown commands with exit 2', async () => {
    expect((await cli(['run', 'Q?', '--preset', presetFile, '--threshold', '2', '--db', db])).code).toBe(2);
    expect((await cli(['frobnicate'])).code).toBe(2);
  });

  it('runs the no-GPU demo end to end', async () => {
    const r = await cli(['demo', '--db', join(dir, 'demo.db'), '--token-ms', '0']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('MINORITY POSITION');
    expect(r.stderr).toContain('Stopped: the panel converged');
  });
});

/** Runs the CLI from source in a child process and sends it Ctrl-C (SIGINT) once round 1 starts. */
async function interruptedInRound1(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', packagePath('src', 'cli', 'entry.ts'), ...args], {
    // tsx is resolved from the working directory, so run from the package root.
    cwd: packagePath(),
    env: { ...process.env, CI: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    if (stderr.includes('Round 1 · critique') && !child.killed) child.kill('SIGINT');
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  return { code, stderr };
}

describe('Ctrl-C during a run', () => {
  it('keeps what was recorded, marks the debate interrupted and exits 130', async () => {
    const preset = testPreset(['a', 'b']);
    const file = join(dir, 'slow.json');
    writeFileSync(file, JSON.stringify(preset));
    const script = scriptedResponder([0.1]);
    const slow = await startSimulator({ models: simModels(preset), respond: script.respond, tokenMs: 40 });
    const slowDb = join(dir, 'slow.db');
    try {
      const { code, stderr } = await interruptedInRound1(['run', 'Q?', '--preset', file, '--host', slow.url, '--db', slowDb]);
      expect(code).toBe(130);
      expect(stderr).toContain('marked interrupted');
      expect(stderr).toMatch(/go on from where it stopped with `conclave resume [0-9a-f-]+`/i);
      expect(stderr.match(/Stopped: interrupted/g)).toHaveLength(1);
      expect(stderr).not.toContain('the debate goes on');
      expect(stderr).not.toMatch(/\n\s+at /);
      const store = openStore(slowDb);
      const [row] = store.listDebates();
      expect(row!.status).toBe('interrupted');
      expect(store.getDebate(row!.id).calls.filter((c) => c.stage === 'opening' && c.status === 'ok')).toHaveLength(2);
      store.close();
    } finally {
      await slow.close();
    }
  });

  it('tells how to go on after a demo, whose simulator stops with it, and the resume completes against `conclave sim`', async () => {
    const demoDb = join(dir, 'demo-stopped.db');
    const { code, stderr } = await interruptedInRound1(['demo', '--db', demoDb, '--token-ms', '30']);
    expect(code).toBe(130);
    const id = /conclave resume ([0-9a-f-]+) --host http:\/\/127\.0\.0\.1:11434/.exec(stderr)?.[1];
    expect(stderr).toContain("The demo's simulator stopped with it");
    expect(stderr).toContain('`conclave sim`');
    expect(id).toBeDefined();
    // What the hint says, with a simulator of our own on a free port instead of 11434.
    const { builtinPresetNames, loadPreset } = await import('../../src/config/load-preset.js');
    const { demoResponder, simModelsFor } = await import('../../src/sim/demo.js');
    const presets = builtinPresetNames().map((n) => loadPreset(n).preset);
    const own = await startSimulator({ models: simModelsFor(presets), respond: demoResponder(presets) });
    try {
      const resumed = await runCli(['resume', id!, '--host', own.url, '--db', demoDb, '--quiet'], dir);
      expect(resumed.code).toBe(0);
      const store = openStore(demoDb);
      expect(store.getDebate(id!).status).toBe('completed');
      store.close();
    } finally {
      await own.close();
    }
  }, 60_000);
});
