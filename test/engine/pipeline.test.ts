import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentSpec, PresetInput } from '../../src/config/preset-schema.js';
import type { DebateEvent } from '../../src/engine/events.js';
import type { ProtocolStep } from '../../src/engine/protocol-events.js';
import { recorder } from '../../src/engine/recorder.js';
import { resynthesize } from '../../src/engine/resynthesize.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { renderCard } from '../../src/render/card.js';
import { debateDocument } from '../../src/render/document.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import { storedEvents } from '../../src/render/replay.js';
import { liveRenderer } from '../../src/render/live.js';
import { plainStyle } from '../../src/render/style.js';
import { debatePage } from '../../src/serve/debate-page.js';
import { type SimHandle, type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { capture } from '../helpers/cli.js';
import { errorOf } from '../helpers/errors.js';
import { DebateFailedError } from '../../src/errors.js';
import { agentOf, isRetry, reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';
import { arbitraryOf } from '../helpers/schema-arbitrary.js';
import { migrationPlan } from '../helpers/material.js';
import type { Attachment } from '../../src/protocol/material.js';

let sim: SimHandle | null = null;
let store: Store | null = null;

afterEach(async () => {
  store?.close();
  store = null;
  await sim?.close();
  sim = null;
});

type Role = NonNullable<AgentSpec['role']> | undefined;

/** A pipeline panel: agent `id` with `role`, personas `You are agent <id>.` */
function pipelinePreset(roles: [string, Role][], protocol: Record<string, unknown> = {}) {
  return testPreset(
    roles.map(([id]) => id),
    {
      agents: roles.map(([id, role], i) => ({ id, model: `model-${i}:1b`, persona: `You are agent ${id}.`, ...(role ? { role } : {}) })),
      protocol: { kind: 'pipeline', callTimeoutSeconds: 10, ...protocol },
    } as Partial<PresetInput>,
  );
}

async function setup(roles: [string, Role][], override?: (req: SimRequest) => SimReply | undefined, protocol: Record<string, unknown> = {}) {
  const preset = pipelinePreset(roles, protocol);
  const script = scriptedResponder([0.2], override);
  sim = await startSimulator({ models: simModels(preset), respond: script.respond });
  store = openStore(':memory:');
  const events: DebateEvent[] = [];
  const result = await runDebate({ question: 'Review this change', preset, host: sim.url, recorder: recorder(store), listeners: [(e) => events.push(e)] });
  return { preset, seen: script.seen, events, result, store, debate: store.getDebate(result.id) };
}

const stepsOf = (d: { steps?: { step: ProtocolStep }[] }): ProtocolStep[] => (d.steps ?? []).map((s) => s.step);
const prompt = (req: SimRequest): string => req.messages.find((m) => m.role === 'user')?.content ?? '';
const sourcesOf = (req: SimRequest): string[] =>
  (req.format as { properties: { findings: { items: { properties: { sources: { items: { enum?: string[] } } } } } } }).properties.findings.items.properties.sources.items.enum ?? [];

/** Lead plans, analyst observes, r1 is sure (80), r2 guesses (65), both blocking; the filter keeps both as blocking. */
function reviewScript(req: SimRequest): SimReply | undefined {
  const agent = agentOf(req);
  switch (stageOf(req)) {
    case 'plan':
      return reply.observations([{ id: 'P1', text: 'PLAN-CHECK-ALPHA: check the migration on live rows', confidence: 90, blocking: true }], 'PLAN-SUMMARY');
    case 'observe':
      return reply.observations([{ id: 'A1', text: 'ANALYST-VIEW: roll out behind a flag', confidence: 60, blocking: false }]);
    case 'review':
      return agent === 'r1'
        ? reply.observations([{ id: 'R1', text: 'R1-SURE: the NOT NULL column breaks existing rows', confidence: 80, blocking: true }])
        : reply.observations([{ id: 'R1', text: 'R2-GUESS: the retry loop may hammer the API', confidence: 65, blocking: true }]);
    case 'filter': {
      const refs = sourcesOf(req);
      return JSON.stringify({
        summary: 'Not ready.',
        findings: [
          { text: 'R2-GUESS merged', confidence: 65, blocking: true, evidence: 'a guess', sources: refs.filter((r) => r === 'r2/R1') },
          { text: 'R1-SURE merged', confidence: 80, blocking: true, evidence: 'ALTER TABLE', sources: refs.filter((r) => r === 'r1/R1') },
          { text: 'ANALYST-VIEW kept', confidence: 60, blocking: false, evidence: '', sources: refs.filter((r) => r === 'ana/A1') },
        ],
      });
    }
    default:
      return undefined;
  }
}

const FULL: [string, Role][] = [
  ['lead', 'lead'],
  ['ana', 'analyst'],
  ['r1', 'reviewer'],
  ['r2', undefined],
  ['filt', 'filter'],
];

describe('review pipeline', () => {
  it('runs plan, then reviews with the plan, then the filter over every review; downgrades 65 but not 80, in the record and on the card', async () => {
    const { seen, debate } = await setup(FULL, reviewScript);
    expect(debate.status).toBe('completed');
    expect(debate.exitReason).toBe('filtered');

    // Reviewers start once the Plan phase is over, and each carries the lead's plan.
    const at = (stage: string) => seen.map((r, i) => (stageOf(r) === stage ? i : -1)).filter((i) => i >= 0);
    const reviews = at('review');
    expect(reviews).toHaveLength(2);
    expect(Math.min(...reviews)).toBeGreaterThan(Math.max(...at('plan'), ...at('observe')));
    for (const i of reviews) {
      expect(prompt(seen[i]!)).toContain('The plan from the lead (lead)');
      expect(prompt(seen[i]!)).toContain('PLAN-CHECK-ALPHA');
      expect(prompt(seen[i]!)).toContain('PLAN-SUMMARY');
    }
    // The filter reads every review and the analyst's observations, after the reviews, and only the filter agent filters.
    const [filter] = at('filter');
    expect(at('filter')).toHaveLength(1);
    expect(filter).toBeGreaterThan(Math.max(...reviews));
    expect(agentOf(seen[filter!]!)).toBe('filt');
    for (const text of ['R1-SURE', 'R2-GUESS', 'ANALYST-VIEW']) expect(prompt(seen[filter!]!)).toContain(text);
    expect(sourcesOf(seen[filter!]!).sort()).toEqual(['ana/A1', 'lead/P1', 'r1/R1', 'r2/R1'].filter((r) => r !== 'lead/P1').sort());

    // The engine applies the rule: r2's 65 is downgraded, recorded as a step; r1's 80 stays blocking.
    const steps = stepsOf(debate);
    const downgrades = steps.filter((s) => s.kind === 'downgrade');
    expect(downgrades).toEqual([
      expect.objectContaining({ phase: 'review', agentId: 'r2', observationId: 'R1', confidence: 65, threshold: 70 }),
      expect.objectContaining({ phase: 'final', agentId: 'filt', observationId: 'F2', confidence: 65 }),
    ]);
    const observed = (id: string) => steps.find((s) => s.kind === 'observations' && s.agentId === id) as Extract<ProtocolStep, { kind: 'observations' }>;
    expect(observed('r1').observations[0]).toMatchObject({ blocking: true, confidence: 80, downgraded: false });
    expect(observed('r2').observations[0]).toMatchObject({ blocking: false, confidence: 65, downgraded: true });
    expect(observed('r1').withPlan).toBe(true);

    // The report: blocking first, ids reassigned, who raised each.
    const report = steps.find((s) => s.kind === 'report') as Extract<ProtocolStep, { kind: 'report' }>;
    expect(report.findings.map((f) => [f.id, f.text, f.blocking, f.downgraded, f.raisedBy])).toEqual([
      ['F1', 'R1-SURE merged', true, false, ['r1']],
      ['F2', 'R2-GUESS merged', false, true, ['r2']],
      ['F3', 'ANALYST-VIEW kept', false, false, ['ana']],
    ]);
    expect(report.findings[2]!.evidence).toBe('evidence for A1');

    const card = renderCard(debate);
    expect(card).toContain('VERDICT\n  Not ready.');
    expect(card.indexOf('BLOCKING FINDINGS (1)')).toBeLessThan(card.indexOf('OTHER FINDINGS (2)'));
    expect(card).toContain('F1 [BLOCKING, confidence 80] R1-SURE merged');
    expect(card).toContain('F2 [not blocking, confidence 65, downgraded (blocking below 70)] R2-GUESS merged');
    expect(card).toContain('raised by r1; evidence: ALTER TABLE');
    expect(card).toMatch(/DOWNGRADED[^\n]*\n  - r2\/R1 at confidence 65: R2-GUESS/);
    // The card fits the terminal: its footer wraps, so read it with its line breaks undone.
    expect(card.replace(/\n +/g, ' ')).toContain('review pipeline · 1 lead, 1 analyst, 2 reviewers · 3 findings, 1 blocking · 2 downgraded');

    const md = renderMarkdown(debate);
    expect(md.indexOf('### Blocking')).toBeLessThan(md.indexOf('### Not blocking'));
    expect(md).toContain('- **F1** (BLOCKING, confidence 80) R1-SURE merged');
    expect(md).not.toContain('## Synthesis');
    const doc = debateDocument(debate) as { protocol: { report: { blocking: { id: string }[]; other: { id: string }[]; downgrades: unknown[] } } };
    expect(doc.protocol.report.blocking.map((f) => f.id)).toEqual(['F1']);
    expect(doc.protocol.report.other.map((f) => f.id)).toEqual(['F2', 'F3']);
    expect(doc.protocol.report.downgrades).toHaveLength(2);
    const page = debatePage(debate, null);
    expect(page).toContain('Review report by filt');
    expect(page).toContain('roles lead (lead), ana (analyst), r1 (reviewer), r2 (reviewer), filt (filter)');

    // A replay shows the phases and the downgrade as they came.
    const err = capture();
    const live = liveRenderer(err, plainStyle);
    for (const e of storedEvents(debate)) live(e);
    live.close();
    expect(err.text).toMatch(/Plan · the lead and the analysts[\s\S]*Review · the reviewers[\s\S]*downgraded: r2\/R1 was blocking at confidence 65[\s\S]*Final · the filter/);
  });

  it('runs reviewers without a lead as generic reviewers, and has the synthesizer model filter when no agent does', async () => {
    const { seen, debate } = await setup([
      ['r1', 'reviewer'],
      ['r2', 'reviewer'],
    ]);
    expect(debate.status).toBe('completed');
    const reviews = seen.filter((r) => stageOf(r) === 'review');
    expect(reviews).toHaveLength(2);
    for (const r of reviews) expect(prompt(r)).toContain('Plan: (no plan provided)');
    const filters = seen.filter((r) => stageOf(r) === 'filter');
    expect(filters.map((r) => r.model)).toEqual(['synth:1b']);
    const report = stepsOf(debate).find((s) => s.kind === 'report');
    expect(report).toMatchObject({ filter: 'synthesizer', model: 'synth:1b', status: 'ok', findings: [] });
    expect(stepsOf(debate).some((s) => s.kind === 'observations' && s.withPlan)).toBe(false);
    expect(renderCard(debate)).toContain('BLOCKING FINDINGS (0)\n  none');
  });

  it('goes on without a plan when the lead fails, saying so', async () => {
    const { seen, debate, events } = await setup(FULL, (req) => (stageOf(req) === 'plan' ? 'not json' : reviewScript(req)));
    expect(debate.status).toBe('completed');
    for (const r of seen.filter((x) => stageOf(x) === 'review')) expect(prompt(r)).toContain('(no plan provided)');
    expect(events.flatMap((e) => (e.type === 'warning' ? [e.message] : []))).toContain('the lead lead gave no usable plan; the reviewers run as generic reviewers');
    expect(renderCard(debate)).toMatch(/WITHOUT A USABLE REPLY\n  - lead \(lead\):/);
  });

  it.each([
    ['every reviewer fails', (req: SimRequest) => (stageOf(req) === 'review' ? 'not json' : reviewScript(req))],
    ['every agent fails', (req: SimRequest) => (['plan', 'observe', 'review'].includes(stageOf(req)) ? { error: 'runner crashed', status: 500 } : reviewScript(req))],
  ])('fails the run with exit 5, naming the failed reviewers, and never runs the filter, when %s', async (_, script) => {
    const preset = pipelinePreset(FULL);
    const responder = scriptedResponder([0.2], script);
    sim = await startSimulator({ models: simModels(preset), respond: responder.respond });
    store = openStore(':memory:');
    const err = await runDebate({ question: 'Review this change', preset, host: sim.url, recorder: recorder(store) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DebateFailedError);
    expect(err).toMatchObject({ code: 'TOO_FEW_ANSWERS', exitCode: 5 });
    const message = (err as Error).message;
    expect(message).toContain('0 of 2 reviews usable, so the filter was not run');
    expect(message).toMatch(/ - r1: /);
    expect(message).toMatch(/ - r2: /);
    expect(responder.seen.filter((r) => stageOf(r) === 'filter')).toHaveLength(0);
    const debate = store.getDebate(store.listDebates()[0]!.id);
    expect(debate.status).toBe('failed');
    expect(debate.exitReason).toBe('too_few_answers');
    expect(debate.synthesis).toBeFalsy();
    expect(stepsOf(debate).some((x) => x.kind === 'report')).toBe(false);
    // Every plan and review is kept.
    expect(stepsOf(debate).filter((x) => x.kind === 'observations').map((x) => (x as { agentId: string }).agentId).sort()).toEqual(['ana', 'lead', 'r1', 'r2']);
    expect(() => renderCard(debate)).not.toThrow();
  });

  it('leaves the run unsynthesized when the filter fails, keeping every review, and refuses `synthesize` with the reason', async () => {
    const { debate, store: s } = await setup(FULL, (req) => (stageOf(req) === 'filter' ? 'not json' : reviewScript(req)));
    expect(debate.status).toBe('unsynthesized');
    expect(stepsOf(debate).filter((x) => x.kind === 'observations' && x.status === 'ok')).toHaveLength(4);
    expect(stepsOf(debate).find((x) => x.kind === 'report')).toMatchObject({ status: 'failed' });
    const card = renderCard(debate);
    expect(card).toContain('No report:');
    expect(card).toContain('R1-SURE');
    const err = await resynthesize({ store: s, id: debate.id, host: sim!.url }).catch((e: unknown) => e);
    expect(errorOf(() => { throw err; }).message).toContain('is a review pipeline');
  });

  it('writes one document in artifact mode, with every observation in the report, blocking first', async () => {
    const { seen, debate } = await setup(FULL, (req) => (stageOf(req) === 'filter' ? JSON.stringify({ title: 'Change review', document: 'DOC-BODY: fix the migration.' }) : reviewScript(req)), { filterMode: 'artifact' });
    expect(debate.status).toBe('completed');
    expect(seen.filter((r) => stageOf(r) === 'filter').every((r) => prompt(r).includes('Write one document'))).toBe(true);
    const report = stepsOf(debate).find((s) => s.kind === 'report') as Extract<ProtocolStep, { kind: 'report' }>;
    expect(report.artifact).toEqual({ title: 'Change review', document: 'DOC-BODY: fix the migration.' });
    expect(report.findings.map((f) => [f.id, f.raisedBy[0], f.blocking])).toEqual([
      ['F1', 'r1', true],
      ['F2', 'r2', false],
      ['F3', 'ana', false],
    ]);
    const card = renderCard(debate);
    expect(card).toContain('DOC-BODY');
    expect(card).toContain('BLOCKING OBSERVATIONS (1)');
  });

  it('keeps model text inert on the card and escaped in Markdown', async () => {
    const hostile = 'EVIL \u001b[31mred\u001b[0m <script>alert(1)</script> [link](http://x)';
    const { debate } = await setup(FULL, (req) => {
      if (stageOf(req) === 'review') return reply.observations([{ id: 'R1\u001b[2J', text: hostile, confidence: 90, blocking: true, evidence: hostile }]);
      if (stageOf(req) === 'filter') return JSON.stringify({ summary: hostile, findings: [{ text: hostile, confidence: 90, blocking: true, evidence: hostile, sources: [] }] });
      return reviewScript(req);
    });
    const card = renderCard(debate);
    expect(card).toContain('EVIL');
    expect(card).not.toContain('\u001b');
    const md = renderMarkdown(debate);
    expect(md).toContain('EVIL');
    expect(md).not.toContain('<script>');
    expect(md).toContain('\\[link]');
    // The odd id is cleaned to what an id may hold.
    expect(stepsOf(debate).find((s) => s.kind === 'observations' && s.agentId === 'r1')).toMatchObject({ observations: [expect.objectContaining({ id: 'R12J' })] });
  });
});

describe('review pipeline with attached material, a token budget and quality ratings', () => {
  const plan = (): Attachment => {
    const content = migrationPlan(12);
    return { name: 'plan.md', content, bytes: Buffer.byteLength(content), sha256: createHash('sha256').update(content).digest('hex') };
  };

  async function run(extra: { attachments?: Attachment[]; tokenBudget?: number } = {}) {
    const preset = pipelinePreset(FULL, extra.tokenBudget ? { tokenBudget: extra.tokenBudget } : {});
    const script = scriptedResponder([0.2], reviewScript);
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    store = openStore(':memory:');
    const result = await runDebate({ question: 'Review this migration plan', preset, host: sim.url, recorder: recorder(store), ...(extra.attachments ? { attachments: extra.attachments } : {}) });
    const debate = store.getDebate(result.id);
    const done = { seen: script.seen, debate, result };
    store.close();
    store = null;
    await sim.close();
    sim = null;
    return done;
  }
  const everything = (req: SimRequest): string => req.messages.map((m) => m.content).join('\n');

  it('gives the lead, the analyst and every reviewer the attached file as marked excerpts, not the filter, and records it', async () => {
    const { seen, debate } = await run({ attachments: [plan()] });
    expect(debate.status).toBe('completed');
    // The viewer lists the file, readable whole, and the calls that read it.
    const page = debatePage(debate, null);
    expect(page).toContain('id="attachments"');
    expect(page).toContain('<code>plan.md</code>');
    expect(page).toContain('4 agent calls read it');
    for (const req of seen.filter((r) => ['plan', 'observe', 'review'].includes(stageOf(r)))) {
      expect(everything(req)).toMatch(/\[Excerpt of plan\.md: sections [\d, ]+ of 12 — [\d,]+ of [\d,]+ characters\]/);
    }
    const filter = seen.find((r) => stageOf(r) === 'filter')!;
    expect(everything(filter)).not.toContain('plan.md');
    expect(debate.attachments?.map((a) => [a.name, a.sha256])).toEqual([['plan.md', plan().sha256]]);
    const read = debate.calls.filter((c) => c.material?.length).map((c) => `${c.stage}:${c.agentId}`).sort();
    expect(read).toEqual(['observe:ana', 'plan:lead', 'review:r1', 'review:r2']);
    // Every role's result is rated; the filter's report is the result, not rated.
    expect((debate.quality ?? []).map((q) => `${q.stage}:${q.agentId}`).sort()).toEqual(read);
  });

  it('under a tight budget skips reviewers, never the filter, and still ends with a report that says why', async () => {
    const free = await run({ attachments: [plan()] });
    const spent = free.debate.calls.reduce((sum, c) => sum + (c.metrics.promptTokens ?? 0) + (c.metrics.completionTokens ?? 0), 0);
    const tight = await run({ attachments: [plan()], tokenBudget: Math.max(1000, Math.round(spent * 0.45)) });
    expect(tight.debate.calls.length).toBeLessThan(free.debate.calls.length);
    expect(tight.debate.status).toBe('completed');
    expect(tight.debate.calls.filter((c) => c.stage === 'filter')).toHaveLength(1);
    const skipped = (tight.debate.budgetDecisions ?? []).filter((d) => d.kind === 'skip');
    expect(skipped.length).toBeGreaterThan(0);
    expect(skipped.every((d) => d.agentId !== 'filt')).toBe(true);
    // Each skipped role is reported as skipped, not failed.
    const skippedSteps = stepsOf(tight.debate).filter((st) => st.kind === 'observations' && st.status === 'skipped');
    expect(skippedSteps.map((st) => (st as Extract<ProtocolStep, { kind: 'observations' }>).agentId).sort()).toEqual(skipped.map((d) => d.agentId).sort());
    expect(renderCard(tight.debate)).toMatch(/Cut short by the budget: \d+ agent calls? skipped when the budget ran out/);
    expect(debatePage(tight.debate, null)).toMatch(/<p id="budget">[\d,]+ of [\d,]+ tokens \(\d+%\) in \d+ calls · <strong>cut short<\/strong>/);
  });

  it('retries a thin review once with the question alone and keeps it as one observation', async () => {
    const preset = pipelinePreset(FULL);
    const script = scriptedResponder([0.2], (req) => {
      // The first review is thin; the retry (an answer's shape) is a full one.
      if (agentOf(req) === 'r1' && isRetry(req)) return reply.opening('r1', 'RETRIED-REVIEW: the column default is missing');
      // Two words, no evidence, confidence 10: a score between 25 and 49.
      if (agentOf(req) === 'r1' && stageOf(req) === 'review') return reply.observations([{ id: 'R1', text: 'maybe', confidence: 10, blocking: false, evidence: '' }], 'ok');
      return reviewScript(req);
    });
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    store = openStore(':memory:');
    const result = await runDebate({ question: 'Review this change', preset, host: sim.url, recorder: recorder(store) });
    const debate = store.getDebate(result.id);
    const retry = script.seen.filter((r) => agentOf(r) === 'r1');
    expect(retry).toHaveLength(2);
    expect(everything(retry[1]!)).not.toContain('PLAN-CHECK-ALPHA');
    const rated = (debate.quality ?? []).filter((q) => q.agentId === 'r1');
    expect(rated.map((q) => [q.try, q.action])).toEqual([
      [0, 'RETRY'],
      [1, 'PASS'],
    ]);
    const r1 = stepsOf(debate).find((s) => s.kind === 'observations' && s.agentId === 'r1') as Extract<ProtocolStep, { kind: 'observations' }>;
    expect(r1.observations).toEqual([expect.objectContaining({ text: 'RETRIED-REVIEW: the column default is missing', confidence: 60, blocking: false })]);
    expect(everything(script.seen.find((r) => stageOf(r) === 'filter')!)).toContain('RETRIED-REVIEW');
  });
});

describe('review pipeline on any reply the grammar allows', () => {
  const arbitrary = (long: boolean, run: () => number) => (req: SimRequest): SimReply => {
    if (!req.format || typeof req.format !== 'object') return {};
    const seed = createHash('sha256').update(`${run()}\u0000${JSON.stringify(req.messages)}\u0000${req.model}`).digest().readInt32BE(0);
    const [value] = fc.sample(arbitraryOf(req.format as Record<string, unknown>, { long }), { seed, numRuns: 1 });
    return JSON.stringify(value);
  };

  it('completes with short replies, one call each and no repair, and renders every view', async () => {
    const preset = pipelinePreset(FULL);
    let run = 0;
    sim = await startSimulator({ models: simModels(preset), respond: arbitrary(false, () => run) });
    store = openStore(':memory:');
    for (run = 0; run < 6; run++) {
      const result = await runDebate({ question: `Review change ${run}`, preset, host: sim.url, recorder: recorder(store) });
      const d = store.getDebate(result.id);
      expect(d.status).toBe('completed');
      expect(d.calls.filter((c) => c.attempt > 0 || c.status !== 'ok').map((c) => [c.stage, c.agentId, c.validationError ?? c.error])).toEqual([]);
      expect(d.calls.map((c) => c.stage).sort()).toEqual(['filter', 'observe', 'plan', 'review', 'review']);
      const report = stepsOf(d).find((s) => s.kind === 'report') as Extract<ProtocolStep, { kind: 'report' }>;
      // Ids are reassigned in order, blocking first, and nothing blocking sits below the threshold.
      expect(report.findings.map((f) => f.id)).toEqual(report.findings.map((_, i) => `F${i + 1}`));
      expect(report.findings.findIndex((f) => !f.blocking)).toBe(report.findings.some((f) => !f.blocking) ? report.findings.filter((f) => f.blocking).length : -1);
      for (const s of stepsOf(d)) {
        if (s.kind !== 'observations') continue;
        expect(new Set(s.observations.map((o) => o.id)).size).toBe(s.observations.length);
        for (const o of s.observations) {
          expect(o.blocking && o.confidence < 70).toBe(false);
          expect(o.id).toMatch(/^[A-Za-z0-9_.-]+$/);
          expect(o.text.trim()).not.toBe('');
        }
      }
      expect(renderCard(d)).toContain('review pipeline');
      expect(renderMarkdown(d)).toContain('## Review report');
      expect(() => debatePage(d, null)).not.toThrow();
    }
  });

  it('never crashes on long replies either: the run ends completed or unsynthesized, and every view renders', async () => {
    const preset = pipelinePreset(FULL);
    let run = 0;
    sim = await startSimulator({ models: simModels(preset), respond: arbitrary(true, () => run) });
    store = openStore(':memory:');
    for (run = 0; run < 3; run++) {
      const result = await runDebate({ question: `Review long change ${run}`, preset, host: sim.url, recorder: recorder(store) });
      const d = store.getDebate(result.id);
      expect(['completed', 'unsynthesized']).toContain(d.status);
      expect(renderCard(d)).toContain('review pipeline');
      expect(() => renderMarkdown(d)).not.toThrow();
      expect(() => debatePage(d, null)).not.toThrow();
    }
  });
});
