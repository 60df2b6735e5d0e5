import { describe, expect, it } from 'vitest';
import { isTransient, withTransientRetry } from '../../src/engine/call/retry.js';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { CallError } from '../../src/backend/types.js';
import { type SimHandle, type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { closesAfterEach } from '../helpers/lifecycle.js';
import { agentOf, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

let sim: SimHandle | null = null;
let store: Store | null = null;

const track = closesAfterEach();

async function debateWith(override: (req: SimRequest) => SimReply | undefined) {
  const preset = testPreset(['a', 'b', 'c']);
  const script = scriptedResponder([0.2, 0.9], override);
  sim = track(await startSimulator({ models: simModels(preset), respond: script.respond }));
  store = track(openStore(':memory:'));
  const result = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store), retryDelaysMs: [10, 20] });
  return { result, stored: store.getDebate(result.id), seen: script.seen };
}

describe('transient failures', () => {
  it('asks again an agent whose runner crashed once, so it answers in every round and both sends are recorded', async () => {
    let crashed = false;
    const { result, stored } = await debateWith((req) => {
      if (agentOf(req) === 'b' && stageOf(req) === 'opening' && !crashed) {
        crashed = true;
        return { error: 'model runner has unexpectedly stopped', status: 500 };
      }
      return undefined;
    });
    expect(result.status).toBe('completed');
    const bTurns = stored.turns.filter((t) => t.agentId === 'b');
    expect(bTurns.length).toBeGreaterThan(1);
    expect(bTurns.every((t) => t.status !== 'failed')).toBe(true);
    const bOpening = stored.calls.filter((c) => c.agentId === 'b' && c.stage === 'opening');
    expect(bOpening.map((c) => c.status)).toEqual(['error', 'ok']);
    expect(bOpening[0]!.error).toContain('unexpectedly stopped');
    expect(result.synthesis?.synthesis?.failedAgents ?? []).toEqual([]);
  });

  it('recovers a stream that ended without done and one cut by an error line mid-reply', async () => {
    const failed = new Set<string>();
    const { result, stored } = await debateWith((req) => {
      const agent = agentOf(req) ?? '';
      if (stageOf(req) !== 'opening' || failed.has(agent)) return undefined;
      if (agent === 'a') {
        failed.add(agent);
        return { silentStop: true };
      }
      if (agent === 'c') {
        failed.add(agent);
        return { error: 'out of memory', failAfterTokens: 2 };
      }
      return undefined;
    });
    expect(result.status).toBe('completed');
    for (const agent of ['a', 'c']) {
      expect(stored.turns.find((t) => t.agentId === agent && t.round === 0)!.status).not.toBe('failed');
      expect(stored.calls.filter((c) => c.agentId === agent && c.stage === 'opening').map((c) => c.status)).toEqual(['error', 'ok']);
    }
  });

  it('gives up after two resends, so a runner that keeps crashing leaves a failed turn with three recorded sends', async () => {
    const { stored } = await debateWith((req) => (agentOf(req) === 'b' && stageOf(req) === 'opening' ? { error: 'model runner has unexpectedly stopped', status: 500 } : undefined));
    expect(stored.turns.find((t) => t.agentId === 'b' && t.round === 0)!.status).toBe('failed');
    expect(stored.calls.filter((c) => c.agentId === 'b' && c.stage === 'opening').map((c) => c.status)).toEqual(['error', 'error', 'error']);
  });

  it('never resends a request the server refused (400) or a model that is gone (404)', async () => {
    for (const code of ['BAD_REQUEST', 'MODEL_MISSING'] as const) {
      let sends = 0;
      const failures: unknown[] = [];
      const error = await withTransientRetry(
        () => {
          sends++;
          return Promise.reject(new CallError(code, 'no'));
        },
        (err) => failures.push(err),
        [1, 1],
      ).catch((e: unknown) => e);
      expect((error as CallError).code).toBe(code);
      expect(sends).toBe(1);
      expect(failures).toHaveLength(0);
    }
    expect(isTransient(new CallError('SERVER_ERROR', 'x', { status: 500 }))).toBe(true);
    expect(isTransient(new CallError('CALL_TIMEOUT', 'x'))).toBe(false);
  });
});
