import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { mulberry32 } from '../../src/protocol/random.js';
import { callHash, canonicalJson, readDebateRows, rowDigests, SEALED_TABLES, sealOf, type Verdict } from '../../src/store/chain.js';
import { CheckpointDigests } from '../../src/store/checkpoint.js';
import { recordBudgetDecision } from '../../src/store/material.js';
import { recordProtocolStep } from '../../src/store/protocols.js';
import { recordQuality } from '../../src/store/quality.js';
import { recordTensionUpdate } from '../../src/store/tensions.js';
import { openStore, type Store } from '../../src/store/index.js';
import { CALL_COLUMNS } from '../../src/store/store.js';
import { asBefore0016, asBefore0017, call, newDebate, openingTurn, tempDir } from './fixtures.js';

let store: Store;
let sqlite: Database.Database;
let dir: { dir: string; cleanup: () => void };

beforeEach(() => {
  dir = tempDir();
  store = openStore(join(dir.dir, 'c.db'));
  sqlite = new Database(join(dir.dir, 'c.db'));
});

afterEach(() => {
  sqlite.close();
  store.close();
  dir.cleanup();
});

/** A finished debate of three calls (one a repair), two turns, a judgement and a synthesis. */
function recordDebate(id = 'd-0001', finish = true): void {
  store.createDebate(newDebate({ id }));
  store.recordCall(call(id));
  store.recordCall(call(id, { agentId: 'bo', model: 'qwen2.5:7b', raw: 'not json', parsed: null, status: 'invalid', validationError: 'Expected object' }));
  store.recordCall(call(id, { agentId: 'bo', model: 'qwen2.5:7b', attempt: 1, raw: '{"position":"Yes"}', parsed: { position: 'Yes' } }));
  store.recordTurn(id, openingTurn('ada', 'No'));
  store.recordTurn(id, openingTurn('bo', 'Yes'));
  store.recordJudgement(id, {
    round: 0,
    status: 'ok',
    score: { recommendation: 0.4, facts: 0.5, caveats: 0.6, rationale: 'apart' },
    convergence: 0.5,
    error: null,
  });
  store.recordSynthesis(id, { status: 'failed', synthesis: null, error: 'the synthesizer timed out' });
  if (finish) {
    store.finishDebate(id, { status: 'completed', exitReason: 'max_rounds', error: null, roundsCompleted: 0, finalConvergence: 0.5, finishedAt: 1_700_000_009_000 });
  }
}

function callIds(id = 'd-0001'): number[] {
  return (sqlite.prepare('select id from calls where debate_id = ? order by id').all(id) as { id: number }[]).map((r) => r.id);
}

function broken(v: Verdict): Extract<Verdict, { state: 'broken' }> {
  expect(v.state).toBe('broken');
  return v as Extract<Verdict, { state: 'broken' }>;
}

