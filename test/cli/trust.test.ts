import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIO } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import { readPresetAttachments } from '../../src/config/attachments.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { capture } from '../helpers/cli.js';
import { scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

const KEY = 'sk-secret-9f8e7d6c5b4a';
const SECRET = 'AWS_SECRET=do-not-send-me';
let dir = '';
let home = '';
let sim: SimHandle;
let keyed: SimHandle;
const seen: { authorization: string | undefined; body: Record<string, unknown> }[] = [];
const panel = testPreset(['a', 'b'], { protocol: { maxRounds: 0, convergenceThreshold: 0.85 } });

async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = capture();
  const stderr = capture();
  const io: CliIO = { stdout, stderr, env, cwd: dir };
  const code = await main(args, io);
  return { code, stdout: stdout.text, stderr: stderr.text };
}

function writePreset(folder: string, extra: Record<string, unknown>): string {
  mkdirSync(folder, { recursive: true });
  const file = join(folder, `preset-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ ...panel, ...extra }));
  return file;
}

const sent = (): string => JSON.stringify(seen.map((s) => s.body));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-trust-'));
  // A home folder as an attacker finds it: a key, an .env, a signing key in a dot-folder.
  home = join(dir, 'home');
  mkdirSync(join(home, '.config', 'conclave'), { recursive: true });
  writeFileSync(join(home, '.env'), SECRET);
  writeFileSync(join(home, '.config', 'conclave', 'conclave-seal.key'), '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA\n-----END PRIVATE KEY-----\n');
  writeFileSync(join(home, 'notes.md'), 'Notes the team agreed to share.');
  sim = await startSimulator({ models: simModels(panel), respond: scriptedResponder([0.9]).respond, tokenMs: 1 });
  keyed = await startSimulator({ api: 'openai', models: simModels(panel), respond: scriptedResponder([0.9]).respond, tokenMs: 1, observe: (r) => seen.push(r) });
});

afterAll(async () => {
  await sim?.close();
  await keyed?.close();
});

describe('a preset that names its own server', () => {
  it('cannot have it sent an API key from the environment without --trust-preset-hosts', async () => {
    const preset = writePreset(join(dir, 'shared'), { hosts: [{ url: `${keyed.url}/v1`, api: 'openai', apiKeyEnv: 'AWS_SECRET_ACCESS_KEY' }] });
    seen.length = 0;
    const r = await cli(['run', 'Q?', '--preset', preset, '--db', join(dir, 'key.db')], { AWS_SECRET_ACCESS_KEY: KEY });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('never receives a key from your environment without your consent');
    expect(r.stderr).toContain('--trust-preset-hosts');
    // Not a single request reached it, so the key never left.
    expect(seen).toEqual([]);

    const trusted = await cli(['run', 'Q?', '--preset', preset, '--db', join(dir, 'key.db'), '--trust-preset-hosts', '--quiet'], { AWS_SECRET_ACCESS_KEY: KEY });
    expect(trusted.code, trusted.stderr).toBe(0);
    expect(seen.some((s) => s.authorization === `Bearer ${KEY}`)).toBe(true);
    // The notice says where the key went.
    expect(trusted.stderr).toContain(`The API key in $AWS_SECRET_ACCESS_KEY is sent to ${keyed.url}/v1 only, a server the preset ${preset} names.`);
  });

  it('cannot have the server on OLLAMA_HOST sent a value of the environment it chose as the key', async () => {
    const preset = writePreset(join(dir, 'own-key'), { hosts: [{ url: `${keyed.url}/v1`, api: 'openai', apiKeyEnv: 'AWS_SECRET_ACCESS_KEY' }] });
    seen.length = 0;
    const r = await cli(['run', 'Q?', '--preset', preset, '--db', join(dir, 'own-key.db')], { AWS_SECRET_ACCESS_KEY: KEY, OLLAMA_HOST: `${keyed.url}/v1` });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('the value of $AWS_SECRET_ACCESS_KEY as its API key');
    expect(r.stderr).toContain('--api-key-env AWS_SECRET_ACCESS_KEY');
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(seen).toEqual([]);
  });

  it('counts OLLAMA_HOST as the user naming that server', async () => {
    const preset = writePreset(join(dir, 'own-host'), { hosts: [{ url: sim.url }], attach: ['brief.md'] });
    writeFileSync(join(dir, 'own-host', 'brief.md'), 'A brief the preset ships.');
    const refused = await cli(['run', 'Q?', '--preset', preset, '--db', join(dir, 'files.db')]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('never go to a preset\'s own server without your consent');
    const r = await cli(['run', 'Q?', '--preset', preset, '--db', join(dir, 'files.db'), '--quiet'], { OLLAMA_HOST: sim.url });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`Attached by the preset ${preset}: brief.md`);
    expect(r.stderr).toContain(`sent to ${sim.url}`);
  });
});

describe('files a preset attaches', () => {
  it.each([
    ['an .env file', ['.env']],
    ['a key in a dot-folder', ['.config/conclave/conclave-seal.key']],
    ['a hidden folder named through ./', ['./.config/conclave/conclave-seal.key']],
  ])('never include %s, even inside its own folder', async (_name, attach) => {
    const preset = writePreset(home, { attach });
    seen.length = 0;
    const r = await cli(['run', 'Q?', '--preset', preset, '--host', sim.url, '--db', join(dir, 'home.db')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/hidden file or folder/);
    expect(r.stdout).toBe('');
  });

  it('never include a symlink to a hidden file, a key file by its name or a private key under any name', () => {
    symlinkSync(join(home, '.env'), join(home, 'innocent.md'));
    mkdirSync(join(home, 'keys'), { recursive: true });
    writeFileSync(join(home, 'keys', 'conclave-seal.key'), 'not even a PEM');
    writeFileSync(join(home, 'keys', 'deploy.txt'), '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n');
    expect(() => readPresetAttachments(['innocent.md'], home, {})).toThrow(/hidden file or folder/);
    expect(() => readPresetAttachments(['keys/conclave-seal.key'], home, {})).toThrow(/signing key of Conclave/);
    expect(() => readPresetAttachments(['keys/deploy.txt'], home, {})).toThrow(/private key/);
    expect(readPresetAttachments(['notes.md'], home, {})[0]?.content).toBe('Notes the team agreed to share.');
  });

  it('never include the file CONCLAVE_SIGNING_KEY names, whatever it is called', () => {
    writeFileSync(join(home, 'plain.txt'), 'a key in a plain name');
    expect(() => readPresetAttachments(['plain.txt'], home, { CONCLAVE_SIGNING_KEY: join(home, 'plain.txt') })).toThrow(/signing key of Conclave/);
  });

  it('are checked on the file that is read: a symlink swapped during the read never lets a secret through', async () => {
    const folder = join(dir, 'race');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'good.md'), 'harmless text');
    writeFileSync(join(dir, 'outside-secret.txt'), SECRET);
    symlinkSync('good.md', join(folder, 'doc.md'));
    // Another process swaps doc.md between the good file and a link out of the folder, as fast as it can.
    const swapper = spawn(process.execPath, [
      '-e',
      `const fs = require('fs'); const p = require('path'); const d = ${JSON.stringify(folder)};
       const out = ${JSON.stringify(join(dir, 'outside-secret.txt'))};
       for (let i = 0; ; i++) { const t = p.join(d, 'tmp-' + (i % 2)); try { fs.unlinkSync(t); } catch {}
         fs.symlinkSync(i % 2 ? out : 'good.md', t); fs.renameSync(t, p.join(d, 'doc.md')); }`,
    ]);
    const outcomes = { read: 0, refused: 0 };
    try {
      await new Promise((r) => setTimeout(r, 200));
      for (let i = 0; i < 3000; i++) {
        try {
          const [a] = readPresetAttachments(['doc.md'], folder, {});
          expect(a?.content).toBe('harmless text');
          outcomes.read += 1;
        } catch (err) {
          expect(String(err)).not.toContain(SECRET);
          if (!/outside the preset's folder|does not exist/.test((err as Error).message)) throw err;
          outcomes.refused += 1;
        }
        // Let the swapper run between reads.
        if (i % 100 === 0) await new Promise((r) => setTimeout(r, 1));
      }
    } finally {
      swapper.kill();
    }
    // Both sides of the swap were met, and the secret was never read.
    expect(outcomes.read).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);
  });
});

describe('agent files', () => {
  it('are refused with NUL bytes or invalid UTF-8, as attachments are', async () => {
    const folder = join(dir, 'agents');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'nul.md'), '---\nid: a\nmodel: model-0:1b\n---\nYou are \u0000 a.');
    writeFileSync(join(folder, 'latin1.md'), Buffer.concat([Buffer.from('---\nid: a\nmodel: model-0:1b\n---\nCaf'), Buffer.from([0xe9])]));
    for (const [file, why] of [['nul.md', 'it contains NUL bytes'], ['latin1.md', 'it is not valid UTF-8']] as const) {
      const preset = writePreset(folder, { agents: [file, panel.agents[1]] });
      const r = await cli(['run', 'Q?', '--preset', preset, '--host', sim.url, '--db', join(dir, 'agents.db')]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`${file} is not a text file: ${why}.`);
    }
  });

  it('are never read from a hidden folder', async () => {
    mkdirSync(join(dir, 'agents', '.hidden'), { recursive: true });
    writeFileSync(join(dir, 'agents', '.hidden', 'x.md'), '---\nid: a\nmodel: model-0:1b\n---\nYou are a.');
    const preset = writePreset(join(dir, 'agents'), { agents: ['.hidden/x.md', panel.agents[1]] });
    const r = await cli(['run', 'Q?', '--preset', preset, '--host', sim.url, '--db', join(dir, 'agents.db')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('hidden file or folder');
  });
});

describe('a persona too long for the context', () => {
  it('is refused before anything is recorded, naming the agent', async () => {
    const huge = 'You weigh every risk with care. '.repeat(900_000 / 32);
    const preset = writePreset(join(dir, 'persona'), { agents: [{ ...panel.agents[0], persona: huge }, panel.agents[1]] });
    const db = join(dir, 'persona.db');
    const r = await cli(['run', 'Q?', '--preset', preset, '--host', sim.url, '--db', db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/Agent a's opening prompt needs about [\d,]+ tokens/);
    expect(r.stderr).toContain('Shorten the persona of a');
    const rows = new Database(db, { readonly: true }).prepare('select count(*) as n from debates').get() as { n: number };
    expect(rows.n).toBe(0);
  });
});

describe('an API key echoed by a server', () => {
  it('is removed from the message, the record and the export, and the server text stays on one line', async () => {
    const echo = await startSimulator({
      api: 'openai',
      apiKey: KEY,
      models: simModels(panel),
      tokenMs: 1,
      respond: (req) => (stageOf(req) === 'opening' ? { status: 500, error: `upstream rejected Bearer ${KEY}\nconclave: FORGED LINE` } : scriptedResponder([0.9]).respond(req)),
    });
    try {
      const db = join(dir, 'echo.db');
      const r = await cli(['run', 'Q?', '--preset', writePreset(join(dir, 'echo'), {}), '--host', `${echo.url}/v1`, '--api', 'openai', '--api-key-env', 'VLLM_KEY', '--db', db], { VLLM_KEY: KEY });
      expect(r.stderr).toContain('upstream rejected Bearer [key removed]');
      expect(r.stderr).not.toContain(KEY);
      expect(r.stderr).not.toMatch(/^conclave: FORGED LINE/m);
      const bytes = readdirSync(dir).filter((f) => f.startsWith('echo.db')).map((f) => readFileSync(join(dir, f)).toString('latin1')).join('');
      expect(bytes).toContain('[key removed]');
      expect(bytes).not.toContain(KEY);
      const id = /Stored as (\S+)/.exec(r.stderr)?.[1] ?? new Database(db, { readonly: true }).prepare('select id from debates').pluck().get();
      const shown = await cli(['show', String(id), '--db', db, '--json']);
      expect(shown.stdout).toContain('[key removed]');
      expect(shown.stdout).not.toContain(KEY);
    } finally {
      await echo.close();
    }
  });
});

describe('every other road to a preset\'s own hosts', () => {
  it('refuses to send a key from the environment without consent, as a library caller or a bench would take it', async () => {
    const { runDebate } = await import('../../src/engine/run-debate.js');
    const { recorder } = await import('../../src/engine/recorder.js');
    const { openStore } = await import('../../src/store/open.js');
    const store = openStore(join(dir, 'library.db'));
    seen.length = 0;
    try {
      const preset = { ...panel, hosts: [{ url: `${keyed.url}/v1`, api: 'openai' as const, apiKeyEnv: 'AWS_SECRET_ACCESS_KEY' }] };
      await expect(runDebate({ question: 'Q?', preset, host: sim.url, env: { AWS_SECRET_ACCESS_KEY: KEY }, recorder: recorder(store), listeners: [] })).rejects.toThrow(/never receives a key from the environment without consent/);
      expect(seen).toEqual([]);
    } finally {
      store.close();
    }
  });
});

describe('a record that names an embedded models folder', () => {
  it('has resume and synthesize load nothing from it without --trust-recorded-hosts or --embedded', async () => {
    // A record can come from someone else (an imported bundle): its plan chose the folder.
    const folder = join(dir, 'their-models');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'a.gguf'), 'not a model');
    const db = join(dir, 'embedded-record.db');
    const { openStore } = await import('../../src/store/open.js');
    const store = openStore(db);
    const id = 'rec-embedded';
    try {
      const agents = [...panel.agents.map((a) => ({ id: a.id, model: a.model, persona: null, cluster: null, role: 'debater' as const, digest: null })), { id: 'synthesizer', model: panel.synthesizer.model ?? panel.agents[0]!.model, persona: null, cluster: null, role: 'synthesizer' as const, digest: null }];
      store.createDebate({ id, question: 'Q?', preset: panel, engineVersion: 'test', host: `embedded:${folder}`, agents, createdAt: Date.now() });
      store.setPlan(id, { hosts: [{ url: `embedded:${folder}`, api: 'embedded', vramBytes: 0, numParallel: 1 }], models: [] });
      store.finishDebate(id, { status: 'interrupted', exitReason: null, error: null, roundsCompleted: 0, finalConvergence: null, finishedAt: Date.now() });
    } finally {
      store.close();
    }
    for (const command of ['resume', 'synthesize']) {
      const r = await cli([command, id, '--db', db, '--quiet']);
      expect(r.code, command).toBe(2);
      expect(r.stderr).toContain(`The record names the embedded models folder ${folder}: a record never has Conclave load and run model files from a folder it chose without your consent`);
      expect(r.stderr).toContain(`conclave ${command} … --embedded ${folder}`);
      expect(r.stderr).not.toContain('GGUF');
    }
    // With consent the folder is opened (and its file found not to be a model).
    const trusted = await cli(['synthesize', id, '--db', db, '--quiet', '--trust-recorded-hosts']);
    expect(trusted.stderr).not.toContain('without your consent');
  });
});
