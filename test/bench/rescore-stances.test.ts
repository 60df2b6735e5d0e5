import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type DebateRescore, openTrajectory } from '../../src/bench/rescore.js';
import type { ProtocolStep } from '../../src/engine/protocol-events.js';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { ruleNamed } from '../../src/rules/index.js';
import { judgedIdsOf } from '../../src/rules/stances.js';
import { type SimHandle, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { StoredDebate } from '../../src/store/reader.js';
import type { Store } from '../../src/store/store.js';
import { runCli } from '../helpers/cli.js';
import { judgedRoundOf, reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';
import { tensionResponder, tensionStageOf, userText } from '../helpers/tensions.js';

type Stance = { id: string; summary: string; agents: string[] };
type TrajectoryStep = Extract<ProtocolStep, { kind: 'trajectory' }>;

let sim: SimHandle | null = null;
let store: Store | null = null;
let dir: string | null = null;

afterEach(async () => {
  store?.close();
  store = null;
  await sim?.close();
  sim = null;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = null;
});

/**
 * A debate of a, b and c decided by the trajectory, whose judge gives the same stances every
 * round (the judge's schema allows any stance id and any agent in any stance), recorded in a
 * database file; returns its id, the file, the record, and the engine's recorded decision.
 */
async function recordDebate(stances: Stance[] | ((round: number) => Stance[])) {
  const preset = testPreset(['a', 'b', 'c'], {
    protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 10, critique: 'anti-conformity', decision: 'trajectory', earlyExit: false } as never,
    tensions: { enabled: false } as never,
  });
  const script = scriptedResponder([0.3], (req: SimRequest) =>
    stageOf(req) === 'judge'
      ? JSON.stringify({ ...JSON.parse(reply.judge(0.3)), rationale: 'split', recommendation: 30, facts: 40, caveats: 50, stances: typeof stances === 'function' ? stances(judgedRoundOf(req)) : stances })
      : undefined,
  );
  sim = await startSimulator({ models: simModels(preset), respond: script.respond });
  dir = mkdtempSync(join(tmpdir(), 'conclave-rescore-stances-'));
  const db = join(dir, 'debates.db');
  store = openStore(db);
  const result = await runDebate({ question: 'Should we migrate to Postgres?', preset, host: sim.url, recorder: recorder(store) });
  expect(result.status).toBe('completed');
  const debate = store.getDebate(result.id);
  const steps = (debate.steps ?? []).map((s) => s.step).filter((s): s is TrajectoryStep => s.kind === 'trajectory');
  expect(steps).toHaveLength(1);
  return { id: result.id, db, debate, decided: steps[0]! };
}

async function rescoreOf(id: string, db: string): Promise<(name: string) => DebateRescore['rules'][number]> {
  const { code, stdout, stderr } = await runCli(['rescore', id, '--json', '--db', db], dir!);
  expect(stderr).toBe('');
  expect(code).toBe(0);
  const r = JSON.parse(stdout) as DebateRescore;
  expect(r.basis.kind).toBe('stances');
  return (name) => r.rules.find((x) => x.rule === name)!;
}

/** The rescore of a record made before the engine recorded its normalised stances: no `stances` steps. */
const withoutStanceSteps = (debate: StoredDebate): StoredDebate => ({ ...debate, steps: (debate.steps ?? []).filter((s) => s.step.kind !== 'stances') });

const decide = (name: string, debate: StoredDebate) => {
  const d = ruleNamed(name, { maxRounds: 2 })!.decide(openTrajectory(debate));
  if (!d.available) throw new Error(`${name} did not decide: ${d.why}`);
  return { stopRound: d.stopRound, decision: d.vote?.text ?? null, note: d.note };
};

describe('conclave rescore ID on a debate decided by its trajectory', () => {
  it('keeps two stances that share an id apart, as the engine did, and agrees with the recorded decision', async () => {
    const { id, db, debate, decided } = await recordDebate([
      { id: 'S1', summary: 'migrate now', agents: ['a'] },
      { id: 'S1', summary: 'stay on SQLite', agents: ['b', 'c'] },
    ]);
    // The engine renamed the second S1 and chose it: two agents held it from round 0 to the end.
    expect(decided).toMatchObject({ stance: 'S1-2', summary: 'stay on SQLite', finalMajority: 'S1-2' });

    const rule = await rescoreOf(id, db);
    expect(rule('free-mad')).toMatchObject({ stopRound: 2, decision: decided.summary, note: `score ${decided.score!.toFixed(1)}` });
    expect(rule('majority:final')).toMatchObject({ stopRound: 2, decision: decided.scores.find((s) => s.stance === decided.finalMajority)!.summary });
    expect(rule('majority:round0').decision).toBe('stay on SQLite');
    // A 1-against-2 split is never unanimous: the rule reads up to the ceiling.
    expect(rule('stop:unanimous')).toMatchObject({ stopRound: 2, decision: 'stay on SQLite' });
    expect(rule('stop:settled')).toMatchObject({ stopRound: 0, decision: 'stay on SQLite' });
  });

  it('reads a judge that re-letters its stances each round as nobody changing position, in the decision and in the re-score', async () => {
    // a and b stay on SQLite and c wants to migrate in every round; from round 1 the judge swaps the letters.
    const { id, db, decided } = await recordDebate((round) =>
      round === 0
        ? [{ id: 'A', summary: 'stay on SQLite', agents: ['a', 'b'] }, { id: 'B', summary: 'migrate now', agents: ['c'] }]
        : [{ id: 'A', summary: 'migrate now', agents: ['c'] }, { id: 'B', summary: 'stay on SQLite', agents: ['a', 'b'] }],
    );
    expect(decided).toMatchObject({ stance: 'B', summary: 'stay on SQLite', finalMajority: 'B' });
    // Two agents held their position for three rounds, one held the other: no move is scored.
    expect(decided.scores).toEqual([
      { stance: 'B', summary: 'stay on SQLite', score: decided.scores[0]!.score },
      { stance: 'A', summary: 'migrate now', score: decided.scores[1]!.score },
    ]);
    expect(decided.scores[0]!.score).toBeCloseTo(2 * decided.scores[1]!.score, 0);
    const rule = await rescoreOf(id, db);
    expect(rule('free-mad')).toMatchObject({ decision: 'stay on SQLite', note: `score ${decided.score!.toFixed(1)}` });
  });

  it('keeps an agent the judge put in two stances in its first, as the engine did', async () => {
    const { id, db, decided } = await recordDebate([
      { id: 'S1', summary: 'stay on SQLite', agents: ['c', 'b'] },
      { id: 'S2', summary: 'migrate now', agents: ['a', 'b'] },
    ]);
    expect(decided).toMatchObject({ stance: 'S1', summary: 'stay on SQLite', finalMajority: 'S1' });

    const rule = await rescoreOf(id, db);
    expect(rule('free-mad')).toMatchObject({ decision: decided.summary, note: `score ${decided.score!.toFixed(1)}` });
    expect(rule('majority:final').decision).toBe('stay on SQLite');
    expect(rule('stop:settled')).toMatchObject({ stopRound: 0, decision: 'stay on SQLite' });
  });

  it('normalises the judge\'s reply the same way for a record without the normalised stances', async () => {
    const { debate, decided } = await recordDebate([
      { id: 'S1', summary: 'migrate now', agents: ['a'] },
      { id: 'S1', summary: 'stay on SQLite', agents: ['b', 'c'] },
    ]);
    const old = withoutStanceSteps(debate);
    expect((debate.steps ?? []).filter((s) => s.step.kind === 'stances')).toHaveLength(3);
    expect(old.steps!.filter((s) => s.step.kind === 'stances')).toEqual([]);
    expect(old.calls.filter((c) => c.stage === 'judge').map((c) => judgedIdsOf(c.format))).toEqual([['a', 'b', 'c'], ['a', 'b', 'c'], ['a', 'b', 'c']]);
    expect(openTrajectory(old).basis.kind).toBe('stances');
    for (const name of ['free-mad', 'majority:final', 'majority:round0', 'stop:unanimous', 'stop:settled']) expect(decide(name, old)).toEqual(decide(name, debate));
    expect(decide('free-mad', old)).toMatchObject({ decision: decided.summary, note: `score ${decided.score!.toFixed(1)}` });
    // Nor a schema naming the agents the judge read: their turns say who gave a position.
    const older = { ...old, calls: old.calls.map((c) => ({ ...c, format: null })) };
    for (const name of ['free-mad', 'majority:final', 'stop:unanimous']) expect(decide(name, older)).toEqual(decide(name, debate));
  });
});

describe('what rescore charges the rules over a debate that mapped its clashes', () => {
  it("charges a rule that stops at round 0 the openings alone, and the clash board, a failed claims call too, to the critique rounds it served", async () => {
    const preset = testPreset(['a', 'b', 'c'], { tensions: {}, protocol: { maxRounds: 2, callTimeoutSeconds: 10 } });
    const panel = tensionResponder({ judge: [0.2, 0.2, 0.2] });
    // a's claims come back unreadable: the call is recorded as invalid, then repaired.
    const respond = (req: SimRequest) => (tensionStageOf(req) === 'claims' && /^Panelist: a$/m.test(userText(req)) ? 'no claims here' : panel.respond(req));
    sim = await startSimulator({ models: simModels(preset), respond });
    store = openStore(':memory:');
    const result = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store) });
    expect(result.status).toBe('completed');
    const debate = store.getDebate(result.id);
    const board = debate.calls.filter((c) => c.stage === 'claims' || (c.stage === 'clash' && c.agentId !== 'tension-map'));
    expect(board.some((c) => c.stage === 'claims' && c.agentId === 'a' && c.status === 'invalid' && c.round === 0)).toBe(true);
    expect(board.every((c) => c.round === 0)).toBe(true);
    const t = openTrajectory(debate);
    const spent = (name: string) => {
      const d = ruleNamed(name, { maxRounds: 2 })!.decide(t);
      if (!d.available) throw new Error(`${name}: ${d.why}`);
      return d.spent.calls;
    };
    const count = (stage: string, round?: number) => debate.calls.filter((c) => c.stage === stage && (round === undefined || c.round === round)).length;
    expect(spent('stop:rounds=0')).toBe(count('opening'));
    expect(spent('stop:rounds=0')).toBe(spent('majority:round0'));
    expect(spent('stop:rounds=1')).toBe(count('opening') + board.length + count('critique', 1));
  });
});