describe('the hash chain and seal', () => {
  it('seals a finished debate, and verifies it', () => {
    recordDebate();
    const v = store.verifyDebate('d-0001');
    expect(v).toMatchObject({ state: 'sealed', calls: 3 });
    const row = sqlite.prepare('select seal from debates').get() as { seal: string };
    expect(v.state === 'sealed' && v.seal).toBe(row.seal);
  });

  it('catches a one-character edit in any recorded reply and names that call', () => {
    recordDebate();
    const ids = callIds();
    for (const [i, id] of ids.entries()) {
      const { raw } = sqlite.prepare('select raw from calls where id = ?').get(id) as { raw: string };
      const edited = raw.slice(0, 2) + (raw[2] === 'x' ? 'y' : 'x') + raw.slice(3);
      sqlite.prepare('update calls set raw = ? where id = ?').run(edited, id);
      const v = broken(store.verifyDebate('d-0001'));
      expect(v.call?.number).toBe(i + 1);
      expect(v.problem).toContain('does not match its hash');
      sqlite.prepare('update calls set raw = ? where id = ?').run(raw, id);
      expect(store.verifyDebate('d-0001').state).toBe('sealed');
    }
  });

  it('catches an edit to messages, options, metrics or times', () => {
    recordDebate();
    const [first] = callIds();
    for (const edit of [
      "messages_json = replace(messages_json, 'shard', 'Shard')",
      "options_json = replace(options_json, '0.7', '0.8')",
      'completion_tokens = completion_tokens + 1',
      'started_at = started_at - 1',
      "status = 'aborted'",
    ]) {
      const before = sqlite.prepare('select * from calls where id = ?').get(first) as Record<string, unknown>;
      sqlite.prepare(`update calls set ${edit} where id = ?`).run(first);
      expect(broken(store.verifyDebate('d-0001')).call?.number).toBe(1);
      sqlite.prepare('delete from calls where id = ?').run(first);
      const cols = Object.keys(before);
      sqlite.prepare(`insert into calls (${cols.join(',')}) values (${cols.map(() => '?').join(',')})`).run(...cols.map((c) => before[c] as string));
      expect(store.verifyDebate('d-0001').state).toBe('sealed');
    }
  });

  it('says a call is missing when one is deleted from the middle of the chain', () => {
    recordDebate();
    sqlite.prepare('delete from calls where id = ?').run(callIds()[1]);
    const v = broken(store.verifyDebate('d-0001'));
    expect(v.call?.number).toBe(2);
    expect(v.problem).toBe('it does not follow the call before it (a call was removed or the calls reordered)');
  });

  it('catches the removal of the last call through the seal', () => {
    recordDebate();
    sqlite.prepare('delete from calls where id = ?').run(callIds().at(-1));
    expect(broken(store.verifyDebate('d-0001')).problem).toContain('does not match its seal');
  });

  it('names the row of a sealed table that was edited, added or removed', () => {
    recordDebate();
    sqlite.prepare("update turns set position = 'Maybe' where agent_id = 'bo'").run();
    expect(broken(store.verifyDebate('d-0001'))).toMatchObject({ row: { table: 'turns', key: '0/bo' }, problem: 'a `turns` row (0/bo) was edited' });
    sqlite.prepare("update turns set position = 'Yes' where agent_id = 'bo'").run();

    sqlite.prepare("update debates set question = 'Should we not shard?'").run();
    expect(broken(store.verifyDebate('d-0001')).row).toEqual({ table: 'debates', key: 'd-0001' });
    sqlite.prepare("update debates set question = 'Should we shard the database?'").run();

    sqlite.prepare("delete from syntheses").run();
    expect(broken(store.verifyDebate('d-0001')).problem).toBe('a `syntheses` row (-) was removed');
    expect(store.verifyDebate('d-0001').state).toBe('broken');
  });

  it('catches a row added under a key an object would not keep as its own (`__proto__`), and one named `constructor`', () => {
    for (const [id, key] of [['d-0001', '__proto__'], ['d-0002', 'constructor']] as const) {
      // The table already has a row, so only the added row's own digest can tell.
      recordDebate(id, false);
      const claims = { step: 'claims' as const, agents: ['ada'], claims: [{ id: 'C1', agentId: 'ada', text: 'Sharding splits the load.', source: 'model' as const }], gaps: [], answerTokens: 0, pairs: 0, clashCalls: 0 };
      store.recorded(id, () => recordTensionUpdate(store, id, claims, 1));
      store.finishDebate(id, { status: 'completed', exitReason: 'max_rounds', error: null, roundsCompleted: 0, finalConvergence: 0.5, finishedAt: 1_700_000_009_000 });
      expect(store.verifyDebate(id).state).toBe('sealed');
      sqlite.prepare("insert into tension_claims (debate_id, claim_id, ordinal, agent_id, text, source) values (?, ?, 1, 'ada', 'The moon is cheese.', 'model')").run(id, key);
      expect(broken(store.verifyDebate(id))).toMatchObject({ row: { table: 'tension_claims', key }, problem: `a \`tension_claims\` row (${key}) was added` });
    }
    // A store that did not write them passes each debate through the seal gate before its first write: refused, nothing sealed over.
    const seals = sqlite.prepare('select id, seal from debates order by id').all();
    store.close();
    store = openStore(join(dir.dir, 'c.db'));
    for (const id of ['d-0001', 'd-0002']) expect(() => store.recordSynthesis(id, { status: 'failed', synthesis: null, error: 'again' })).toThrow(/was added/);
    expect(sqlite.prepare('select id, seal from debates order by id').all()).toEqual(seals);
  });

  it('catches an edit whose row digest was rewritten to match, through the seal', () => {
    recordDebate();
    const recorded = JSON.parse(readDebateRows(sqlite, 'd-0001')!.debate.seal_rows_json as string) as Record<string, Record<string, string>>;
    sqlite.prepare("update rounds set convergence = 0.9").run();
    const rounds = JSON.parse((sqlite.prepare("select digests_json as j from seal_rows where table_name = 'rounds'").get() as { j: string }).j) as Record<string, string>;
    rounds['0'] = 'f'.repeat(64);
    sqlite.prepare("update seal_rows set digests_json = ? where table_name = 'rounds'").run(JSON.stringify(rounds));
    expect(broken(store.verifyDebate('d-0001')).row).toEqual({ table: 'rounds', key: '0' });
    // A record written before `seal_rows` holds the digests in the debate's row: they win while set.
    sqlite.prepare('delete from seal_rows').run();
    sqlite.prepare('update debates set seal_rows_json = ?').run(JSON.stringify({ ...recorded, agents: { ...recorded.agents, 'debater/ada': 'e'.repeat(64) } }));
    expect(broken(store.verifyDebate('d-0001')).row).toEqual({ table: 'agents', key: 'debater/ada' });
    sqlite.prepare('update debates set seal_rows_json = null').run();
    expect(broken(store.verifyDebate('d-0001')).problem).toContain('does not match its seal');
  });

  it('reports a finished debate whose seal was removed as broken, not unsealed', () => {
    recordDebate();
    sqlite.prepare('update debates set seal = null').run();
    expect(broken(store.verifyDebate('d-0001')).problem).toContain("the debate's seal is missing");
  });

  it('reports a debate killed before it ended as unsealed, and still checks its calls', () => {
    recordDebate('d-0001', false);
    expect(store.verifyDebate('d-0001')).toMatchObject({ state: 'unsealed', calls: 3 });
    sqlite.prepare("update calls set raw = raw || ' ' where id = ?").run(callIds()[0]);
    expect(broken(store.verifyDebate('d-0001')).call?.number).toBe(1);
  });

  it('checks every row of a debate whose process died against the checkpoint of its last record', () => {
    const edits = [
      "update turns set position = 'forged' where agent_id = 'ada' and debate_id = ?",
      'update rounds set convergence = 0.99 where debate_id = ?',
      "update syntheses set error = 'x' where debate_id = ?",
      "update debates set question = 'other' where id = ?",
    ];
    for (const [i, edit] of edits.entries()) {
      const id = `dead-${i}`;
      recordDebate(id, false);
      // What opening the file does for a dead process: the one change made without sealing again.
      sqlite.prepare("update debates set status = 'interrupted', exit_reason = 'interrupted', finished_at = 9 where id = ?").run(id);
      expect(store.verifyDebate(id)).toMatchObject({ state: 'unsealed', calls: 3 });
      sqlite.prepare(edit).run(id);
      expect(store.verifyDebate(id).state, edit).toBe('broken');
    }
  });

  it('keeps the checkpoint it writes equal to the seal of every row read back, whatever each write changed', () => {
    const id = 'd-0001';
    // The store hashes again only the rows a write changed: after each kind of write, the seal and
    // the row digests it wrote must be those computed from scratch over everything in the file.
    const checkpoint = (what: string): void => {
      const rows = readDebateRows(sqlite, id)!;
      const written = readDebateRows(sqlite, id)!.debate as { seal: string; seal_rows_json: string };
      expect(written.seal, what).toBe(sealOf(rows));
      expect(JSON.parse(written.seal_rows_json), what).toEqual(rowDigests(rows));
    };
    const rating = (agentId: string, score: number, t = 0) => ({ stage: 'opening' as const, round: 0, agentId, try: t, score, action: 'PASS' as const, reasons: [`scored ${score}`] });
    store.createDebate(newDebate({ id }));
    checkpoint('created');
    const first = store.recordCall(call(id));
    checkpoint('a call');
    store.recordTurn(id, openingTurn('ada', 'No'));
    store.recordTurn(id, openingTurn('bo', 'Yes'));
    checkpoint('two turns');
    store.recordTurn(id, openingTurn('ada', 'Maybe'));
    checkpoint('a turn replaced');
    store.recorded(id, () => recordQuality(store, id, rating('ada', 40), 1));
    store.recorded(id, () => recordQuality(store, id, rating('ada', 70), 2));
    store.recorded(id, () => recordQuality(store, id, rating('ada', 90, 1), 3));
    checkpoint('ratings inserted and replaced');
    store.recorded(id, () => recordProtocolStep(store, id, { kind: 'champion', agentId: 'ada', runnerUp: null, position: 'No' }, first, 4));
    store.recorded(id, () => recordBudgetDecision(store, id, { kind: 'skip', stage: 'critique', round: 1, agentId: 'bo', detail: 'over', used: 10, limit: 5 }, 5));
    checkpoint('a step that links to a call, and a budget decision');
    store.recordCall(call(id, { stage: 'critique', round: 1 }));
    store.recordJudgement(id, { round: 0, status: 'ok', score: { recommendation: 0.4, facts: 0.5, caveats: 0.6, rationale: 'apart' }, convergence: 0.5, error: null });
    store.recordJudgement(id, { round: 0, status: 'ok', score: { recommendation: 0.9, facts: 0.9, caveats: 0.9, rationale: 'close' }, convergence: 0.9, error: null });
    checkpoint('a judgement replaced');
    store.recorded(id, () => store.runPrepared('edit turns', "update turns set position = 'Both' where debate_id = @id", { id }));
    checkpoint('an update of several rows');
    // Prepared inserts whose returned row is not the whole change: the table is hashed again.
    const turn = "insert into turns (debate_id, round, agent_id, model, status) values (@id, @round, @agent, 'm', 'ok')";
    store.recorded(id, () => store.runPrepared('move a turn', `${turn} on conflict (debate_id, round, agent_id) do update set round = excluded.round + 5`, { id, round: 0, agent: 'bo' }));
    checkpoint('an upsert whose update moves its row to another key');
    store.recorded(id, () => store.runPrepared('two turns', "insert into turns (debate_id, round, agent_id, model, status) values (@id, 7, 'cy', 'm', 'ok'), (@id, 7, 'dee', 'm', 'ok')", { id }));
    checkpoint('an insert of two rows');
    store.recorded(id, () => store.runPrepared('a turn on another target', `${turn} on conflict do update set status = 'again'`, { id, round: 7, agent: 'cy' }));
    checkpoint('an upsert with no conflict target');
    store.recorded(id, () => store.runPrepared('a new turn', turn, { id, round: 8, agent: 'ada' }));
    checkpoint('an insert of one row');
    store.setPlan(id, { hosts: 1 });
    store.recordSynthesis(id, { status: 'failed', synthesis: null, error: 'timed out' });
    checkpoint('a plan and a synthesis attempt');
    store.finishDebate(id, { status: 'completed', exitReason: 'max_rounds', error: null, roundsCompleted: 1, finalConvergence: 0.9, finishedAt: 1_700_000_009_000 });
    checkpoint('finished');
    expect(store.verifyDebate(id)).toMatchObject({ state: 'sealed', calls: 2 });
  });

  it('keeps the checkpoint equal to the seal of every row when the debate is created inside a recorded write and a later process links to its calls', () => {
    const id = 'd-0002';
    const checkpoint = (what: string): void => {
      const rows = readDebateRows(sqlite, id)!;
      const written = readDebateRows(sqlite, id)!.debate as { seal: string; seal_rows_json: string };
      expect(written.seal, what).toBe(sealOf(rows));
      expect(JSON.parse(written.seal_rows_json), what).toEqual(rowDigests(rows));
    };
    // As the recorder writes it: the debate's creation is nested in a write of the event.
    store.recorded(id, () => store.createDebate(newDebate({ id })));
    checkpoint('created inside a recorded write');
    store.recordCall(call(id));
    const second = store.recordCall(call(id, { agentId: 'bo' }));
    store.recorded(id, () => recordProtocolStep(store, id, { kind: 'champion', agentId: 'bo', runnerUp: null, position: 'No' }, second, 1));
    checkpoint('a step that links to the second call');
    store.close();
    // Another store (a resumed run) knows nothing of these calls but what the file says.
    store = openStore(join(dir.dir, 'c.db'));
    store.recorded(id, () => recordProtocolStep(store, id, { kind: 'champion', agentId: 'ada', runnerUp: null, position: 'Yes' }, second, 2));
    checkpoint('a step from another store that links to a call it did not record');
    store.recorded(id, () => recordProtocolStep(store, id, { kind: 'champion', agentId: 'ada', runnerUp: null, position: 'Yes' }, second + 1000, 3));
    checkpoint('a step that links to no call of the debate');
    store.finishDebate(id, { status: 'completed', exitReason: 'max_rounds', error: null, roundsCompleted: 0, finalConvergence: 0.9, finishedAt: 1_700_000_009_000 });
    checkpoint('finished');
    expect(store.verifyDebate(id)).toMatchObject({ state: 'sealed', calls: 2 });
  });

  it('chains each debate on its own when debates are recorded side by side', () => {
    store.createDebate(newDebate({ id: 'a' }));
    store.createDebate(newDebate({ id: 'b' }));
    for (let i = 0; i < 3; i++) {
      store.recordCall(call('a', { round: i }));
      store.recordCall(call('b', { round: i }));
    }
    expect(store.verifyDebate('a')).toMatchObject({ state: 'unsealed', calls: 3 });
    expect(store.verifyDebate('b')).toMatchObject({ state: 'unsealed', calls: 3 });
  });

  it('continues the chain from the database when another store recorded the earlier calls', () => {
    recordDebate('d-0001', false);
    const other = openStore(join(dir.dir, 'c.db'));
    other.recordCall(call('d-0001', { stage: 'critique', round: 1 }));
    other.close();
    expect(store.verifyDebate('d-0001')).toMatchObject({ state: 'unsealed', calls: 4 });
  });

  it('goes on from what another store wrote to the same debate meanwhile (two processes writing it in turn): the chain, the numbers and the digests are read again', () => {
    recordDebate('d-0001', false);
    // A second writer on the same file, as a second process would be: it writes to the debate while the first store holds what it knew.
    const other = openStore(join(dir.dir, 'c.db'));
    other.recordCall(call('d-0001', { stage: 'synthesis', agentId: 'synthesizer', round: 0 }));
    other.recordSynthesis('d-0001', { status: 'failed', synthesis: null, error: 'the other run failed too' });
    other.recorded('d-0001', () => recordQuality(other, 'd-0001', { stage: 'opening', round: 0, agentId: 'ada', try: 0, score: 60, action: 'PASS', reasons: ['rated by the other'] }, 5));
    store.recordCall(call('d-0001', { stage: 'synthesis', agentId: 'synthesizer', round: 0, attempt: 1 }));
    store.recordSynthesis('d-0001', { status: 'failed', synthesis: null, error: 'and this one' });
    other.recordCall(call('d-0001', { stage: 'synthesis', agentId: 'synthesizer', round: 0, attempt: 2 }));
    other.close();
    store.finishDebate('d-0001', { status: 'completed', exitReason: 'max_rounds', error: null, roundsCompleted: 0, finalConvergence: 0.5, finishedAt: 1_700_000_009_000 });
    expect(store.verifyDebate('d-0001')).toMatchObject({ state: 'sealed', calls: 6 });
    const attempts = (sqlite.prepare('select attempt from synthesis_attempts where debate_id = ? order by attempt').all('d-0001') as { attempt: number }[]).map((r) => r.attempt);
    expect(attempts).toEqual([1, 2, 3]);
  });

  it('chains a call after the one another store wrote to the same debate since, never beside it', () => {
    recordDebate('d-0001', false);
    const other = openStore(join(dir.dir, 'c.db'));
    for (let round = 1; round <= 3; round++) {
      store.recordCall(call('d-0001', { stage: 'critique', round }));
      other.recordCall(call('d-0001', { stage: 'critique', round, agentId: 'bo', model: 'qwen2.5:7b' }));
    }
    other.close();
    const rows = sqlite.prepare('select prev_hash, hash from calls where debate_id = ? order by id').all('d-0001') as { prev_hash: string | null; hash: string }[];
    expect(rows.map((r, i) => r.prev_hash === (i === 0 ? null : rows[i - 1]!.hash))).toEqual(rows.map(() => true));
    expect(store.verifyDebate('d-0001')).toMatchObject({ state: 'unsealed', calls: 9 });
  });

  it('refuses the next write, sealing nothing, when another process edited a row of the debate and rewrote its seal since this store last wrote', () => {
    recordDebate('d-0001', false);
    // This store has passed the gate and goes on writing; meanwhile a turn is edited and the seal changed by hand.
    store.recordCall(call('d-0001', { stage: 'critique', round: 1 }));
    sqlite.prepare("update turns set position = 'Neither' where debate_id = 'd-0001' and agent_id = 'bo'").run();
    sqlite.prepare("update debates set seal = ? where id = 'd-0001'").run('e'.repeat(64));
    const before = sqlite.prepare("select seal, seal_signature from debates where id = 'd-0001'").get();
    const calls = callIds().length;
    expect(() => store.recordCall(call('d-0001', { stage: 'critique', round: 2 }))).toThrow(/was edited/);
    expect(() => store.recordSynthesis('d-0001', { status: 'failed', synthesis: null, error: 'over an edit' })).toThrow(/was edited/);
    expect(sqlite.prepare("select seal, seal_signature from debates where id = 'd-0001'").get()).toEqual(before);
    expect(callIds().length).toBe(calls);
    expect(broken(store.verifyDebate('d-0001')).row).toEqual({ table: 'turns', key: '0/bo' });
  });

  it('numbers steps, budget decisions and synthesis attempts on from what the file holds: after another store, beside another debate, after a write rolled back', () => {
    const step = (id: string, at: number): void => store.recorded(id, () => recordProtocolStep(store, id, { kind: 'champion', agentId: 'ada', runnerUp: null, position: 'No' }, null, at));
    const decision = (id: string): void => store.recorded(id, () => recordBudgetDecision(store, id, { kind: 'skip', stage: 'critique', round: 1, agentId: 'bo', detail: 'over', used: 10, limit: 5 }, 1));
    const numbers = (table: string, column: string, id: string): number[] =>
      (sqlite.prepare(`select ${column} as n from ${table} where debate_id = ? order by n`).all(id) as { n: number }[]).map((r) => r.n);
    store.createDebate(newDebate({ id: 'd-0001' }));
    step('d-0001', 1);
    step('d-0001', 2);
    decision('d-0001');
    store.recordSynthesis('d-0001', { status: 'failed', synthesis: null, error: 'first' });
    store.close();
    // Another store goes on from the file, with another debate between its writes.
    store = openStore(join(dir.dir, 'c.db'));
    store.createDebate(newDebate({ id: 'd-0002' }));
    step('d-0002', 1);
    step('d-0001', 3);
    decision('d-0001');
    store.recordSynthesis('d-0001', { status: 'failed', synthesis: null, error: 'second' });
    // A write rolled back takes its number with it.
    expect(() =>
      store.recorded('d-0001', () => {
        recordProtocolStep(store, 'd-0001', { kind: 'champion', agentId: 'bo', runnerUp: null, position: 'Yes' }, null, 4);
        throw new Error('the write fails after the step');
      }),
    ).toThrow(/fails after the step/);
    step('d-0001', 5);
    expect(numbers('protocol_steps', 'seq', 'd-0001')).toEqual([0, 1, 2, 3]);
    expect((sqlite.prepare('select at from protocol_steps where debate_id = ? and seq = 3').get('d-0001') as { at: number }).at).toBe(5);
    expect(numbers('protocol_steps', 'seq', 'd-0002')).toEqual([0]);
    expect(numbers('budget_decisions', 'seq', 'd-0001')).toEqual([0, 1]);
    expect(numbers('synthesis_attempts', 'attempt', 'd-0001')).toEqual([1, 2]);
    store.finishDebate('d-0001', { status: 'completed', exitReason: 'max_rounds', error: null, roundsCompleted: 0, finalConvergence: null, finishedAt: 1_700_000_009_000 });
    expect(store.verifyDebate('d-0001')).toMatchObject({ state: 'sealed' });
  });

  it('hashes a call as documented: sha256 of the row without id, hash and NULLs, in canonical JSON', () => {
    const row = { id: 7, debate_id: 'd', stage: 'opening', round: 0, raw: 'é"\n', error: null, prev_hash: 'ab', hash: 'x', finished_at: 2 };
    const text = '{"debate_id":"d","finished_at":2,"prev_hash":"ab","raw":"é\\"\\n","round":0,"stage":"opening"}';
    expect(callHash(row)).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
  });

  it('keeps the digests\' JSON, row by row, equal to the canonical JSON of them all: keys that are array indices and keys that only look like them, set, replaced and removed', () => {
    const random = mulberry32(11);
    const keys = ['0', '1', '2', '9', '10', '11', '100', '01', '007', '-1', '1.5', '4294967294', '4294967295', '99999999999', 'a', 'B', 'é', '\u{1F600}', 'ｚ', '1/ada', 'critique/0/bo/0', '', '__proto__'];
    const tables = ['turns', 'rounds', 'protocol_steps'];
    const expected: Record<string, Record<string, string>> = {};
    const digests = new CheckpointDigests({ rounds: { 3: 'x', 1: 'y' } });
    expected.rounds = Object.assign(Object.create(null), { 3: 'x', 1: 'y' });
    for (let i = 0; i < 600; i++) {
      const table = tables[Math.floor(random() * tables.length)]!;
      const key = keys[Math.floor(random() * keys.length)]!;
      const digest = random() < 0.3 ? null : `d${Math.floor(random() * 4)}`;
      digests.setRow(table, key, digest);
      const rows = (expected[table] ??= Object.create(null) as Record<string, string>);
      if (digest === null) delete rows[key];
      else rows[key] = digest;
      if (Object.keys(rows).length === 0) delete expected[table];
      expect(digests.rowsJson(), `after ${i + 1} changes`).toBe(canonicalJson(expected));
    }
  });

  it('seals as docs/record.md says: a table\'s keys that are array indices (seq 0…11) first, in numeric order, then the others by UTF-16 code units', () => {
    recordDebate('d-0001', false);
    for (let i = 0; i < 12; i++) store.recorded('d-0001', () => recordProtocolStep(store, 'd-0001', { kind: 'champion', agentId: 'ada', runnerUp: null, position: `P${i}` }, null, i));
    store.finishDebate('d-0001', { status: 'completed', exitReason: 'max_rounds', error: null, roundsCompleted: 0, finalConvergence: 0.5, finishedAt: 1_700_000_009_000 });
    const rows = readDebateRows(sqlite, 'd-0001', (q) => sqlite.prepare(q))!;
    const digests = rowDigests(rows);
    // The documented order, written out independently of the code under test.
    const index = (k: string): boolean => /^(0|[1-9]\d*)$/.test(k) && Number(k) <= 4_294_967_294;
    const order = (a: string, b: string): number => (index(a) && index(b) ? Number(a) - Number(b) : index(a) ? -1 : index(b) ? 1 : a < b ? -1 : a > b ? 1 : 0);
    const encode = (map: Record<string, string>): string => `{${Object.keys(map).sort(order).map((k) => `${JSON.stringify(k)}:${JSON.stringify(map[k])}`).join(',')}}`;
    const rowsText = `{${Object.keys(digests).sort().map((t) => `${JSON.stringify(t)}:${encode(digests[t]!)}`).join(',')}}`;
    expect(Object.keys(digests.protocol_steps!).sort(order).join(' ')).toBe('0 1 2 3 4 5 6 7 8 9 10 11');
    const lastHash = (sqlite.prepare("select hash from calls where debate_id = 'd-0001' order by id desc limit 1").get() as { hash: string }).hash;
    const text = `{"calls":{"count":3,"head":${JSON.stringify(lastHash)}},"rows":${rowsText},"v":1}`;
    const seal = createHash('sha256').update(text, 'utf8').digest('hex');
    expect(sealOf(rows)).toBe(seal);
    expect(store.verifyDebate('d-0001')).toMatchObject({ state: 'sealed', seal });
  });

  it('hashes any row as its keys and values written one by one, sorted: text of every kind, numbers, and the keys an object would reorder or drop', () => {
    const random = mulberry32(37);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const pieces = ['a', 'é', '"', '\\', '\n', '\u0000', '\u2028', '\ud83d', '\udc00', '😀', '\u202e', ' ', 'Z'];
    const text = (): string => Array.from({ length: Math.floor(random() * 12) }, () => pick(pieces)).join('');
    const values: (() => unknown)[] = [text, () => Math.floor(random() * 1e6) - 5e5, () => random() * 1e3, () => pick([0, -0, 1e21, 5e-324, 2 ** 53, -1.5]), () => null];
    const odd = ['0', '10', '2x', '__proto__', 'constructor', 'toString', ''];
    const reference = (row: Record<string, unknown>): string =>
      `{${Object.keys(row)
        .filter((k) => !['id', 'hash'].includes(k) && row[k] !== null && row[k] !== undefined)
        .sort()
        .map((k) => `${JSON.stringify(k)}:${JSON.stringify(row[k])}`)
        .join(',')}}`;
    for (let i = 0; i < 400; i++) {
      const row: Record<string, unknown> = {};
      const keys = Array.from({ length: 1 + Math.floor(random() * 8) }, () => (random() < 0.15 ? pick(odd) : `c_${text()}`));
      for (const key of [...keys, 'id', 'hash']) Object.defineProperty(row, key, { value: pick(values)(), enumerable: true, writable: true, configurable: true });
      expect(callHash(row)).toBe(createHash('sha256').update(reference(row), 'utf8').digest('hex'));
    }
  });

  it('records text with a lone surrogate so that it still verifies', () => {
    store.createDebate(newDebate());
    store.recordCall(call('d-0001', { raw: 'half \ud83d of an emoji', error: 'bad \udc00' }));
    expect(store.verifyDebate('d-0001').state).toBe('unsealed');
  });

  it('writes every column of calls (a column added later must be written, and so hashed)', () => {
    const columns = (sqlite.prepare('select name from pragma_table_info(?)').all('calls') as { name: string }[]).map((c) => c.name);
    expect([...CALL_COLUMNS].sort()).toEqual(columns.filter((c) => c !== 'id').sort());
  });

  it('covers every table of debate rows (a new table must join the seal)', () => {
    const tables = sqlite
      .prepare("select m.name from sqlite_master m where m.type = 'table' and exists (select 1 from pragma_table_info(m.name) p where p.name = 'debate_id')")
      .all()
      .map((r) => (r as { name: string }).name)
      .sort();
    // calls are covered by the chain; a bench trial only points at a debate it ran; seal_rows holds the digests themselves.
    const elsewhere = ['bench_trials', 'calls', 'seal_rows'];
    expect(tables).toEqual([...Object.keys(SEALED_TABLES), ...elsewhere].sort());
  });

  it('keys each sealed table by its primary key, NOT NULL: a key names one row, so a debate\'s rows are hashed in any order', () => {
    for (const [table, keyColumns] of Object.entries(SEALED_TABLES)) {
      const columns = sqlite.prepare('select name, "notnull" as required, pk from pragma_table_info(?)').all(table) as { name: string; required: number; pk: number }[];
      const primary = columns.filter((c) => c.pk > 0).map((c) => c.name);
      expect({ table, primary: primary.sort() }).toEqual({ table, primary: ['debate_id', ...keyColumns].sort() });
      expect({ table, nullable: columns.filter((c) => c.pk > 0 && c.required === 0).map((c) => c.name) }).toEqual({ table, nullable: [] });
    }
  });
});

