import { describe, expect, it } from 'vitest';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { closesAfterEach } from '../helpers/lifecycle.js';
import { agentOf, reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

const track = closesAfterEach();

describe('minority positions in the synthesis', () => {
  it('keeps only those of a round in which the agent gave a usable answer, noting each one dropped on the call', async () => {
    // c fails every call after round 0; the synthesizer still credits c with a position in round 1.
    const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 1, convergenceThreshold: 0.99, callTimeoutSeconds: 10 } });
    const script = scriptedResponder([0.2, 0.4], (req) => {
      if (agentOf(req) === 'c' && stageOf(req) === 'critique') return { error: 'the runner refused the request', status: 400 };
      if (stageOf(req) === 'synthesis') return reply.synthesis([{ agent: 'c', round: 1 }, { agent: 'c', round: 0 }, { agent: 'b', round: 1 }]);
      return undefined;
    });
    const sim = track(await startSimulator({ models: simModels(preset), respond: script.respond }));
    const store = track(openStore(':memory:'));
    const result = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store), retryDelaysMs: [1, 1] });
    const stored = store.getDebate(result.id);
    expect(stored.turns.find((t) => t.agentId === 'c' && t.round === 1)!.status).toBe('failed');
    expect(stored.synthesis!.synthesis!.minorityPositions.map((m) => `${m.agent}@${m.round}`)).toEqual(['c@0', 'b@1']);
    const call = stored.calls.find((c) => c.stage === 'synthesis')!;
    expect(call.normalized).toEqual(['minorityPositions: the position credited to c in round 1 was dropped; c gave no usable answer that round']);
    expect(stored.synthesis!.synthesis!.failedAgents.map((f) => f.agent)).toEqual(['c']);
  });
});
