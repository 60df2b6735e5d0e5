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

  it('keeps the debate going when one call keeps losing its connection mid-reply: the host answers the others, so it is no outage', async () => {
    const { result, stored } = await debateWith((req) => (agentOf(req) === 'b' && stageOf(req) === 'opening' ? { content: '{"position": "cut', dropAfterTokens: 1 } : undefined));
    expect(result.status).toBe('completed');
    const sends = stored.calls.filter((c) => c.agentId === 'b' && c.stage === 'opening');
    expect(sends.map((c) => [c.status, c.partial === true])).toEqual([
      ['error', true],
      ['error', true],
      ['error', true],
    ]);
    expect(sends[0]!.error).toContain(`The connection to ${sim!.url} broke in the middle of model-1:1b's reply`);
    expect(stored.turns.find((t) => t.agentId === 'b' && t.round === 0)!.status).toBe('failed');
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

describe('a server too busy to take a call', () => {
  it('is sent the call again after the Retry-After it asked for, over Ollama and OpenAI-compatible servers alike, and the agent keeps its seat', async () => {
    for (const api of ['ollama', 'openai'] as const) {
      const preset = testPreset(['a', 'b', 'c']);
      let busy = false;
      let refusedAt = 0;
      let resentAt = 0;
      const script = scriptedResponder([0.2, 0.9], (req) => {
        if (agentOf(req) !== 'b' || stageOf(req) !== 'opening') return undefined;
        if (!busy) {
          busy = true;
          refusedAt = Date.now();
          return { error: 'server busy, please try again', status: api === 'openai' ? 429 : 503, retryAfter: 1 };
        }
        resentAt ||= Date.now();
        return undefined;
      });
      const server = track(await startSimulator({ models: simModels(preset), respond: script.respond, ...(api === 'openai' ? { api } : {}) }));
      const db = track(openStore(':memory:'));
      const result = await runDebate({
        question: 'Should we do A?',
        preset,
        host: api === 'openai' ? `${server.url}/v1` : server.url,
        ...(api === 'openai' ? { hosts: [{ url: `${server.url}/v1`, api }] } : {}),
        recorder: recorder(db),
        retryDelaysMs: [10, 20],
      });
      const stored = db.getDebate(result.id);
      const opening = stored.calls.filter((c) => c.agentId === 'b' && c.stage === 'opening');
      expect(opening.map((c) => c.status), api).toEqual(['error', 'ok']);
      expect(opening[0]!.error).toMatch(/^HOST_BUSY: .* is busy/);
      // Retry-After: 1 was waited out, not the 10 ms the delays would have given.
      expect(resentAt - refusedAt, api).toBeGreaterThanOrEqual(900);
      expect(stored.turns.find((t) => t.agentId === 'b' && t.round === 0)!.status).not.toBe('failed');
    }
  });

  it('reads Retry-After as seconds or as an HTTP date, never below zero', async () => {
    const { retryAfterMs } = await import('../../src/backend/call-control.js');
    const now = Date.parse('2026-11-26T12:00:00Z');
    expect(retryAfterMs('3', now)).toBe(3000);
    expect(retryAfterMs('Thu, 26 Nov 2026 12:00:05 GMT', now)).toBe(5000);
    expect(retryAfterMs('Thu, 26 Nov 2026 11:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeNull();
    expect(retryAfterMs(null, now)).toBeNull();
  });
});

describe('a debate stopped by an outage', () => {
  it('names the kind of server that stopped answering, as the plan knows it, and how to start it', async () => {
    const { outageWords } = await import('../../src/engine/call/outage.js');
    expect(outageWords([{}])).toEqual({ detail: 'the Ollama host stopped answering', restart: '`ollama serve`' });
    expect(outageWords([{ api: 'openai' }, { api: 'openai' }]).detail).toBe('the OpenAI-compatible server stopped answering');
    expect(outageWords([{ api: 'openai' }, {}]).detail).toBe('a model server stopped answering');
  });
});

describe('a reply cut off at its token limit', () => {
  it('names a reply cut off at its token limit as cut, with the limit and the preset field that raises it, not as a server that ignored the schema', async () => {
    const seen: SimRequest[] = [];
    const { stored } = await debateWith((req) => {
      if (agentOf(req) !== 'b' || stageOf(req) !== 'opening') return undefined;
      seen.push(req);
      return { content: '{"position": "We should', doneReason: 'length' };
    });
    const calls = stored.calls.filter((c) => c.agentId === 'b' && c.stage === 'opening');
    expect(calls.map((c) => c.status)).toEqual(['invalid', 'invalid']);
    const limits = seen.map((req) => req.options.num_predict as number);
    expect(limits[1]).toBe(2 * limits[0]!);
    expect(calls[0]!.validationError).toBe(`The reply reached its token limit before its JSON was complete: it stopped at num_predict ${limits[0]}. If it recurs, raise \`protocol.maxAnswerTokens\` in the preset (or the agent's \`options.num_predict\`).`);
    expect(calls[1]!.validationError).toContain(`num_predict ${limits[1]}`);
    expect(seen[1]!.messages.at(-1)!.content).toContain('cut off at the length limit');
    const turn = stored.turns.find((t) => t.agentId === 'b' && t.round === 0)!;
    expect([turn.status, turn.error]).toEqual(['invalid', expect.stringContaining('protocol.maxAnswerTokens')]);
  });
});