describe('databases written before seal_rows (0017), with the digests in the debate\'s row', () => {
  it('verify and name a changed row from that column; the first write to a debate moves its digests to seal_rows, a debate not written to keeps them', () => {
    recordDebate('d-0001');
    recordDebate('d-0002');
    store.close();
    asBefore0017(sqlite);
    const inRow = (id: string) => (sqlite.prepare('select seal_rows_json as j from debates where id = ?').get(id) as { j: string | null }).j;
    expect(JSON.parse(inRow('d-0001')!)).toEqual(rowDigests(readDebateRows(sqlite, 'd-0001')!));

    store = openStore(join(dir.dir, 'c.db'));
    expect(store.verifyDebate('d-0001')).toMatchObject({ state: 'sealed' });
    store.recordSynthesis('d-0001', { status: 'failed', synthesis: null, error: 'again, later' });
    expect(inRow('d-0001')).toBeNull();
    const tables = (sqlite.prepare("select table_name as t from seal_rows where debate_id = 'd-0001' order by t").all() as { t: string }[]).map((r) => r.t);
    expect(tables).toEqual(Object.keys(rowDigests(readDebateRows(sqlite, 'd-0001')!)).sort());
    expect(store.verifyDebate('d-0001')).toMatchObject({ state: 'sealed' });
    expect(inRow('d-0002')).not.toBeNull();
    expect(sqlite.prepare("select count(*) as n from seal_rows where debate_id = 'd-0002'").get()).toEqual({ n: 0 });
    for (const id of ['d-0001', 'd-0002']) {
      sqlite.prepare("update turns set position = 'Neither' where debate_id = ? and agent_id = 'bo'").run(id);
      expect(broken(store.verifyDebate(id)).row, id).toEqual({ table: 'turns', key: '0/bo' });
    }
    // The write that would move the edited debate's digests is refused by the seal gate: nothing moves, nothing is sealed.
    const before = sqlite.prepare("select seal, seal_rows_json from debates where id = 'd-0002'").get();
    expect(() => store.recordSynthesis('d-0002', { status: 'failed', synthesis: null, error: 'over an edit' })).toThrow(/was edited/);
    expect(sqlite.prepare("select seal, seal_rows_json from debates where id = 'd-0002'").get()).toEqual(before);
    expect(sqlite.prepare("select count(*) as n from seal_rows where debate_id = 'd-0002'").get()).toEqual({ n: 0 });
    expect(sqlite.prepare("select count(*) as n from synthesis_attempts where debate_id = 'd-0002'").get()).toEqual({ n: 1 });
  });
});

