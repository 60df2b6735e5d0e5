import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { checkProtocolPreset } from '../../src/config/load-preset.js';
import { protocolChoices } from '../../src/engine/advisor.js';
import { parseReply } from '../../src/engine/structured-call.js';
import { type Advice, adviceSchemaFor, applyAdvice, routeAdvice } from '../../src/protocol/advice.js';
import { formatSchemaOf } from '../../src/protocol/grammar.js';
import { type SimHandle, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { runCli } from '../helpers/cli.js';
import { arbitraryOf } from '../helpers/schema-arbitrary.js';
import { scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

const dir = mkdtempSync(join(tmpdir(), 'conclave-auto-'));
let sim: SimHandle | null = null;

afterEach(async () => {
  await sim?.close();
  sim = null;
});

const isAdvice = (req: SimRequest): boolean => 'parts' in ((req.format as { properties?: object } | null)?.properties ?? {});

function autoPreset(protocol: Record<string, unknown> = {}) {
  const preset = testPreset(['alpha', 'beta', 'gamma'], { name: 'auto-panel', protocol: { kind: 'auto', advisor: 'advisor:1b', maxRounds: 3, convergenceThreshold: 0.99, callTimeoutSeconds: 10, ...protocol } as never });
  const file = join(dir, `auto-${Object.keys(protocol).join('-') || 'plain'}.json`);
  writeFileSync(file, JSON.stringify(preset));
  return { preset, file, models: [...simModels(preset), { name: 'advisor:1b', contextLength: 8192 }] };
}

describe('protocol.kind: auto', () => {
  it('asks the advisor first to classify, then runs what the rules chose, and the record says why', async () => {
    const { file, models } = autoPreset();
    const responder = scriptedResponder([0.5, 0.6, 0.7], (req) =>
      isAdvice(req) ? JSON.stringify({ domains: ['storage', 'operations'], parts: 'one', mode: 'query', depth: 'shallow', pattern: 'single-domain', reason: 'One clear question: independent answers merged are enough.' }) : undefined,
    );
    sim = await startSimulator({ models, respond: responder.respond });
    const db = join(dir, 'auto.db');
    const run = await runCli(['run', 'Which backup tool should we use?', '--preset', file, '--host', sim.url, '--db', db], dir);
    expect(run.code).toBe(0);

    // The advisor came first, before any panel call; it classifies, with the modes as an enum, and is told what the classes lead to.
    expect(isAdvice(responder.seen[0]!)).toBe(true);
    expect(responder.seen[0]!.model).toBe('advisor:1b');
    const props = (responder.seen[0]!.format as { properties: Record<string, { enum?: string[] }> }).properties;
    expect(props['mode']!.enum).toEqual(['query', 'analyze', 'compare', 'review', 'estimate']);
    expect(props['protocol']).toBeUndefined();
    expect(responder.seen[0]!.messages.at(-1)!.content).toContain('Question: Which backup tool should we use?');
    expect(responder.seen[0]!.messages.at(-1)!.content).toContain('- tournament: the answers meet in pairwise matches');
    // It ran as parallel: answers and a synthesis, no critique round, no judge.
    expect(responder.seen.filter((r) => stageOf(r) === 'critique')).toHaveLength(0);
    expect(responder.seen.filter((r) => stageOf(r) === 'opening')).toHaveLength(3);
    expect(run.stdout).toContain('parallel answers from 3 agents');
    // The card wraps its lines: read it as one.
    expect(run.stdout.replace(/\s+/g, ' ')).toContain(
      'protocol: advisor:1b classified it (shallow, single-domain, query; parts: one; domains: storage, operations): One clear question: independent answers merged are enough. Rule: shallow, single-domain → parallel (one answer each, merged); ran parallel among debate, parallel, tournament, decompose, delphi, budget 12,000 tokens.',
    );
    expect(run.stderr).toContain('advisor advisor:1b classified; running parallel (shallow, single-domain → parallel');

    const id = /Stored as (\S+)/.exec(run.stderr)![1]!;
    const doc = JSON.parse((await runCli(['show', id, '--db', db, '--json'], dir)).stdout) as {
      preset: { protocol: { kind: string; tokenBudget: number } };
      advice: { chosen: string; status: string; advice: { reason: string } };
      calls: { stage: string; agentId: string; place: string }[];
    };
    expect(doc.preset.protocol.kind).toBe('parallel');
    expect(doc.preset.protocol.tokenBudget).toBe(12_000);
    // The classification reaches every agent and the synthesizer, and is sealed with the preset as run.
    const brief = 'It touches storage, operations; it is a single question; it asks for a fact or a way to do something; it stays within one domain; a concise answer is enough.';
    expect((doc.preset.protocol as { brief?: string }).brief).toBe(brief);
    for (const r of responder.seen.filter((q) => stageOf(q) === 'opening' || stageOf(q) === 'synthesis')) {
      expect(r.messages.map((m) => m.content).join('\n')).toContain(`How this question was framed before the panel started:\n${brief}`);
    }
    expect(doc.advice).toMatchObject({ chosen: 'parallel', status: 'ok', rule: 'shallow, single-domain → parallel (one answer each, merged)', advice: { reason: 'One clear question: independent answers merged are enough.' } });
    expect(doc.calls[0]).toMatchObject({ stage: 'advice', agentId: 'advisor', place: 'the advice, before the panel' });
    expect((await runCli(['show', id, '--db', db], dir)).stdout).toContain('- Protocol chosen by the advisor: advisor:1b classified it (shallow');
    expect((await runCli(['verify', id, '--db', db], dir)).stdout).toContain('sealed');
  });

  it('keeps a shallow debate to two critique rounds at most', async () => {
    const { file, models } = autoPreset({ maxRounds: 4 });
    const responder = scriptedResponder([0.1], (req) =>
      isAdvice(req) ? JSON.stringify({ domains: [], parts: 'one', mode: 'analyze', depth: 'shallow', pattern: 'multi-domain', reason: 'Contested.' }) : undefined,
    );
    sim = await startSimulator({ models, respond: responder.respond });
    const run = await runCli(['run', 'Q?', '--preset', file, '--host', sim.url, '--db', join(dir, 'shallow.db'), '--json', '--quiet'], dir);
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout) as { preset: { protocol: { maxRounds: number; tokenBudget: number } } };
    expect(doc.preset.protocol.maxRounds).toBe(2);
    expect(doc.preset.protocol.tokenBudget).toBe(24_000);
    expect(responder.seen.filter((r) => stageOf(r) === 'judge')).toHaveLength(3);
  });

  it('estimates with --dry-run the range over the protocols the advisor may pick, naming the cheapest and the dearest, calling no model and recording nothing', async () => {
    const { file, models } = autoPreset({ maxRounds: 4 });
    const responder = scriptedResponder([0.5]);
    sim = await startSimulator({ models, respond: responder.respond });
    const db = join(dir, 'dry-auto.db');
    const text = await runCli(['run', 'Should we split billing out?', '--preset', file, '--host', sim.url, '--db', db, '--dry-run'], dir);
    const json = await runCli(['run', 'Should we split billing out?', '--preset', file, '--host', sim.url, '--db', db, '--dry-run', '--json'], dir);
    expect([text.code, json.code]).toEqual([0, 0]);
    expect(responder.seen).toEqual([]);
    expect(existsSync(db)).toBe(false);
    type Choice = { protocol: string; depth: string | null; calls: number; tokens: number };
    const doc = JSON.parse(json.stdout) as { protocol: string; calls: number; tokens: number; groups: { what: string; model: string }[]; range: { rankedBy: string; choices: Choice[]; cheapest: Choice; dearest: Choice } };
    const { cheapest, dearest } = doc.range;
    expect(doc.protocol).toBe('auto');
    expect(doc.range.choices.map((c) => c.protocol)).toEqual(expect.arrayContaining(['debate', 'parallel', 'tournament', 'decompose', 'delphi']));
    expect([doc.calls, doc.tokens]).toEqual([dearest.calls, dearest.tokens]);
    expect(doc.groups[0]).toMatchObject({ what: 'the advisor: the question classified', model: 'advisor:1b' });
    expect(cheapest).toMatchObject({ protocol: 'parallel', depth: null });
    const out = text.stdout.replace(/\s+/g, ' ');
    expect(out).toContain('The advisor (advisor:1b) picks the protocol when the run starts, from its reading of the question, so no dry run can know which: for auto-panel it may pick debate, parallel, tournament, decompose or delphi.');
    expect(out).toContain(`from ${cheapest.calls} calls, about ${cheapest.tokens.toLocaleString('en-US')} tokens at most, if it picks parallel (the cheapest choice in time)`);
    const dearestName = dearest.depth ? `${dearest.protocol} on a ${dearest.depth} question` : dearest.protocol;
    expect(out).toContain(`to ${dearest.calls} calls, about ${dearest.tokens.toLocaleString('en-US')} tokens at most, if it picks ${dearestName} (the dearest in time)`);
    expect(out).toContain(`CALLS (at most, if the advisor picks ${dearestName}, the dearest choice)`);
    expect(out).toMatch(/debate on a shallow question \d+ ~[\d,]+ ~\d+ (s|min)/);
    expect(out).not.toContain('not estimated');
  });

  it('lets an explicit --protocol win: no advisor call at all', async () => {
    const { file, models } = autoPreset();
    const responder = scriptedResponder([0.95]);
    sim = await startSimulator({ models, respond: responder.respond });
    const run = await runCli(['run', 'Q?', '--preset', file, '--host', sim.url, '--db', join(dir, 'explicit.db'), '--protocol', 'debate', '--json', '--quiet'], dir);
    expect(run.code).toBe(0);
    expect(responder.seen.some(isAdvice)).toBe(false);
    expect((JSON.parse(run.stdout) as { advice: unknown }).advice).toBeNull();
  });

  it('runs a debate, and says why, when the advisor gives nothing usable', async () => {
    const { file, models } = autoPreset();
    const responder = scriptedResponder([0.95], (req) => (isAdvice(req) ? { error: 'model runner crashed', status: 400 } : undefined));
    sim = await startSimulator({ models, respond: responder.respond });
    const run = await runCli(['run', 'Q?', '--preset', file, '--host', sim.url, '--db', join(dir, 'failed.db')], dir);
    expect(run.code).toBe(0);
    expect(run.stdout.replace(/\s+/g, ' ')).toMatch(/protocol: advisor:1b gave no usable advice \(.*model runner crashed.*\), so it ran as debate\./);
    expect(responder.seen.some((r) => stageOf(r) === 'critique')).toBe(true);
  });

  it('offers a pipeline only to a panel with roles, and every schema-valid advice runs as a valid preset', () => {
    const { preset } = autoPreset();
    expect(protocolChoices(preset)).toEqual(['debate', 'parallel', 'tournament', 'decompose', 'delphi']);
    const roles = { ...preset, agents: preset.agents.map((a, i) => ({ ...a, role: i === 0 ? ('lead' as const) : ('reviewer' as const) })) };
    expect(protocolChoices(roles)).toContain('pipeline');
    for (const panel of [preset, roles]) {
      const choices = protocolChoices(panel);
      const schema = adviceSchemaFor(choices);
      fc.assert(
        fc.property(arbitraryOf(formatSchemaOf(schema)), (instance) => {
          const parsed = parseReply(JSON.stringify(instance), schema);
          if (!parsed.ok) throw new Error(parsed.problem);
          const route = routeAdvice(parsed.value, choices);
          expect(choices).toContain(route.protocol);
          const { advisor: _advisor, ...protocol } = panel.protocol;
          const base = route.protocol === 'pipeline' ? panel : { ...panel, agents: panel.agents.map(({ role: _role, ...a }) => a) };
          expect(checkProtocolPreset(applyAdvice({ ...base, protocol: { ...protocol, kind: route.protocol } }, parsed.value, route.protocol))).toEqual([]);
        }),
        { numRuns: 100 },
      );
    }
  });

  it('routes by the classification: several parts decompose, a review goes to a pipeline, a pick among options to a tournament, where the panel can run them', () => {
    const base: Advice = { domains: [], parts: 'one', mode: 'analyze', depth: 'deep', pattern: 'multi-domain', reason: 'r' };
    const all = ['debate', 'parallel', 'tournament', 'decompose', 'pipeline', 'delphi'] as const;
    expect(routeAdvice({ ...base, parts: 'dependent' }, all).protocol).toBe('decompose');
    expect(routeAdvice({ ...base, parts: 'independent', mode: 'compare' }, all).protocol).toBe('decompose');
    expect(routeAdvice({ ...base, mode: 'review' }, all).protocol).toBe('pipeline');
    expect(routeAdvice({ ...base, mode: 'compare' }, all).protocol).toBe('tournament');
    expect(routeAdvice({ ...base, mode: 'estimate' }, all).protocol).toBe('delphi');
    expect(routeAdvice({ ...base, mode: 'estimate' }, ['debate', 'parallel']).rule).toContain('this panel cannot run delphi');
    expect(routeAdvice({ ...base, depth: 'shallow', pattern: 'single-domain', mode: 'query' }, all).protocol).toBe('parallel');
    expect(routeAdvice(base, all).protocol).toBe('debate');
    // A review on a panel without roles cannot be a pipeline: a debate, and the rule says why.
    const noRoles = routeAdvice({ ...base, mode: 'review' }, ['debate', 'parallel', 'tournament', 'decompose']);
    expect(noRoles).toEqual({ protocol: 'debate', rule: 'deep, multi-domain, review → debate (critique rounds until the panel converges); this panel cannot run pipeline (it needs agents with roles)' });
  });

  it('on the default preset, decomposes a multi-part question, and every split, part and reassembly prompt carries the classification', async () => {
    const preset = (await import('../../src/config/load-preset.js')).loadPreset('tech-decision').preset;
    const file = join(dir, 'tech-auto.json');
    writeFileSync(file, JSON.stringify({ ...preset, agents: preset.agents, protocol: { ...preset.protocol, kind: 'auto', callTimeoutSeconds: 10 } }));
    const responder = scriptedResponder([0.9], (req) =>
      isAdvice(req)
        ? JSON.stringify({ domains: ['storage', 'billing'], parts: 'dependent', mode: 'analyze', depth: 'deep', pattern: 'cross-system', reason: 'The second part rests on the first.' })
        : undefined,
    );
    sim = await startSimulator({ models: [...simModels(preset), { name: 'qwen2.5:3b', contextLength: 8192 }], respond: responder.respond });
    const db = join(dir, 'tech-auto.db');
    const run = await runCli(['run', 'Which database should billing use, and how do we migrate the ledger to it?', '--preset', file, '--host', sim.url, '--db', db, '--json', '--quiet'], dir);
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout) as {
      preset: { protocol: { kind: string; tokenBudget: number } };
      advice: { chosen: string; rule: string; choices: string[] };
      calls: { stage: string; messages: { content: string }[] }[];
    };
    expect(doc.advice.choices).toEqual(['debate', 'parallel', 'tournament', 'decompose', 'delphi']);
    expect(doc.advice.chosen).toBe('decompose');
    expect(doc.advice.rule).toBe('parts: dependent → decompose (each part answered on its own, in dependency order)');
    expect(doc.preset.protocol).toMatchObject({ kind: 'decompose', tokenBudget: 96_000 });
    const brief = 'It touches storage, billing; its parts build on each other, so an answer must keep them consistent; it asks for a judgement to weigh; it crosses several systems whose constraints must agree with each other; it is worth a thorough answer.';
    const stages = new Set<string>();
    // The map's claim extraction and clash reading only transcribe answers: the classification is for those who answer.
    for (const call of doc.calls.filter((c) => ['split', 'subanswer', 'reassembly'].includes(c.stage))) {
      expect(call.messages.map((m) => m.content).join('\n'), call.stage).toContain(brief);
      stages.add(call.stage);
    }
    expect([...stages]).toEqual(expect.arrayContaining(['split', 'subanswer', 'reassembly']));
  });

  it('sends a review of an attached change to a panel with roles as a pipeline, and the advisor saw what was attached', async () => {
    const { preset, models } = autoPreset();
    const roles = { ...preset, agents: preset.agents.map((a, i) => ({ ...a, role: i === 0 ? ('lead' as const) : ('reviewer' as const) })) };
    const file = join(dir, 'auto-roles.json');
    writeFileSync(file, JSON.stringify(roles));
    writeFileSync(join(dir, 'change.diff'), '--- a/ledger.ts\n+++ b/ledger.ts\n@@ -1 +1 @@\n-const x = 1;\n+const x = 2;\n');
    const responder = scriptedResponder([0.9], (req) =>
      isAdvice(req) ? JSON.stringify({ domains: ['billing'], parts: 'one', mode: 'review', depth: 'deep', pattern: 'single-domain', reason: 'A change to review.' }) : undefined,
    );
    sim = await startSimulator({ models, respond: responder.respond });
    const run = await runCli(['run', 'Is this change safe to ship?', '--preset', file, '--attach', 'change.diff', '--host', sim.url, '--db', join(dir, 'review.db'), '--json', '--quiet'], dir);
    expect(run.code).toBe(0);
    expect(responder.seen[0]!.messages.at(-1)!.content).toContain('Attached for the panel to read: change.diff.');
    const doc = JSON.parse(run.stdout) as { preset: { protocol: { kind: string } }; advice: { chosen: string; rule: string }; calls: { stage: string; agentId: string }[] };
    expect(doc.advice).toMatchObject({ chosen: 'pipeline', rule: 'mode: review → pipeline (a lead plans, reviewers review)' });
    expect(doc.preset.protocol.kind).toBe('pipeline');
    expect(doc.calls.filter((c) => c.stage === 'plan').map((c) => c.agentId)).toEqual(['alpha']);
  });
});
