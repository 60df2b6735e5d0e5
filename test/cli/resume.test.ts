import { spawn } from 'node:child_process';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { type SimHandle, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { runCli } from '../helpers/cli.js';
import { agentOf, reply, stageOf, testPreset } from '../helpers/panel.js';

let dir = '';
let sim: SimHandle;
const seen: SimRequest[] = [];
const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.95, callTimeoutSeconds: 30 } });

const cli = (args: string[]) => runCli(args, dir);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-resume-'));
  sim = await startSimulator({
    models: [...new Set([...preset.agents.map((a) => a.model), preset.judge.model, preset.synthesizer.model ?? ''])].map((name) => ({ name, contextLength: 32768 })),
    // Slow enough that the run can be killed between round 0 and the end.
    tokenMs: 25,
    respond: (req) => {
      seen.push(req);
      const agent = agentOf(req) ?? 'x';
      switch (stageOf(req)) {
        case 'opening':
          return reply.opening(agent);
        case 'critique':
          return reply.critique(agent);
        case 'judge':
          return reply.judge(0.3);
        case 'synthesis':
          return reply.synthesis();
        default:
          return 'ok';
      }
    },
  });
});

afterAll(async () => {
  await sim?.close();
});

function roundsJudged(db: string): number[] {
  try {
    const s = new Database(db, { readonly: true, fileMustExist: true });
    try {
      return (s.prepare('select round from rounds order by round').all() as { round: number }[]).map((r) => r.round);
    } finally {
      s.close();
    }
  } catch {
    return [];
  }
}

/** Runs a debate in another process and kills it with SIGKILL as soon as round 0 is judged. */
async function runAndKillAfterRoundZero(db: string, presetFile: string): Promise<void> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', packagePath('src', 'cli', 'entry.ts'), 'run', 'Should we do A?', '--preset', presetFile, '--host', sim.url, '--db', db, '--quiet'],
    { cwd: packagePath(), stdio: 'ignore' },
  );
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  const deadline = Date.now() + 60_000;
  while (!roundsJudged(db).includes(0)) {
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('round 0 was never judged');
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
}