describe('databases written when calls had AUTOINCREMENT (before 0016)', () => {
  it('keep every call id, verify sealed after the rebuild, and number new calls after the largest id', () => {
    recordDebate('d-0001');
    recordDebate('d-0002', false);
    const ids = [...callIds('d-0001'), ...callIds('d-0002')];
    // Put the file back as 0015 left it: `calls` with AUTOINCREMENT (and its sqlite_sequence row), 0016 not applied.
    store.close();
    asBefore0016(sqlite);
    expect(sqlite.prepare("select seq from sqlite_sequence where name = 'calls'").get()).toEqual({ seq: Math.max(...ids) });

    store = openStore(join(dir.dir, 'c.db'));
    const shape = sqlite.prepare("select sql from sqlite_master where name = 'calls'").get() as { sql: string };
    expect(shape.sql).not.toMatch(/autoincrement/i);
    expect(sqlite.prepare("select count(*) as n from sqlite_sequence where name = 'calls'").get()).toEqual({ n: 0 });
    expect([...callIds('d-0001'), ...callIds('d-0002')]).toEqual(ids);
    expect(store.verifyDebate('d-0001')).toMatchObject({ state: 'sealed', calls: 3 });
    // The unfinished debate goes on: its chain and checkpoint carry over the rebuild.
    const next = store.recordCall(call('d-0002'));
    expect(next).toBe(Math.max(...ids) + 1);
    store.finishDebate('d-0002', { status: 'completed', exitReason: 'max_rounds', error: null, roundsCompleted: 0, finalConvergence: 0.5, finishedAt: 1_700_000_009_500 });
    expect(store.verifyDebate('d-0002')).toMatchObject({ state: 'sealed', calls: 4 });
  });

  it('carry a hand edit through the rebuild unlaundered: verify still names the call, and the next write to that debate is refused and seals nothing', () => {
    recordDebate('d-0001');
    recordDebate('d-0002', false);
    store.close();
    asBefore0016(sqlite);
    sqlite.prepare("update calls set raw = 'forged' where id = (select min(id) from calls where debate_id = 'd-0002')").run();
    const sealBefore = sqlite.prepare("select seal from debates where id = 'd-0002'").get();

    store = openStore(join(dir.dir, 'c.db'));
    expect(store.verifyDebate('d-0001')).toMatchObject({ state: 'sealed' });
    expect(store.verifyDebate('d-0002')).toMatchObject({ state: 'broken', call: { number: 1 } });
    expect(() => store.recordCall(call('d-0002'))).toThrow(/does not match its hashes/);
    expect(callIds('d-0002')).toHaveLength(3);
    expect(sqlite.prepare("select seal from debates where id = 'd-0002'").get()).toEqual(sealBefore);
  });
});

