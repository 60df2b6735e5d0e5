import { Ollama } from 'ollama';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { arithmeticSuite } from '../../src/bench/arithmetic.js';
import { answerMessages, benchAnswerSchemaFor, benchQuestion, revisionMessages } from '../../src/bench/prompts.js';
import { builtinPresetNames, loadPreset } from '../../src/config/load-preset.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { formatSchemaOf } from '../../src/protocol/grammar.js';
import { MODEL_ACCURACY, accuracyOf } from '../../src/sim/demo-arithmetic.js';
import { demoResponder, simModelsFor } from '../../src/sim/demo.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';

let sim: SimHandle | null = null;
afterEach(async () => {
  await sim?.close();
  sim = null;
});

async function builtinSim() {
  const presets = builtinPresetNames().map((n) => loadPreset(n).preset);
  sim = await startSimulator({ models: simModelsFor(presets), respond: demoResponder(presets) });
  return sim;
}

describe('the simulated panel', () => {
  it('answers a format request no script covers with JSON that schema allows, not prose', async () => {
    const s = await builtinSim();
    const schema = z.strictObject({ verdict: z.enum(['ship', 'hold']), reasons: z.array(z.string().min(1)).min(2), score: z.number().int().min(1).max(5) });
    const client = new Ollama({ host: s.url });
    const reply = await client.chat({ model: 'qwen2.5:3b', messages: [{ role: 'user', content: 'Rate the release.' }], format: formatSchemaOf(schema) });
    expect(schema.safeParse(JSON.parse(reply.message.content)).success).toBe(true);
    const again = await client.chat({ model: 'qwen2.5:3b', messages: [{ role: 'user', content: 'Rate the release.' }], format: formatSchemaOf(schema) });
    expect(again.message.content).toBe(reply.message.content);
  });

  it('gives the same transcript to the same debate run twice against one server', async () => {
    const s = await builtinSim();
    const { preset } = loadPreset('tech-decision');
    const run = () => runDebate({ question: 'Should we migrate this tool from SQLite to Postgres now?', preset, host: s.url });
    const first = await run();
    const second = await run();
    const transcript = (r: typeof first) => r.rounds.map((round) => ({ round: round.round, turns: round.turns, score: round.judgement?.score }));
    expect(second.rounds.length).toBe(3);
    expect(transcript(second)).toEqual(transcript(first));
    expect(second.synthesis).toEqual(first.synthesis);
  });

  it('answers the arithmetic suite with each model’s documented accuracy, deterministically', async () => {
    const s = await builtinSim();
    const client = new Ollama({ host: s.url });
    const items = arithmeticSuite(60);
    const format = formatSchemaOf(benchAnswerSchemaFor('number', 0));
    const score = async (model: string) => {
      let right = 0;
      for (const item of items) {
        const reply = await client.chat({ model, messages: answerMessages(item, null), format, options: { seed: 7 } });
        const { answer } = JSON.parse(reply.message.content) as { answer: number };
        expect(typeof answer).toBe('number');
        if (String(answer) === item.answer) right += 1;
      }
      return right / items.length;
    };
    const strong = await score('qwen2.5:3b');
    const weak = await score('gemma2:2b');
    expect(Math.abs(strong - MODEL_ACCURACY['qwen2.5:3b']!)).toBeLessThan(0.15);
    expect(Math.abs(weak - accuracyOf('gemma2:2b'))).toBeLessThan(0.15);
    expect(strong).toBeGreaterThan(weak);
    expect(await score('qwen2.5:3b')).toBe(strong);
  });

  it('plays the self-correction control: an agent keeps a right answer and fixes some of its slips alone, from its own answer', async () => {
    const s = await builtinSim();
    const client = new Ollama({ host: s.url });
    const items = arithmeticSuite(40);
    const format = formatSchemaOf(benchAnswerSchemaFor('number', 0));
    const revise = async (previous: string, item: (typeof items)[number]) => {
      const reply = await client.chat({ model: 'gemma2:2b', messages: revisionMessages(item, null, 1, previous), format });
      return (JSON.parse(reply.message.content) as { answer: number }).answer;
    };
    let fixed = 0;
    for (const item of items) {
      const gold = Number(item.answer);
      expect(await revise(`Working left to right. Final answer: ${gold}`, item)).toBe(gold);
      const revised = await revise(`Working left to right. Final answer: ${gold + 10}`, item);
      // A slip either stays the agent's own or is fixed; it never turns into some other figure.
      expect([gold, gold + 10]).toContain(revised);
      if (revised === gold) fixed += 1;
    }
    expect(fixed).toBeGreaterThan(0);
    expect(fixed).toBeLessThan(items.length);
  });

  it('plays an arithmetic debate of a preset with a tension map and a devil\'s advocate without one repair: stances from the judge, clash stances from the critiques', async () => {
    const s = await builtinSim();
    const { preset } = loadPreset('devils-advocate');
    // An item the panel starts split on, so critique rounds run and an advocate speaks.
    const item = arithmeticSuite(30).find((i) => i.id === 'arith-000')!;
    const calls: { stage: string; attempt: number; status: string }[] = [];
    const prompts: string[] = [];
    const result = await runDebate({
      question: benchQuestion(item),
      preset,
      host: s.url,
      listeners: [
        (e) => {
          if (e.type === 'call.finished') {
            calls.push({ stage: e.call.stage, attempt: e.call.attempt, status: e.call.status });
            if (e.call.stage === 'critique') prompts.push(e.call.messages.at(-1)!.content);
          }
        },
      ],
    });
    expect(result.status).toBe('completed');
    expect(calls.filter((c) => c.attempt > 0)).toEqual([]);
    expect(calls.every((c) => c.status === 'ok')).toBe(true);
    const critiques = result.rounds.filter((r) => r.round > 0).flatMap((r) => r.turns);
    expect(critiques.length).toBeGreaterThan(0);
    expect(critiques.every((t) => /Final answer: -?\d+/.test(t.position ?? ''))).toBe(true);
    expect(prompts.some((p) => p.includes("the panel's devil's advocate"))).toBe(true);
    // Round 1's advocate (the first agent) states, on this item, a figure neither peer held after round 0.
    const figure = (text: string | null) => /Final answer: (-?\d+)/.exec(text ?? '')?.[1];
    const advocate = preset.agents[0]!.id;
    const before = result.rounds[0]!.turns.filter((t) => t.agentId !== advocate).map((t) => figure(t.position));
    const argued = figure(result.rounds[1]!.turns.find((t) => t.agentId === advocate)!.position);
    expect(argued).toBeDefined();
    expect(before).not.toContain(argued);
  });
});
