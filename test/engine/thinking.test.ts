import { describe, expect, it } from 'vitest';
import { FROM_THINKING, lastJsonObject } from '../../src/engine/structured-call.js';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { type SimHandle, type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import type { PresetInput } from '../../src/config/preset-schema.js';
import { closesAfterEach } from '../helpers/lifecycle.js';
import { agentOf, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

let sim: SimHandle | null = null;
let store: Store | null = null;

const track = closesAfterEach();

const THINKING = ['completion', 'thinking'];

/** A panel whose agents' models think for `thinkingTokens` before answering; the judge and synthesizer do not. */
async function thinkingDebate(opts: { overrides?: Partial<PresetInput>; thinkingTokens?: number; override?: (req: SimRequest) => SimReply | undefined; plainAgents?: string[] } = {}) {
  const preset = testPreset(['a', 'b', 'c'], opts.overrides ?? {});
  const script = scriptedResponder([0.2, 0.9], opts.override);
  const agentModels = new Set(preset.agents.filter((a) => !(opts.plainAgents ?? []).includes(a.id)).map((a) => a.model));
  const models = simModels(preset).map((m) => (agentModels.has(m.name) ? { ...m, capabilities: THINKING, thinkingTokens: opts.thinkingTokens ?? 1500 } : m));
  const requests: SimRequest[] = [];
  sim = track(await startSimulator({ models, respond: (req) => { requests.push(req); return script.respond(req); } }));
  store = track(openStore(':memory:'));
  const result = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store), retryDelaysMs: [10, 20] });
  return { result, stored: store.getDebate(result.id), requests };
}

describe('thinking models', () => {
  it('completes a panel that thinks 1,500 tokens before each answer with no cut-off and no repair, and records every trace', async () => {
    const { result, stored } = await thinkingDebate();
    expect(result.status).toBe('completed');
    const agentCalls = stored.calls.filter((c) => ['a', 'b', 'c'].includes(c.agentId));
    expect(agentCalls.length).toBeGreaterThan(3);
    expect(agentCalls.every((c) => c.status === 'ok' && c.attempt === 0)).toBe(true);
    expect(agentCalls.every((c) => c.metrics.doneReason === 'stop')).toBe(true);
    expect(agentCalls.every((c) => (c.thinking ?? '').split(' ').length === 1500 && c.thinkingTokens === 1500)).toBe(true);
    // The judge's model has no thinking capability: no trace, and no `think` sent to it.
    expect(stored.calls.filter((c) => c.agentId === 'judge').every((c) => c.thinking === undefined && c.think === undefined)).toBe(true);
  });

  it('gives a thinking call room for its thinking on top of the answer, in num_predict and in num_ctx', async () => {
    const { stored } = await thinkingDebate({ plainAgents: ['c'] });
    const opening = (id: string) => stored.calls.find((c) => c.agentId === id && c.stage === 'opening')!;
    expect(Number(opening('a').options.num_predict)).toBe(Number(opening('c').options.num_predict) + 3072);
    const plan = stored.plan as { models: { model: string; numCtx: number }[]; thinking: { role: string; thinks: boolean; room: number }[] };
    expect(plan.thinking.map((t) => t.role).sort()).toEqual(['a', 'b']);
    expect(plan.thinking.every((t) => t.thinks && t.room === 3072)).toBe(true);
    const ctx = (model: string) => plan.models.find((m) => m.model === model)!.numCtx;
    // The context holds the prompt, the thinking and the answer together.
    for (const id of ['a', 'b']) expect(ctx(opening(id).model)).toBeGreaterThanOrEqual(opening(id).metrics.promptTokens! + Number(opening(id).options.num_predict));
  });

  it('sends think as each role sets it, with half the room for low, and none to a model without the capability', async () => {
    const preset = testPreset(['a', 'b', 'c']);
    const { result, stored, requests } = await thinkingDebate({
      overrides: {
        agents: [
          { ...preset.agents[0]!, think: 'low' },
          { ...preset.agents[1]!, think: false },
          preset.agents[2]!,
        ],
        judge: { model: preset.judge.model, think: true },
      },
    });
    expect(result.status).toBe('completed');
    const sent = (id: string) => requests.filter((r) => agentOf(r) === id && stageOf(r) === 'opening').map((r) => r.think);
    expect(sent('a')).toEqual(['low']);
    expect(sent('b')).toEqual([false]);
    expect(sent('c')).toEqual([undefined]);
    const opening = (id: string) => stored.calls.find((c) => c.agentId === id && c.stage === 'opening')!;
    expect(Number(opening('a').options.num_predict)).toBe(Number(opening('b').options.num_predict) + 1536);
    expect(opening('b').thinking).toBeUndefined();
    expect(opening('a').think).toBe('low');
    // The judge's model cannot think: the setting is dropped with a warning, never sent (Ollama answers it with a 400).
    expect(requests.filter((r) => stageOf(r) === 'judge').every((r) => r.think === undefined)).toBe(true);
    expect((stored.plan as { warnings: string[] }).warnings.some((w) => w.includes('judge sets think: true') && w.includes('no thinking capability'))).toBe(true);
  });

  it('repairs a reply cut off at num_predict with twice the room, not the same request', async () => {
    let cut = false;
    const { stored } = await thinkingDebate({
      override: (req) => {
        if (agentOf(req) === 'a' && stageOf(req) === 'opening' && !cut) {
          cut = true;
          return { content: '{"position":"A is', doneReason: 'length' } as SimReply;
        }
        return undefined;
      },
    });
    const calls = stored.calls.filter((c) => c.agentId === 'a' && c.stage === 'opening');
    expect(calls.map((c) => c.status)).toEqual(['invalid', 'ok']);
    expect(Number(calls[1]!.options.num_predict)).toBe(2 * Number(calls[0]!.options.num_predict));
  });

  it('recovers JSON that landed at the end of the thinking with empty content, validated and marked', async () => {
    const { result, stored } = await thinkingDebate({
      thinkingTokens: 40,
      override: (req) => (agentOf(req) === 'b' && stageOf(req) === 'opening' ? ({ content: JSON.stringify({ position: 'B from thinking', reasoning: 'it was in the thinking {really}', confidence: 70 }), answerInThinking: true } as SimReply) : undefined),
    });
    expect(result.status).toBe('completed');
    const call = stored.calls.find((c) => c.agentId === 'b' && c.stage === 'opening')!;
    expect(call.raw).toBe('');
    expect(call.status).toBe('ok');
    expect(call.normalized?.[0]).toBe(FROM_THINKING);
    expect(stored.turns.find((t) => t.agentId === 'b' && t.round === 0)!.position).toBe('B from thinking');
  });

  it('finds the last complete JSON object in text with braces before it', () => {
    expect(lastJsonObject('I think {maybe} then {"a":1} and {"b":{"c":2}}')).toBe('{"b":{"c":2}}');
    expect(lastJsonObject('no object here')).toBeNull();
    expect(lastJsonObject('only {broken')).toBeNull();
  });
});