describe('databases written before the chain', () => {
  it('migrate, sealing their debates as they stand (calls chained, marked adopted), so later edits are caught; new debates are sealed', () => {
    // A database at migration 0002, with a debate recorded by that version.
    const old = join(dir.dir, 'migrations-0002');
    mkdirSync(join(old, 'meta'), { recursive: true });
    const journal = JSON.parse(readFileSync(packagePath('migrations', 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string }[] };
    const kept = journal.entries.filter((e) => e.tag < '0003');
    writeFileSync(join(old, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries: kept }));
    for (const e of kept) cpSync(packagePath('migrations', `${e.tag}.sql`), join(old, `${e.tag}.sql`));
    const file = join(dir.dir, 'old.db');
    const db = new Database(file);
    migrate(drizzle(db), { migrationsFolder: old });
    db.prepare(
      "insert into debates (id, question, preset_name, preset_json, preset_hash, engine_version, host, status, pid, hostname, created_at) values ('old-1', 'q', 'p', '{}', 'h', '0.1.0', 'h', 'completed', 1, 'x', 1)",
    ).run();
    db.prepare(
      "insert into calls (debate_id, stage, round, agent_id, attempt, host, model, messages_json, options_json, raw, status, started_at, finished_at) values ('old-1', 'opening', 0, 'a', 0, 'h', 'm', '[]', '{}', 'r', 'ok', 1, 2)",
    ).run();
    db.close();

    const upgraded = openStore(file);
    try {
      const adopted = upgraded.verifyDebate('old-1');
      expect(adopted).toMatchObject({ state: 'sealed', calls: 1 });
      expect((adopted as { adoptedAt?: number }).adoptedAt).toBeGreaterThan(0);
      upgraded.createDebate(newDebate({ id: 'new-1' }));
      upgraded.recordCall(call('new-1'));
      upgraded.finishDebate('new-1', { status: 'completed', exitReason: 'converged', error: null, roundsCompleted: 0, finalConvergence: 1, finishedAt: 5 });
      expect(upgraded.verifyDebate('new-1')).toMatchObject({ state: 'sealed', calls: 1 });
    } finally {
      upgraded.close();
    }
    // The old call, chained at the upgrade, can no longer be edited unseen; nor can the adoption mark be removed or given.
    const s = new Database(file);
    s.prepare("update calls set raw = 'forged' where debate_id = 'old-1'").run();
    s.prepare("update debates set adopted_at = 1 where id = 'new-1'").run();
    s.close();
    const again = openStore(file);
    try {
      expect(again.verifyDebate('old-1')).toMatchObject({ state: 'broken', call: { number: 1 } });
      expect(again.verifyDebate('new-1')).toMatchObject({ state: 'broken', row: { table: 'debates' } });
    } finally {
      again.close();
    }
  });

  it('seal the debates that were in the file, unsealed, when it gained checkpoints, and only those; a list of them inserted by hand decides nothing', () => {
    // A database at migration 0009 (hash chain, no checkpoints), with two unsealed interrupted debates.
    const old = join(dir.dir, 'migrations-0009');
    mkdirSync(join(old, 'meta'), { recursive: true });
    const journal = JSON.parse(readFileSync(packagePath('migrations', 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string }[] };
    const kept = journal.entries.filter((e) => e.tag < '0010');
    writeFileSync(join(old, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries: kept }));
    for (const e of kept) cpSync(packagePath('migrations', `${e.tag}.sql`), join(old, `${e.tag}.sql`));
    const file = join(dir.dir, 'chained.db');
    const db = new Database(file);
    migrate(drizzle(db), { migrationsFolder: old });
    for (const id of ['no-calls', 'some-calls']) {
      db.prepare(
        `insert into debates (id, question, preset_name, preset_json, preset_hash, engine_version, host, status, exit_reason, pid, hostname, created_at) values ('${id}', 'q', 'p', '{}', 'h', '0.1.0', 'h', 'interrupted', 'interrupted', 1, 'x', 1)`,
      ).run();
    }
    const row = { debate_id: 'some-calls', stage: 'opening', round: 0, agent_id: 'a', attempt: 0, host: 'h', model: 'm', messages_json: '[]', options_json: '{}', raw: 'r', status: 'ok', started_at: 1, finished_at: 2, prev_hash: null };
    db.prepare('insert into calls (debate_id, stage, round, agent_id, attempt, host, model, messages_json, options_json, raw, status, started_at, finished_at, prev_hash, hash) values (@debate_id, @stage, @round, @agent_id, @attempt, @host, @model, @messages_json, @options_json, @raw, @status, @started_at, @finished_at, @prev_hash, @hash)').run({ ...row, hash: callHash(row) });
    db.close();

    const upgraded = openStore(file);
    try {
      expect(upgraded.verifyDebate('no-calls')).toMatchObject({ state: 'sealed', calls: 0, adoptedAt: expect.any(Number) });
      expect(upgraded.verifyDebate('some-calls')).toMatchObject({ state: 'sealed', calls: 1, adoptedAt: expect.any(Number) });
      // A debate recorded after the upgrade and stripped of its seal is not given the older rules.
      upgraded.createDebate(newDebate({ id: 'new-1' }));
      upgraded.finishDebate('new-1', { status: 'interrupted', exitReason: 'interrupted', error: null, roundsCompleted: 0, finalConvergence: null, finishedAt: 5 });
    } finally {
      upgraded.close();
    }
    sqlite.close();
    sqlite = new Database(file);
    sqlite.prepare("update debates set seal = null, seal_rows_json = null where id = 'new-1'").run();
    // The old marker, inserted by hand, is not read by anything.
    sqlite.prepare('create table if not exists legacy_debates (debate_id text primary key not null)').run();
    sqlite.prepare("insert into legacy_debates values ('new-1')").run();
    const again = openStore(file);
    try {
      expect(again.verifyDebate('new-1').state).toBe('broken');
    } finally {
      again.close();
    }
  });
});
