import { spawn } from 'node:child_process';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { type SimHandle, type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { runCli } from '../helpers/cli.js';
import { agentOf, reply, roundOf, stageOf, testPreset } from '../helpers/panel.js';

let dir = '';
let sim: SimHandle;
const seen: SimRequest[] = [];
/** A test's own reply to a request, before the panel's usual one. */
let special: ((req: SimRequest) => SimReply | undefined) | null = null;
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
      const own = special?.(req);
      if (own !== undefined) return own;
      const agent = agentOf(req) ?? 'x';
      switch (stageOf(req)) {
        case 'opening':
          return reply.opening(agent);
        case 'critique':
          return reply.critique(agent);
        case 'judge':
          return reply.judge(0.3, req);
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

/** Calls of `stage` in `round` recorded as ok. */
function okCalls(db: string, stage: string, round: number): number {
  try {
    const s = new Database(db, { readonly: true, fileMustExist: true });
    try {
      return (s.prepare("select count(*) as n from calls where stage = ? and round = ? and status = 'ok'").get(stage, round) as { n: number }).n;
    } finally {
      s.close();
    }
  } catch {
    return 0;
  }
}

/** Runs a debate in another process and kills it with SIGKILL as soon as `ready` holds of its database. */
async function runAndKillWhen(db: string, presetFile: string, what: string, ready: () => boolean): Promise<void> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', packagePath('src', 'cli', 'entry.ts'), 'run', 'Should we do A?', '--preset', presetFile, '--host', sim.url, '--db', db, '--quiet'],
    { cwd: packagePath(), stdio: 'ignore' },
  );
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  const deadline = Date.now() + 60_000;
  while (!ready()) {
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${what} never happened`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
}

const runAndKillAfterRoundZero = (db: string, presetFile: string): Promise<void> =>
  runAndKillWhen(db, presetFile, 'the judging of round 0', () => roundsJudged(db).includes(0));

interface ResumedDocument {
  id: string;
  status: string;
  rounds: { round: number; turns: { agentId: string; status: string; position: string | null }[] }[];
  resumptions: { fromRound: number; callsBefore: number; reused: { round: number; agentId: string; call: number }[] }[];
  calls: { id: number; stage: string; round: number; agentId: string; status: string; messages: unknown[]; raw: string }[];
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

  it('reads the critiques that finished before a kill -9 in round 1 from the record, and asks only the one missing', async () => {
    const db = join(dir, 'mid-round.db');
    const presetFile = join(dir, 'mid-round.json');
    writeFileSync(presetFile, JSON.stringify(preset));
    // In the first run, c's round-1 critique hangs; a's and b's finish and carry the request's number, so a reply asked again would differ.
    let killed = false;
    special = (req) => {
      if (stageOf(req) !== 'critique' || roundOf(req) !== 1) return undefined;
      const agent = agentOf(req) ?? 'x';
      if (!killed && agent === 'c') return { content: reply.critique(agent), delayMs: 120_000 };
      return reply.critique(agent, `${agent} now says A (request ${req.index})`);
    };
    try {
      await runAndKillWhen(db, presetFile, 'two round-1 critiques', () => okCalls(db, 'critique', 1) >= 2);
      killed = true;
      const [debate] = JSON.parse((await cli(['list', '--db', db, '--json'])).stdout) as { id: string; status: string }[];
      expect(debate?.status).toBe('interrupted');
      const before = JSON.parse((await cli(['show', debate!.id, '--db', db, '--json'])).stdout) as ResumedDocument;
      const finished = before.calls.filter((c) => c.status === 'ok');
      expect(finished.filter((c) => c.stage === 'critique').map((c) => c.agentId).sort()).toEqual(['a', 'b']);

      const resumedAt = seen.length;
      const r = await cli(['resume', debate!.id, '--db', db, '--json']);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain('in round 1, a, b answered already and are not asked again');
      const resumed = seen.slice(resumedAt);
      // No request of a call that finished is sent again: not round 0's, not a's or b's round-1 critique.
      const sentAgain = resumed.filter((q) => finished.some((c) => JSON.stringify(c.messages) === JSON.stringify(q.messages)));
      expect(sentAgain).toEqual([]);
      expect(resumed.filter((q) => stageOf(q) === 'critique' && roundOf(q) === 1).map(agentOf)).toEqual(['c']);
      expect(resumed.filter((q) => stageOf(q) === 'critique' && roundOf(q) === 2).map(agentOf).sort()).toEqual(['a', 'b', 'c']);
      expect(resumed.map(stageOf).filter((s) => s !== 'critique')).toEqual(['judge', 'judge', 'synthesis']);

      const doc = JSON.parse(r.stdout) as ResumedDocument;
      expect(doc.status).toBe('completed');
      expect(doc.rounds.map((x) => x.round)).toEqual([0, 1, 2]);
      for (const round of doc.rounds) {
        expect(round.turns.map((t) => [t.agentId, t.status])).toEqual([['a', 'ok'], ['b', 'ok'], ['c', 'ok']]);
      }
      // a's and b's round-1 turns are the replies recorded before the kill.
      const critiqueOf = (agent: string) => finished.find((c) => c.stage === 'critique' && c.agentId === agent)!;
      const round1 = doc.rounds[1]!.turns;
      for (const agent of ['a', 'b']) {
        expect(round1.find((t) => t.agentId === agent)?.position).toBe((JSON.parse(critiqueOf(agent).raw) as { updatedPosition: string }).updatedPosition);
      }
      // Round 2 reads them as peers.
      expect(resumed.find((q) => stageOf(q) === 'critique' && roundOf(q) === 2 && agentOf(q) === 'c')?.messages.at(-1)?.content).toContain(round1[0]!.position!);
      // The record says where it went on and which turns it reused, by their calls.
      expect(doc.resumptions).toHaveLength(1);
      expect(doc.resumptions[0]?.fromRound).toBe(0);
      expect(doc.resumptions[0]?.reused).toEqual([
        { round: 1, agentId: 'a', call: critiqueOf('a').id },
        { round: 1, agentId: 'b', call: critiqueOf('b').id },
      ]);
      const md = await cli(['export', debate!.id, '--db', db, '--format', 'md']);
      expect(md.stdout).toContain(`reused without asking again: a in round 1 (call ${critiqueOf('a').id}), b in round 1 (call ${critiqueOf('b').id})`);
      expect((await cli(['verify', debate!.id, '--db', db])).code).toBe(0);
    } finally {
      special = null;
    }
  }, 120_000);

  it('goes on with a parallel debate killed while answering, asking only the agent that had not answered', async () => {
    const db = join(dir, 'parallel.db');
    const presetFile = join(dir, 'parallel.json');
    writeFileSync(presetFile, JSON.stringify({ ...preset, protocol: { ...preset.protocol, kind: 'parallel' } }));
    let killed = false;
    special = (req) => (!killed && stageOf(req) === 'opening' && agentOf(req) === 'b' ? { content: reply.opening('b'), delayMs: 120_000 } : undefined);
    try {
      await runAndKillWhen(db, presetFile, 'two answers', () => okCalls(db, 'opening', 0) >= 2);
      killed = true;
      const [debate] = JSON.parse((await cli(['list', '--db', db, '--json'])).stdout) as { id: string }[];
      const resumedAt = seen.length;
      const r = await cli(['resume', debate!.id, '--db', db, '--json']);
      expect(r.code).toBe(0);
      expect(seen.slice(resumedAt).map((q) => [stageOf(q), agentOf(q)])).toEqual([['opening', 'b'], ['synthesis', null]]);
      const doc = JSON.parse(r.stdout) as ResumedDocument;
      expect(doc.status).toBe('completed');
      expect(doc.rounds[0]?.turns.map((t) => t.status)).toEqual(['ok', 'ok', 'ok']);
      expect(doc.resumptions[0]?.fromRound).toBe(-1);
      expect(doc.resumptions[0]?.reused.map((t) => t.agentId)).toEqual(['a', 'c']);
    } finally {
      special = null;
    }
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
      expect(run.stderr).toContain('conclave resume');
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

  it('goes on with a debate killed with kill -9 before its first call was recorded', async () => {
    const db = join(dir, 'killed-early.db');
    const presetFile = join(dir, 'panel-early.json');
    writeFileSync(presetFile, JSON.stringify(preset));
    // The answers take a minute to start: the debate is recorded, none of its calls yet.
    special = (req) => (stageOf(req) === 'opening' ? { content: reply.opening(agentOf(req) ?? 'x'), delayMs: 60_000 } : undefined);
    const started = (): boolean => {
      try {
        const s = new Database(db, { readonly: true, fileMustExist: true });
        try {
          const debates = (s.prepare('select count(*) as n from debates').get() as { n: number }).n;
          const calls = (s.prepare('select count(*) as n from calls').get() as { n: number }).n;
          return debates === 1 && calls === 0 && seen.some((r) => stageOf(r) === 'opening');
        } finally {
          s.close();
        }
      } catch {
        return false;
      }
    };
    try {
      await runAndKillWhen(db, presetFile, 'the first opening request', started);
    } finally {
      special = null;
    }
    const [debate] = JSON.parse((await cli(['list', '--db', db, '--json'])).stdout) as { id: string; status: string }[];
    expect(debate?.status).toBe('interrupted');
    const verify = await cli(['verify', debate!.id, '--db', db]);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toContain('unsealed  0 calls chained and intact; its process died before it ended');

    const r = await cli(['resume', debate!.id, '--db', db, '--host', sim.url, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { status: string }).status).toBe('completed');
    expect((await cli(['verify', debate!.id, '--db', db])).stdout).toContain('sealed');
  }, 120_000);
});
