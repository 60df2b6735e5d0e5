import { afterEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import type { DebateEvent } from '../../src/engine/events.js';
import { estimateMessagesTokens, estimateTokens } from '../../src/protocol/context.js';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { planResume, resumeDebate } from '../../src/engine/resume.js';
import type { Attachment } from '../../src/protocol/material.js';
import { renderCard } from '../../src/render/card.js';
import { debateDocument } from '../../src/render/document.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import { debatePage } from '../../src/serve/debate-page.js';
import { type SimHandle, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { agentOf, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';
import { migrationPlan } from '../helpers/material.js';

let sim: SimHandle | null = null;
let store: Store | null = null;

afterEach(async () => {
  store?.close();
  store = null;
  await sim?.close();
  sim = null;
});

function attachment(name: string, content: string): Attachment {
  return { name, content, bytes: Buffer.byteLength(content), sha256: createHash('sha256').update(content).digest('hex') };
}

async function setup(overrides: Parameters<typeof testPreset>[1] = {}, judge = [0.2]) {
  const preset = testPreset(['a', 'b', 'c'], overrides);
  const script = scriptedResponder(judge);
  sim = await startSimulator({ models: simModels(preset), respond: script.respond });
  store = openStore(':memory:');
  const events: DebateEvent[] = [];
  const run = (extra: Partial<Parameters<typeof runDebate>[0]> = {}) =>
    runDebate({ question: 'Should we go ahead with the billing store migration?', preset, host: sim!.url, recorder: recorder(store!), listeners: [(e) => events.push(e)], ...extra });
  return { preset, seen: script.seen, events, run, store: store! };
}

const promptOf = (req: SimRequest): string => req.messages.map((m) => m.content).join('\n');

describe('attached material', () => {
  it('puts a short file whole into every agent prompt, not the judge or synthesizer, and records it', async () => {
    const { run, seen, store } = await setup({ protocol: { maxRounds: 1, convergenceThreshold: 0.99, callTimeoutSeconds: 10 } } as never);
    const file = attachment('note.md', 'The freeze window is Sunday 06:00 to 06:20 UTC, code word PELICAN.');
    const result = await run({ attachments: [file] });
    expect(result.status).toBe('completed');
    const agentCalls = seen.filter((r) => stageOf(r) === 'opening' || stageOf(r) === 'critique');
    expect(agentCalls).toHaveLength(6);
    for (const req of agentCalls) expect(promptOf(req)).toContain('code word PELICAN');
    for (const req of seen.filter((r) => stageOf(r) === 'judge' || stageOf(r) === 'synthesis')) expect(promptOf(req)).not.toContain('PELICAN');
    // The question and the agent's own prompt stay last, untouched.
    expect(agentCalls[0]!.messages.at(-1)!.content).toContain('Question: Should we go ahead with the billing store migration?');
    const stored = store.getDebate(result.id);
    expect(stored.attachments).toEqual([file]);
    const opening = stored.calls.find((c) => c.stage === 'opening')!;
    expect(opening.material).toEqual([{ name: 'note.md', mode: 'inline', sections: [], keptChars: file.content.length, totalChars: file.content.length }]);
    const doc = debateDocument(stored) as { attachments: { name: string; sha256: string; content: string }[] };
    expect(doc.attachments[0]).toMatchObject({ name: 'note.md', sha256: file.sha256, content: file.content });
    expect(renderCard(stored)).toContain('ATTACHED MATERIAL');
  });

  it('keeps a hostile file name and content inert on the card, escaped in Markdown and in the viewer', async () => {
    const { run, store } = await setup({ protocol: { maxRounds: 1, convergenceThreshold: 0.99, callTimeoutSeconds: 10 } } as never);
    const file = attachment('\u001b]0;pwned\u0007<b>x</b>.md', 'Before <script>alert(1)</script> | cell | after');
    const stored = store.getDebate((await run({ attachments: [file] })).id);
    const card = renderCard(stored);
    expect(card).toContain('ATTACHED MATERIAL');
    expect(card).not.toMatch(/[\u001b\u0007]/);
    const md = renderMarkdown(stored);
    expect(md).not.toContain('<b>x</b>');
    expect(md).not.toMatch(/[\u001b\u0007]/);
    const page = debatePage(stored, null);
    expect(page).not.toContain('<script>alert(1)</script>');
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page).not.toContain('<b>x</b>');
  });

  it('excerpts a long file per agent by its persona, marked as an excerpt in the prompt and the record', async () => {
    const { run, seen, store } = await setup({
      agents: [
        { id: 'a', model: 'model-0:1b', persona: 'You are agent a. You review rollback drills and backups restores.' },
        { id: 'b', model: 'model-1:1b', persona: 'You are agent b. You review cost, euros and staffing engineers.' },
        { id: 'c', model: 'model-2:1b', persona: 'You are agent c.' },
      ],
      protocol: { kind: 'parallel' },
    } as never);
    const plan = attachment('plan.md', migrationPlan(30));
    const result = await run({ attachments: [plan] });
    expect(result.status).toBe('completed');
    const opening = (agent: string) => promptOf(seen.find((r) => stageOf(r) === 'opening' && /^You are agent (\S+?)\./.exec(r.messages[0]!.content)?.[1] === agent)!);
    const a = opening('a');
    const b = opening('b');
    expect(a).toMatch(/\[Excerpt of plan\.md: sections [\d, ]+ of \d+ — [\d,]+ of [\d,]+ characters\]/);
    expect(a).toContain('Rollback');
    expect(a).not.toContain('nine hundred euros');
    expect(b).toContain('nine hundred euros');
    expect(b).not.toContain('rollback drill runs twice');
    expect(a.length).toBeLessThan(plan.content.length);
    const calls = store.getDebate(result.id).calls.filter((c) => c.stage === 'opening');
    for (const c of calls) {
      expect(c.material?.[0]?.mode).toBe('excerpt');
      expect(c.material?.[0]?.keptChars).toBeLessThan(plan.content.length);
      expect(c.material?.[0]?.totalChars).toBe(plan.content.length);
    }
    expect(calls.find((c) => c.agentId === 'a')!.material![0]!.sections).not.toEqual(calls.find((c) => c.agentId === 'b')!.material![0]!.sections);
  });

  it('states the constraints whole in every agent prompt', async () => {
    const { run, seen } = await setup({ constraints: ['Keep the write freeze under 30 minutes.'], protocol: { kind: 'parallel' } } as never);
    await run({ attachments: [attachment('plan.md', migrationPlan(30))] });
    for (const req of seen.filter((r) => stageOf(r) === 'opening')) expect(promptOf(req)).toContain('- Keep the write freeze under 30 minutes.');
  });
});

describe('token budget', () => {
  const debate = { maxRounds: 3, convergenceThreshold: 0.99, callTimeoutSeconds: 10 };

  it('makes fewer calls under a tight budget, stops the critique rounds and still synthesises, saying why', async () => {
    const free = await setup({ protocol: debate } as never);
    const plan = attachment('plan.md', migrationPlan(12));
    const unbounded = await free.run({ attachments: [plan] });
    const freeCalls = free.store.getDebate(unbounded.id).calls.length;
    const freeTokens = free.store.getDebate(unbounded.id).calls.reduce((s, c) => s + (c.metrics.promptTokens ?? 0) + (c.metrics.completionTokens ?? 0), 0);
    await sim?.close();
    store?.close();

    const tight = await setup({ protocol: { ...debate, tokenBudget: Math.round(freeTokens / 3) } } as never);
    const result = await tight.run({ attachments: [plan] });
    expect(result.status).toBe('completed');
    expect(result.exitReason).toBe('budget');
    const stored = tight.store.getDebate(result.id);
    expect(stored.calls.length).toBeLessThan(freeCalls);
    expect(stored.synthesis?.status).toBe('ok');
    expect(stored.budgetDecisions?.some((d) => d.kind === 'stop')).toBe(true);
    // Each call's budget record holds Ollama's real counts, and the running total adds them up.
    const last = stored.calls.at(-1)!;
    expect(last.budget?.actual).toBe((last.metrics.promptTokens ?? 0) + (last.metrics.completionTokens ?? 0));
    expect(last.budget?.used).toBe(stored.calls.reduce((s, c) => s + (c.budget?.actual ?? 0), 0));
    expect(renderCard(stored)).toMatch(/Cut short by the budget: the token budget \([\d,]+ tokens\) was spent after round \d/);
    expect(tight.events.some((e) => e.type === 'debate.exit' && e.reason === 'budget')).toBe(true);
  });

  it('counts the prompt and the reply of a server that sends no token counts by estimate, so its replies are not spent for free', async () => {
    const preset = testPreset(['a', 'b', 'c'], { protocol: { ...debate, maxRounds: 1, tokenBudget: 1_000_000 } } as never);
    const script = scriptedResponder([0.2]);
    sim = await startSimulator({ models: simModels(preset), respond: script.respond, api: 'openai', sendsUsage: false });
    store = openStore(':memory:');
    const url = `${sim.url}/v1`;
    const result = await runDebate({ question: 'Should we go ahead?', preset, host: url, hosts: [{ url, api: 'openai' }], recorder: recorder(store) });
    const answered = store.getDebate(result.id).calls.filter((c) => c.status === 'ok');
    expect(answered.length).toBeGreaterThan(3);
    for (const c of answered) {
      expect([c.metrics.promptTokens, c.metrics.completionTokens]).toEqual([null, null]);
      expect(c.budget?.actual).toBe(estimateMessagesTokens(c.messages) + estimateTokens(c.raw));
    }
  });

  it('cuts secondary excerpts from 80% of the budget and skips a low-priority agent once its estimate would pass it', async () => {
    const { run, seen, store } = await setup({
      agents: [
        { id: 'a', model: 'model-0:1b', persona: 'You are agent a.', priority: 'high' },
        { id: 'b', model: 'model-1:1b', persona: 'You are agent b.' },
        { id: 'c', model: 'model-2:1b', persona: 'You are agent c.', priority: 'low' },
      ],
      protocol: { ...debate, tokenBudget: 4200 },
    } as never);
    const result = await run({ attachments: [attachment('plan.md', migrationPlan(30))] });
    const stored = store.getDebate(result.id);
    const skips = (stored.budgetDecisions ?? []).filter((d) => d.kind === 'skip');
    expect(skips.map((d) => d.agentId)).toContain('c');
    expect(skips.map((d) => d.agentId)).not.toContain('a');
    // The skipped agent was never asked; a high-priority one always was.
    expect(seen.filter((r) => stageOf(r) === 'opening' && agentOf(r) === 'c')).toHaveLength(0);
    expect(seen.filter((r) => stageOf(r) === 'opening' && agentOf(r) === 'a')).toHaveLength(1);
    expect(stored.turns.find((t) => t.agentId === 'c' && t.round === 0)?.error).toMatch(/^skipped by the token budget/);
    // From 80% the material shrinks first, then peers' reasoning goes; both are recorded per call.
    const cuts = (stored.budgetDecisions ?? []).filter((d) => d.kind === 'truncate').map((d) => d.detail);
    expect(cuts.some((d) => /secondary excerpts left out at (8|9)\d% of the budget/.test(d))).toBe(true);
    expect(cuts.some((d) => d.includes("peers' reasoning left out"))).toBe(true);
    const lean = seen.find((r) => stageOf(r) === 'critique' && agentOf(r) === 'a')!;
    expect(promptOf(lean)).not.toContain('Reasoning: b reasons');
    expect(result.synthesis?.status).toBe('ok');
  });

  it('lets a decomposition skip sub-answers once the budget is spent and still reassemble what exists', async () => {
    const { run, store } = await setup({ protocol: { kind: 'decompose', callTimeoutSeconds: 10, tokenBudget: 1000 } } as never);
    const result = await run({ attachments: [attachment('plan.md', migrationPlan(12))] });
    const stored = store.getDebate(result.id);
    const parts = (stored.steps ?? []).map((s) => s.step).filter((s) => s.kind === 'subanswer');
    expect(parts.some((p) => p.status === 'skipped' && /token budget/.test(p.reason ?? ''))).toBe(true);
    expect(stored.calls.map((c) => c.stage)).toContain('reassembly');
    expect(result.synthesis?.status).toBe('ok');
    expect(renderCard(stored)).toMatch(/Cut short by the budget: \d+ agent calls? skipped/);
  });

  it('lets a tournament decide its matches without the skipped calls and still crown a champion', async () => {
    const { run, store } = await setup({ protocol: { kind: 'tournament', callTimeoutSeconds: 10, tokenBudget: 1500 } } as never);
    const result = await run();
    const stored = store.getDebate(result.id);
    expect((stored.budgetDecisions ?? []).some((d) => d.kind === 'skip')).toBe(true);
    expect((stored.steps ?? []).some((s) => s.step.kind === 'champion')).toBe(true);
    expect(result.synthesis?.status).toBe('ok');
  });

  it('goes on after an interruption with the recorded attachment, counting the tokens already spent', async () => {
    const { run, seen, store } = await setup({ protocol: { maxRounds: 2, convergenceThreshold: 0.99, callTimeoutSeconds: 10, tokenBudget: 100000 } } as never);
    const controller = new AbortController();
    const note = attachment('note.md', 'Marker OSPREY: the freeze window is twenty minutes.');
    await expect(
      run({ attachments: [note], signal: controller.signal, listeners: [(e) => (e.type === 'round.judged' && e.judgement.round === 0 ? controller.abort() : undefined)] }),
    ).rejects.toThrow(/stopped/);
    const interrupted = store.getDebate(store.listDebates()[0]!.id);
    expect(interrupted.status).toBe('interrupted');
    const before = interrupted.calls.reduce((s, c) => s + (c.budget?.actual ?? 0), 0);
    const asked = seen.length;
    const plan = planResume(interrupted);
    const result = await resumeDebate(interrupted, { host: sim!.url, recorder: recorder(store, { resume: plan.point }) }, plan);
    expect(result.status).toBe('completed');
    const critiques = seen.slice(asked).filter((r) => stageOf(r) === 'critique');
    expect(critiques.length).toBeGreaterThan(0);
    for (const req of critiques) expect(promptOf(req)).toContain('Marker OSPREY');
    const resumed = store.getDebate(result.id).calls.slice(interrupted.calls.length);
    // The last call (the synthesis, nothing else in flight) sees every token of both runs.
    expect(before).toBeGreaterThan(0);
    expect(resumed.at(-1)!.budget!.used).toBe(before + resumed.reduce((s, c) => s + c.budget!.actual, 0));
  });
});
