import { describe, expect, it } from 'vitest';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { computeConfidence } from '../../src/protocol/confidence.js';
import { renderCard } from '../../src/render/card.js';
import { debateDocument } from '../../src/render/document.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';
import { closesAfterEach } from '../helpers/lifecycle.js';

let sim: SimHandle | null = null;
let store: Store | null = null;

const track = closesAfterEach();

describe('the confidence on the card', () => {
  it('is computed from the judge and the agents the synthesis rests on, not taken from the synthesizer', async () => {
    // The judge scores 0.30 in every round; the synthesizer claims `medium` and names two of three agents.
    const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 10 } as never });
    const script = scriptedResponder([0.3], (req) => (stageOf(req) === 'synthesis' ? reply.synthesis([], ['a', 'b']) : undefined));
    sim = track(await startSimulator({ models: simModels(preset), respond: script.respond }));
    store = track(openStore(':memory:'));
    const result = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store) });
    const d = store.getDebate(result.id);
    expect(d.exitReason).toBe('max_rounds');
    // The synthesis request offers only the panel's ids for `restsOn`.
    const synth = script.seen.find((r) => stageOf(r) === 'synthesis')!;
    const restsOn = (synth.format as { properties: Record<string, { items: { enum: string[] } }> }).properties.restsOn!;
    expect(restsOn.items.enum).toEqual(['a', 'b', 'c']);

    const card = renderCard(d).replace(/\s+/g, ' ');
    expect(card).toContain('CONFIDENCE: LOW (judge 0.30 < 0.85, rests on 2/3 agents) final positions of a, b');
    expect(card).toContain("the synthesizer's own statement: medium, 2 agents converged");
    expect(card).not.toContain('CONFIDENCE: MEDIUM');
    expect(renderMarkdown(d)).toContain("**Confidence:** LOW (judge 0.30 < 0.85");
    expect(debateDocument(d).confidence).toMatchObject({ level: 'low', judgeScore: 0.3, threshold: 0.85, restsOn: ['a', 'b'], of: 3 });
  });
});

describe('the confidence rule', () => {
  const usable = ['a', 'b', 'c'];
  it('is high only when the judge reached the threshold and the synthesis rests on a majority', () => {
    expect(computeConfidence({ judgeScore: 0.9, threshold: 0.85, restsOn: ['a', 'b'], usable }).level).toBe('high');
    expect(computeConfidence({ judgeScore: 0.9, threshold: 0.85, restsOn: ['a'], usable }).level).toBe('medium');
    expect(computeConfidence({ judgeScore: 0.5, threshold: 0.85, restsOn: ['a', 'b'], usable }).level).toBe('medium');
    expect(computeConfidence({ judgeScore: 0.3, threshold: 0.85, restsOn: ['a', 'b', 'c'], usable }).level).toBe('low');
    expect(computeConfidence({ judgeScore: null, threshold: 0.85, restsOn: ['a', 'b'], usable }).level).toBe('medium');
  });

  it('counts only agents with a usable final position, whatever ids the synthesis names', () => {
    const c = computeConfidence({ judgeScore: 0.9, threshold: 0.85, restsOn: ['c', 'a', 'zed'], usable: ['a', 'b'] });
    expect(c).toMatchObject({ restsOn: ['a'], of: 2, level: 'medium' });
  });

  it('counts a fallback seat half toward the majority and caps the level at medium', () => {
    const usable = ['a', 'b', 'c'];
    // Two of three resting, one of them a fallback: 1.5 of 3 is no majority.
    expect(computeConfidence({ judgeScore: 0.9, threshold: 0.85, restsOn: ['a', 'c'], usable, fallbacks: ['c'] }).level).toBe('medium');
    expect(computeConfidence({ judgeScore: 0.5, threshold: 0.85, restsOn: ['a', 'c'], usable, fallbacks: ['c'] }).level).toBe('low');
    expect(computeConfidence({ judgeScore: 0.5, threshold: 0.85, restsOn: ['a', 'c'], usable }).level).toBe('medium');
    // A majority with the fallback is still at most medium, and says why.
    const all = computeConfidence({ judgeScore: 0.9, threshold: 0.85, restsOn: usable, usable, fallbacks: ['b'] });
    expect(all).toMatchObject({ level: 'medium', restsOn: usable, of: 3 });
    expect(all.basis).toContain('1 by fallback');
    expect(all.lowered).toEqual(["MEDIUM at most: the final position of b is the orchestrator's fallback analysis, not the agent's own."]);
  });
});
