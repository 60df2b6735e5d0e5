import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { checkProtocolPreset } from '../../src/config/load-preset.js';
import { protocolChoices } from '../../src/engine/advisor.js';
import { parseReply } from '../../src/engine/structured-call.js';
import { adviceSchemaFor, applyAdvice } from '../../src/protocol/advice.js';
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
  it('asks the advisor first, with the protocols as an enum, then runs what it chose, and the record says why', async () => {
    const { file, models } = autoPreset();
    const responder = scriptedResponder([0.5, 0.6, 0.7], (req) =>
      isAdvice(req) ? JSON.stringify({ domains: ['storage', 'operations'], parts: 'one', protocol: 'parallel', depth: 'shallow', pattern: 'single-domain', reason: 'One clear question: independent answers merged are enough.' }) : undefined,
    );
    sim = await startSimulator({ models, respond: responder.respond });
    const db = join(dir, 'auto.db');
    const run = await runCli(['run', 'Which backup tool should we use?', '--preset', file, '--host', sim.url, '--db', db], dir);
    expect(run.code).toBe(0);

    // The advisor came first, before any panel call, with the panel's protocols as its enum.
    expect(isAdvice(responder.seen[0]!)).toBe(true);
    expect(responder.seen[0]!.model).toBe('advisor:1b');
    const enumOf = (responder.seen[0]!.format as { properties: { protocol: { enum: string[] } } }).properties.protocol.enum;
    expect(enumOf).toEqual(['debate', 'parallel', 'tournament', 'decompose', 'delphi']);
    expect(responder.seen[0]!.messages.at(-1)!.content).toContain('Question: Which backup tool should we use?');
    // It ran as parallel: answers and a synthesis, no critique round, no judge.
    expect(responder.seen.filter((r) => stageOf(r) === 'critique')).toHaveLength(0);
    expect(responder.seen.filter((r) => stageOf(r) === 'opening')).toHaveLength(3);
    expect(run.stdout).toContain('parallel answers from 3 agents');
    // The card wraps its lines: read it as one.
    expect(run.stdout.replace(/\s+/g, ' ')).toMatch(/protocol: advisor:1b chose parallel among debate, parallel, tournament, decompose, delphi \(shallow, single-domain, budget 24,000 tokens; parts: one; domains: storage, operations\): One clear question/);
    expect(run.stderr).toContain('advisor advisor:1b chose parallel');

    const id = /Stored as (\S+)/.exec(run.stderr)![1]!;
    const doc = JSON.parse((await runCli(['show', id, '--db', db, '--json'], dir)).stdout) as {
      preset: { protocol: { kind: string; tokenBudget: number } };
      advice: { chosen: string; status: string; advice: { reason: string } };
      calls: { stage: string; agentId: string; place: string }[];
    };
    expect(doc.preset.protocol.kind).toBe('parallel');
    expect(doc.preset.protocol.tokenBudget).toBe(24_000);
    // The classification reaches every agent and the synthesizer, and is sealed with the preset as run.
    const brief = 'It touches storage, operations; it is a single question; it stays within one domain; a concise answer is enough.';
    expect((doc.preset.protocol as { brief?: string }).brief).toBe(brief);
    for (const r of responder.seen.filter((q) => stageOf(q) === 'opening' || stageOf(q) === 'synthesis')) {
      expect(r.messages.map((m) => m.content).join('\n')).toContain(`How this question was framed before the panel started:\n${brief}`);
    }
    expect(doc.advice).toMatchObject({ chosen: 'parallel', status: 'ok', advice: { reason: 'One clear question: independent answers merged are enough.' } });
    expect(doc.calls[0]).toMatchObject({ stage: 'advice', agentId: 'advisor', place: 'the advice, before the panel' });
    expect((await runCli(['show', id, '--db', db], dir)).stdout).toContain('- Protocol chosen by the advisor: advisor:1b chose parallel');
    expect((await runCli(['verify', id, '--db', db], dir)).stdout).toContain('sealed');
  });

  it('keeps a shallow debate to two critique rounds at most', async () => {
    const { file, models } = autoPreset({ maxRounds: 4 });
    const responder = scriptedResponder([0.1], (req) =>
      isAdvice(req) ? JSON.stringify({ domains: [], parts: 'dependent', protocol: 'debate', depth: 'shallow', pattern: 'multi-domain', reason: 'Contested.' }) : undefined,
    );
    sim = await startSimulator({ models, respond: responder.respond });
    const run = await runCli(['run', 'Q?', '--preset', file, '--host', sim.url, '--db', join(dir, 'shallow.db'), '--json', '--quiet'], dir);
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout) as { preset: { protocol: { maxRounds: number; tokenBudget: number } } };
    expect(doc.preset.protocol.maxRounds).toBe(2);
    expect(doc.preset.protocol.tokenBudget).toBe(48_000);
    expect(responder.seen.filter((r) => stageOf(r) === 'judge')).toHaveLength(3);
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
          expect(choices).toContain(parsed.value.protocol);
          const { advisor: _advisor, ...protocol } = panel.protocol;
          const base = parsed.value.protocol === 'pipeline' ? panel : { ...panel, agents: panel.agents.map(({ role: _role, ...a }) => a) };
          expect(checkProtocolPreset(applyAdvice({ ...base, protocol: { ...protocol, kind: parsed.value.protocol } }, parsed.value))).toEqual([]);
        }),
        { numRuns: 100 },
      );
    }
  });
});
