import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RoundJudgement, SynthesisRecord, TurnRecord } from '../../src/engine/events.js';
import { StoreError } from '../../src/errors.js';
import { openStore, presetHash, type Store } from '../../src/store/index.js';
import { storeErrorFrom } from '../../src/store/store.js';
import { call, newDebate, openingTurn, panel, preset } from './fixtures.js';

let store: Store;

beforeEach(() => {
  store = openStore(':memory:');
});

afterEach(() => {
  store.close();
});

function thrown(fn: () => unknown): StoreError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(StoreError);
    return err as StoreError;
  }
  throw new Error('expected a StoreError, nothing was thrown');
}

describe('writing and reading a debate', () => {
  it('returns everything recorded about a debate from getDebate, decoded', () => {
    store.createDebate(newDebate());
    const first = call('d-0001');
    const repair = call('d-0001', {
      stage: 'critique',
      round: 1,
      agentId: 'bo',
      attempt: 1,
      model: 'qwen2.5:7b',
      format: null,
      raw: 'not json',
      parsed: null,
      status: 'invalid',
      validationError: 'Expected object, received string',
      truncation: 'peer cy shortened to 400 tokens',
      metrics: {
        promptTokens: null,
        completionTokens: null,
        totalDurationNs: null,
        loadDurationNs: null,
        promptEvalDurationNs: null,
        evalDurationNs: null,
        doneReason: null,
      },
    });
    const firstId = store.recordCall(first);
    const repairId = store.recordCall(repair);
    expect(repairId).toBeGreaterThan(firstId);

    const opening = openingTurn('ada', 'No');
    const critique: TurnRecord = {
      round: 1,
      agentId: 'bo',
      model: 'qwen2.5:7b',
      status: 'ok',
      position: 'Not yet',
      confidence: 0.55,
      opening: null,
      critique: {
        agreements: [{ with: 'ada', on: 'size' }],
        disagreements: [{ with: 'cy', on: 'cost', reason: 'replicas are cheap' }],
        updatedPosition: 'Not yet',
        confidence: 0.55,
      },
      error: null,
    };
    const failed: TurnRecord = {
      round: 1,
      agentId: 'cy',
      model: 'llama3.1:8b',
      status: 'failed',
      position: null,
      confidence: null,
      opening: null,
      critique: null,
      error: 'timed out after 600 s',
    };
    store.recordTurn('d-0001', critique);
    store.recordTurn('d-0001', opening);
    store.recordTurn('d-0001', failed);

    const judged: RoundJudgement = {
      round: 1,
      status: 'ok',
      score: { recommendation: 0.9, facts: 0.8, caveats: 0.7, rationale: 'Mostly agree.' },
      convergence: 0.8,
      error: null,
    };
    const judgeFailed: RoundJudgement = { round: 0, status: 'failed', score: null, convergence: null, error: 'garbage' };
    store.recordJudgement('d-0001', judged);
    store.recordJudgement('d-0001', judgeFailed);

    const synthesis: SynthesisRecord = {
      status: 'ok',
      synthesis: {
        recommendation: 'Do not shard yet.',
        triggersToRevisit: ['writes exceed 5k/s'],
        confidence: { level: 'medium', converged: 2 },
        minorityPositions: [{ agent: 'cy', round: 0, argument: 'Shard now', whyItMatters: 'growth' }],
        failedAgents: [{ agent: 'cy', reason: 'timed out' }],
      },
      error: null,
    };
    store.recordSynthesis('d-0001', synthesis);
    store.setPlan('d-0001', { hosts: [{ url: 'http://127.0.0.1:11434', inFlight: 2 }] });
    store.finishDebate('d-0001', {
      status: 'completed',
      exitReason: 'max_rounds',
      error: null,
      roundsCompleted: 2,
      finalConvergence: 0.8,
      finishedAt: 1_700_000_100_000,
    });

    const stored = store.getDebate('d-0001');
    expect(stored).toMatchObject({
      id: 'd-0001',
      question: 'Should we shard the database?',
      presetName: 'trio',
      presetHash: presetHash(preset),
      engineVersion: '0.1.0',
      host: 'http://127.0.0.1:11434',
      status: 'completed',
      exitReason: 'max_rounds',
      error: null,
      roundsCompleted: 2,
      finalConvergence: 0.8,
      plan: { hosts: [{ url: 'http://127.0.0.1:11434', inFlight: 2 }] },
      pid: process.pid,
      createdAt: 1_700_000_000_000,
      finishedAt: 1_700_000_100_000,
    });
    expect(stored.preset).toEqual(preset);
    expect(stored.agents).toEqual(panel);
    expect(stored.calls).toEqual([
      { ...first, id: firstId },
      { ...repair, id: repairId },
    ]);
    expect(stored.turns).toEqual([opening, critique, failed]);
    expect(stored.rounds).toEqual([judgeFailed, judged]);
    expect(stored.synthesis).toEqual(synthesis);
  });

  it('returns no synthesis and empty lists for a debate that has only started', () => {
    store.createDebate(newDebate({ agents: [] }));
    const stored = store.getDebate('d-0001');
    expect(stored).toMatchObject({ status: 'running', exitReason: null, finishedAt: null, plan: null });
    expect(stored.agents).toEqual([]);
    expect(stored.calls).toEqual([]);
    expect(stored.turns).toEqual([]);
    expect(stored.rounds).toEqual([]);
    expect(stored.synthesis).toBeNull();
  });

  it('replaces a turn recorded again for the same round and agent, as after a repair', () => {
    store.createDebate(newDebate());
    const invalid: TurnRecord = { ...openingTurn('ada', 'No'), status: 'invalid', opening: null, error: 'bad JSON' };
    store.recordTurn('d-0001', invalid);
    const repaired = openingTurn('ada', 'Yes');
    store.recordTurn('d-0001', repaired);
    expect(store.getDebate('d-0001').turns).toEqual([repaired]);
  });

  it('replaces a judgement and a synthesis recorded twice', () => {
    store.createDebate(newDebate());
    store.recordJudgement('d-0001', { round: 0, status: 'failed', score: null, convergence: null, error: 'x' });
    const retried: RoundJudgement = {
      round: 0,
      status: 'ok',
      score: { recommendation: 1, facts: 1, caveats: 0.5, rationale: 'ok' },
      convergence: 0.833,
      error: null,
    };
    store.recordJudgement('d-0001', retried);
    store.recordSynthesis('d-0001', { status: 'failed', synthesis: null, error: 'first try' });
    store.recordSynthesis('d-0001', { status: 'failed', synthesis: null, error: 'second try' });
    const stored = store.getDebate('d-0001');
    expect(stored.rounds).toEqual([retried]);
    expect(stored.synthesis).toEqual({ status: 'failed', synthesis: null, error: 'second try' });
  });

  it('sets a model digest on every agent of the debate that runs that model', () => {
    store.createDebate(newDebate());
    store.setAgentDigest('d-0001', 'llama3.1:8b', 'sha256:llama');
    const digests = Object.fromEntries(store.getDebate('d-0001').agents.map((a) => [`${a.role}:${a.id}`, a.digest]));
    expect(digests).toEqual({
      'debater:ada': 'sha256:llama',
      'debater:bo': 'sha256:bo',
      'debater:cy': 'sha256:llama',
      'judge:judge': null,
      'synthesizer:synthesizer': 'sha256:llama',
    });
  });

  it('hashes presets by content, whatever the key order', () => {
    const reordered = JSON.parse(
      JSON.stringify({ synthesizer: preset.synthesizer, protocol: preset.protocol, judge: preset.judge, agents: preset.agents, name: preset.name }),
    ) as typeof preset;
    expect(presetHash(reordered)).toBe(presetHash(preset));
    expect(presetHash({ ...preset, name: 'other' })).not.toBe(presetHash(preset));
    expect(presetHash(preset)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('failures', () => {
  it('refuses to finish a debate that does not exist, naming the database', () => {
    const err = thrown(() =>
      store.finishDebate('nope', {
        status: 'failed',
        exitReason: 'error',
        error: 'x',
        roundsCompleted: 0,
        finalConvergence: null,
        finishedAt: 1,
      }),
    );
    expect(err.code).toBe('DEBATE_NOT_FOUND');
    expect(err.message).toContain(':memory:');
  });

  it('refuses a call for a debate that does not exist with a StoreError, not a raw SQLite error', () => {
    const err = thrown(() => store.recordCall(call('ghost')));
    expect(err.code).toBe('STORE_CONSTRAINT');
    expect(err.message).toContain('ghost');
    expect(err.exitCode).toBe(4);
  });

  it('refuses to create the same debate twice', () => {
    store.createDebate(newDebate());
    expect(thrown(() => store.createDebate(newDebate())).code).toBe('STORE_CONSTRAINT');
    expect(store.listDebates()).toHaveLength(1);
  });

  it('explains a full disk with the database path and how to free space', () => {
    // The shape drizzle throws: its own error with the driver's SqliteError as cause.
    const sqliteError = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    const err = storeErrorFrom(new Error('Failed query', { cause: sqliteError }), 'Could not record a call in /data/c.db');
    expect(err.code).toBe('STORE_DISK_FULL');
    expect(err.message).toBe('Could not record a call in /data/c.db: the disk is full.');
    expect(err.hint).toMatch(/free disk space/i);
  });

  it('explains a read-only database with a hint about permissions', () => {
    const sqliteError = Object.assign(new Error('attempt to write a readonly database'), { code: 'SQLITE_READONLY' });
    const err = storeErrorFrom(sqliteError, 'Could not record a call in /data/c.db');
    expect(err.code).toBe('STORE_READONLY');
    expect(err.message).toContain('/data/c.db');
    expect(err.hint).toMatch(/permissions/);
  });
});

describe('listing debates', () => {
  beforeEach(() => {
    store.createDebate(newDebate({ id: 'aaa-1', createdAt: 1000 }));
    store.createDebate(newDebate({ id: 'aab-2', createdAt: 3000, agents: panel.slice(0, 2) }));
    store.createDebate(newDebate({ id: 'bbb-3', createdAt: 2000 }));
    store.recordCall(call('aaa-1'));
    store.recordCall(call('aaa-1', { agentId: 'bo' }));
    store.recordCall(call('bbb-3'));
    store.finishDebate('bbb-3', {
      status: 'completed',
      exitReason: 'converged',
      error: null,
      roundsCompleted: 1,
      finalConvergence: 0.9,
      finishedAt: 2500,
    });
  });

  it('lists debates newest first with their debater and call counts', () => {
    const list = store.listDebates();
    expect(list.map((d) => [d.id, d.agentCount, d.callCount])).toEqual([
      ['aab-2', 2, 0],
      ['bbb-3', 3, 1],
      ['aaa-1', 3, 2],
    ]);
    expect(list[1]).toEqual({
      id: 'bbb-3',
      question: 'Should we shard the database?',
      presetName: 'trio',
      status: 'completed',
      exitReason: 'converged',
      roundsCompleted: 1,
      finalConvergence: 0.9,
      agentCount: 3,
      callCount: 1,
      createdAt: 2000,
      finishedAt: 2500,
      bench: false,
    });
  });

  it('pages with limit and offset and filters by status', () => {
    expect(store.listDebates({ limit: 1 }).map((d) => d.id)).toEqual(['aab-2']);
    expect(store.listDebates({ limit: 1, offset: 1 }).map((d) => d.id)).toEqual(['bbb-3']);
    expect(store.listDebates({ offset: 2 }).map((d) => d.id)).toEqual(['aaa-1']);
    expect(store.listDebates({ status: 'running' }).map((d) => d.id)).toEqual(['aab-2', 'aaa-1']);
    expect(store.listDebates({ status: 'interrupted' })).toEqual([]);
  });
});

describe('resolving ids', () => {
  beforeEach(() => {
    store.createDebate(newDebate({ id: 'abc123' }));
    store.createDebate(newDebate({ id: 'abd456' }));
    store.createDebate(newDebate({ id: 'ab' }));
  });

  it('accepts a full id even when it is also a prefix of other ids', () => {
    expect(store.resolveId('ab')).toBe('ab');
    expect(store.resolveId('abc123')).toBe('abc123');
  });

  it('accepts a unique prefix', () => {
    expect(store.resolveId('abc')).toBe('abc123');
    expect(store.resolveId('abd4')).toBe('abd456');
  });

  it('names the database and points to `conclave list` for an unknown id', () => {
    const err = thrown(() => store.resolveId('zzz'));
    expect(err.code).toBe('DEBATE_NOT_FOUND');
    expect(err.message).toBe('No debate `zzz` in :memory:.');
    expect(err.hint).toBe('Run `conclave list` to see stored debates.');
    expect(err.exitCode).toBe(4);
  });

  it('lists the candidates for an ambiguous prefix', () => {
    store.createDebate(newDebate({ id: 'xy-1' }));
    store.createDebate(newDebate({ id: 'xy-2' }));
    const err = thrown(() => store.resolveId('xy'));
    expect(err.code).toBe('DEBATE_ID_AMBIGUOUS');
    expect(err.message).toContain('`xy-1`, `xy-2`');
  });

  it('treats prefix characters literally, not as patterns', () => {
    expect(thrown(() => store.resolveId('a%')).code).toBe('DEBATE_NOT_FOUND');
    expect(thrown(() => store.resolveId('_b')).code).toBe('DEBATE_NOT_FOUND');
    expect(thrown(() => store.resolveId('')).code).toBe('DEBATE_NOT_FOUND');
  });

  it('fails getDebate for an unknown id with the same message', () => {
    expect(thrown(() => store.getDebate('nope')).message).toBe('No debate `nope` in :memory:.');
  });
});
