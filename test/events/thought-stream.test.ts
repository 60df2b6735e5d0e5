import { describe, expect, it } from 'vitest';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { type ConclaveEvent, conclaveEvent } from '../../src/events/schema.js';
import { eventsWriter } from '../../src/events/writer.js';
import { StreamedReply } from '../../src/render/streamed-lines.js';
import { startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { capture } from '../helpers/cli.js';
import { closesAfterEach } from '../helpers/lifecycle.js';
import { agentOf, reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

const track = closesAfterEach();

// A server that does not hold the model to the schema from the first token lets it think in the content, in <think> tags.
const DRAFT = '<think>A first draft: {"position": "DRAFT-ONLY, never the answer"}. No, better to say it plainly.</think>\n';

describe('streamed text of a reply that thinks in <think> tags', () => {
  it('sends no call.delta text from inside the tags, marks the call thinking until they close, then streams the answer', async () => {
    const preset = testPreset(['a', 'b', 'c']);
    const script = scriptedResponder([0.9], (req) => (stageOf(req) === 'opening' && agentOf(req) === 'a' ? DRAFT + reply.opening('a', 'a says the real answer') : undefined));
    const sim = track(await startSimulator({ models: simModels(preset), respond: script.respond, tokenMs: 1 }));
    const store = track(openStore(':memory:'));
    const out = capture();
    const events = eventsWriter(out, { intervalMs: 0 });
    const result = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store), listeners: [events] });
    expect(result.status).toBe('completed');
    const lines = out.text.trimEnd().split('\n').map((l) => conclaveEvent.parse(JSON.parse(l)) as ConclaveEvent);
    const deltas = lines.filter((e): e is Extract<ConclaveEvent, { type: 'call.delta' }> => e.type === 'call.delta' && e.stage === 'opening' && e.agentId === 'a');
    expect(deltas.length).toBeGreaterThan(2);
    expect(deltas.some((d) => d.text.includes('DRAFT'))).toBe(false);
    // While the tags are open the call is thinking, with no field and no text.
    const thinking = deltas.filter((d) => d.thinking);
    expect(thinking.length).toBeGreaterThan(0);
    expect(thinking.every((d) => d.field === null && d.text === '')).toBe(true);
    const last = deltas.at(-1)!;
    expect(last).toMatchObject({ thinking: false, field: 'position' });
    expect('a says the real answer'.startsWith(last.text) && last.text.length > 0).toBe(true);
    expect(store.getDebate(result.id).turns.find((t) => t.agentId === 'a' && t.round === 0)?.position).toBe('a says the real answer');
  });

  it('shows the live view no draft from inside the tags, and says the call is thinking until they close', () => {
    const live = new StreamedReply();
    live.add('<think>A first draft: {"position": "DRAFT');
    expect(live.thinking(12)).toBe(true);
    expect(live.text()).toBe('');
    live.add('-ONLY"}</think>{"position": "The real');
    expect(live.thinking(20)).toBe(false);
    expect(live.text()).toBe('The real');
  });
});