describe('conclave resume', () => {
  it('goes on with a debate killed with kill -9 after round 0, without asking round 0 again', async () => {
    const db = join(dir, 'killed.db');
    const presetFile = join(dir, 'panel.json');
    writeFileSync(presetFile, JSON.stringify(preset));
    await runAndKillAfterRoundZero(db, presetFile);
    const before = seen.length;
    expect(seen.slice(0, before).filter((r) => stageOf(r) === 'opening')).toHaveLength(3);

    const listed = await cli(['list', '--db', db, '--json']);
    const [debate] = JSON.parse(listed.stdout) as { id: string; status: string }[];
    expect(debate?.status).toBe('interrupted');
    // The table says it once, not as a status and again as its reason.
    expect((await cli(['list', '--db', db])).stdout).toMatch(/ interrupted +0 /);
    expect((await cli(['verify', debate!.id, '--db', db])).stdout).toContain('unsealed');

    const r = await cli(['resume', debate!.id, '--db', db, '--json']);
    expect(r.code).toBe(0);
    const resumed = seen.slice(before);
    // Round 0's answers and its judge score come from the record: only rounds 1 and 2 and the synthesis are asked.
    expect(resumed.filter((q) => stageOf(q) === 'opening')).toEqual([]);
    expect(resumed.map(stageOf).filter((s) => s !== 'critique')).toEqual(['judge', 'judge', 'synthesis']);
    expect(resumed.filter((q) => stageOf(q) === 'critique')).toHaveLength(6);
    // Round 1 reads the stored round-0 answers.
    expect(resumed.find((q) => stageOf(q) === 'critique')?.messages.at(-1)?.content).toContain('b says A');

    const doc = JSON.parse(r.stdout) as { id: string; status: string; rounds: unknown[]; resumptions: { fromRound: number; callsBefore: number }[]; quality: { round: number; agentId: string }[] };
    // One quality rating per answer: round 0's kept from the first run, the rest rated by the resumed one.
    expect(doc.quality.map((q) => `${q.round}:${q.agentId}`)).toEqual(['0:a', '0:b', '0:c', '1:a', '1:b', '1:c', '2:a', '2:b', '2:c']);
    expect(doc.id).toBe(debate!.id);
    expect(doc.status).toBe('completed');
    expect(doc.rounds).toHaveLength(3);
    expect(doc.resumptions).toHaveLength(1);
    expect(doc.resumptions[0]?.fromRound).toBe(0);
    expect(doc.resumptions[0]!.callsBefore).toBeGreaterThanOrEqual(4);

    const verify = await cli(['verify', debate!.id, '--db', db]);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toContain('sealed');
  }, 120_000);

  it('refuses a debate that is not interrupted, saying why', async () => {
    const db = join(dir, 'done.db');
    const presetFile = join(dir, 'done.json');
    writeFileSync(presetFile, JSON.stringify({ ...preset, protocol: { ...preset.protocol, maxRounds: 0 } }));
    const run = await cli(['run', 'Q?', '--preset', presetFile, '--host', sim.url, '--db', db, '--json', '--quiet']);
    expect(run.code).toBe(0);
    const { id } = JSON.parse(run.stdout) as { id: string };
    const r = await cli(['resume', id, '--db', db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`Debate \`${id}\` cannot be resumed: it is completed`);
  }, 60_000);

  it('refuses when the host lacks a model of the preset, before recording anything', async () => {
    const db = join(dir, 'missing.db');
    const presetFile = join(dir, 'missing.json');
    writeFileSync(presetFile, JSON.stringify(preset));
    await runAndKillAfterRoundZero(db, presetFile);
    const other = await startSimulator({ models: [{ name: 'model-0:1b' }], respond: () => 'x' });
    try {
      const listed = await cli(['list', '--db', db, '--json']);
      const [debate] = JSON.parse(listed.stdout) as { id: string }[];
      const r = await cli(['resume', debate!.id, '--db', db, '--host', other.url]);
      expect(r.code).toBe(3);
      expect(r.stderr).toContain('not on');
      const after = await cli(['list', '--db', db, '--json']);
      expect((JSON.parse(after.stdout) as { status: string }[])[0]?.status).toBe('interrupted');
    } finally {
      await other.close();
    }
  }, 120_000);
  it('stops a debate whose host goes down as interrupted, keeping round 0, and resumes it once the host is back', async () => {
    // A proxy in front of the simulator that drops every request once round 0 has been judged, until the host is back.
    let down = false;
    const before = seen.length;
    const proxy = createServer((req, res) => {
      if (!down && seen.slice(before).some((q) => stageOf(q) === 'judge')) down = true;
      if (down) {
        req.socket.destroy();
        return;
      }
      const target = new URL(sim.url);
      const upstream = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const db = join(dir, 'host-down.db');
      const presetFile = join(dir, 'host-down.json');
      writeFileSync(presetFile, JSON.stringify(preset));
      const run = await cli(['run', 'Should we do B?', '--preset', presetFile, '--host', url, '--db', db, '--quiet']);
      expect(run.code).toBe(3);
      expect(run.stderr).toContain('the Ollama host stopped answering');
      expect(run.stderr).toContain('npx conclave resume');
      const asked = seen.slice(before);
      expect(asked.map(stageOf)).toEqual(['opening', 'opening', 'opening', 'judge']);

      const [debate] = JSON.parse((await cli(['list', '--db', db, '--json'])).stdout) as { id: string; status: string }[];
      expect(debate?.status).toBe('interrupted');

      const resumedAt = seen.length;
      const r = await cli(['resume', debate!.id, '--db', db, '--host', sim.url, '--json']);
      expect(r.code).toBe(0);
      const resumed = seen.slice(resumedAt);
      expect(resumed.filter((q) => stageOf(q) === 'opening')).toEqual([]);
      expect(resumed.filter((q) => stageOf(q) === 'critique')).toHaveLength(6);
      const doc = JSON.parse(r.stdout) as { status: string; resumptions: { fromRound: number }[] };
      expect(doc.status).toBe('completed');
      expect(doc.resumptions[0]?.fromRound).toBe(0);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  }, 120_000);
});