describe('thinking in the record', () => {
  it('keeps the trace through verify, a bundle and its import, and folds it, escaped, in the Markdown export and the viewer', async () => {
    const { renderMarkdown } = await import('../../src/render/markdown.js');
    const { callRows } = await import('../../src/serve/debate-page.js');
    const { bundleOf, checkBundle, importBundle } = await import('../../src/store/bundle.js');
    const trace = 'Weigh <script>alert(1)</script> and # not a heading';
    const { result, stored } = await thinkingDebate({ thinkingTokens: 30, override: (req) => (agentOf(req) === 'c' && stageOf(req) === 'opening' ? ({ content: JSON.stringify({ position: 'C', reasoning: 'because', confidence: 60 }), thinking: trace } as SimReply) : undefined) });
    expect(store!.verifyDebate(result.id).state).toBe('sealed');
    const call = stored.calls.find((c) => c.agentId === 'c' && c.stage === 'opening')!;
    expect(call.thinking).toBe(trace);

    const markdown = renderMarkdown(stored);
    expect(markdown).toContain('## Thinking');
    expect(markdown).toContain('&lt;script&gt;');
    expect(markdown).not.toContain('<script>');
    const page = String(callRows(call, stored.createdAt));
    expect(page).toContain('<details class="thinking">');
    expect(page).not.toContain('<script>');

    const bundle = bundleOf(store!.debateRows(result.id));
    expect(checkBundle(bundle, 'memory').state).toBe('sealed');
    const copy = openStore(':memory:');
    try {
      importBundle(copy, bundle, 'memory');
      expect(copy.getDebate(result.id).calls.find((c) => c.agentId === 'c' && c.stage === 'opening')!.thinking).toBe(trace);
      expect(copy.verifyDebate(result.id).state).toBe('sealed');
    } finally {
      copy.close();
    }
  });
});

describe('bench with thinking on and off', () => {
  it('runs the panel both ways in one run, the baselines thinking as the debate did, with thinking counted in the tokens', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { runCli } = await import('../helpers/cli.js');
    const { simModelsFor, demoResponder } = await import('../../src/sim/demo.js');
    const { loadPreset } = await import('../../src/config/load-preset.js');
    const { preset } = loadPreset('thinking', process.cwd());
    sim = track(await startSimulator({ models: simModelsFor([preset]), respond: demoResponder([preset]) }));
    const dir = mkdtempSync(join(tmpdir(), 'conclave-think-bench-'));
    try {
      const r = await runCli(['bench', '--suite', 'arithmetic', '--preset', 'thinking', '--think', 'on', '--think', 'off', '--limit', '2', '--host', sim.url, '--db', join(dir, 'b.db'), '--json', '--quiet'], dir);
      expect(r.code).toBe(0);
      const report = JSON.parse(r.stdout) as { conditions: { preset: string; condition: string; tokensPerItem: number }[] };
      const single = (name: string) => report.conditions.filter((c) => c.preset === name && c.condition === 'single').reduce((sum, c) => sum + c.tokensPerItem, 0);
      // The simulator's thinking models stream 300 tokens of thinking before each answer: three single agents.
      expect(single('thinking · think on') - single('thinking · think off')).toBeGreaterThanOrEqual(3 * 300);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
