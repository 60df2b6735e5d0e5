import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { debatePage } from '../../src/serve/debate-page.js';
import { type SimHandle, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { runCli } from '../helpers/cli.js';
import { agentOf, reply, scriptedResponder, simModels, stageOf, subQuestionOf, testPreset } from '../helpers/panel.js';

const dir = mkdtempSync(join(tmpdir(), 'conclave-constraints-'));
let sim: SimHandle | null = null;

afterEach(async () => {
  await sim?.close();
  sim = null;
});

const STATING = {
  alpha: { kind: 'requires', subject: 'The PostgreSQL database', detail: 'Move the record to PostgreSQL this quarter.' },
  beta: { kind: 'prohibits', subject: 'postgresql databases', detail: 'No second database server for a two-person team.' },
  gamma: { kind: 'prefers', subject: 'typed data-access layer', detail: 'Put queries behind one module.' },
} as const;

/** Openings (or sub-answers) that state `stating`'s constraints, and a synthesis that resolves every collision it is asked to. */
function panelResponder(stating: Record<string, { kind: string; subject: string; detail: string }> = STATING) {
  return scriptedResponder([0.95], (req: SimRequest) => {
    const agent = agentOf(req) ?? '';
    const stage = stageOf(req);
    // Three independent parts, one per panelist.
    if (stage === 'split') return reply.split([1, 2, 3].map((n) => ({ question: `part ${n}?`, dependsOn: [] })));
    if ((stage === 'opening' || stage === 'subanswer') && agent in stating) {
      const position = stage === 'subanswer' ? `${agent} answers sub-question ${subQuestionOf(req)}` : `${agent} says A`;
      return JSON.stringify({ ...JSON.parse(reply.opening(agent, position)), constraints: [stating[agent]], tradeOffs: [`${agent} trades speed for safety`] });
    }
    const props = (req.format as { properties?: Record<string, { items?: { properties?: { collision?: { enum?: string[] } } } }> }).properties ?? {};
    const ids = props.collisionResolutions?.items?.properties?.collision?.enum;
    if (ids && (stage === 'synthesis' || 'triggersToRevisit' in props)) {
      return JSON.stringify({ ...JSON.parse(reply.synthesis()), collisionResolutions: ids.map((id) => ({ collision: id, resolution: `Stay on SQLite now and revisit ${id} at 50 writers a second.` })) });
    }
    return undefined;
  });
}

function presetFile(name: string, protocol: Record<string, unknown>): { file: string; preset: ReturnType<typeof testPreset> } {
  const preset = testPreset(['alpha', 'beta', 'gamma'], { name, protocol: { maxRounds: 1, convergenceThreshold: 0.9, callTimeoutSeconds: 10, ...protocol } as never });
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(preset));
  return { file, preset };
}

describe('typed constraints from the CLI', () => {
  it('shows a conflict on the card when one agent requires what another prohibits, and hands both, with their authors, to the synthesizer', async () => {
    const { file, preset } = presetFile('constraints-debate', {});
    const responder = panelResponder();
    sim = await startSimulator({ models: simModels(preset), respond: responder.respond });
    const db = join(dir, 'debate.db');
    const run = await runCli(['run', 'Should we move the record to PostgreSQL?', '--preset', file, '--host', sim.url, '--db', db, '--constraint', 'Keep the tool installable offline'], dir);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('CONFLICTS (1 between the constraints the agents stated; 4 merged)');
    expect(run.stdout).toMatch(/C1 "The PostgreSQL database": alpha requires it \(Move the record to PostgreSQL this quarter\.\);\s+beta prohibits it \(No second database server for a two-person team\.\)/);
    expect(run.stdout).toContain('Resolved: Stay on SQLite now and revisit C1 at 50 writers a second.');

    // The synthesizer's prompt holds both constraints with their authors, the user's first, and its schema names the collision.
    const synthesis = responder.seen.find((r) => stageOf(r) === 'synthesis')!;
    const prompt = synthesis.messages.at(-1)!.content;
    expect(prompt).toContain('- requires Keep the tool installable offline (the user)');
    expect(prompt).toContain('- requires The PostgreSQL database (alpha): Move the record to PostgreSQL this quarter.');
    expect(prompt).toContain('- prohibits postgresql databases (beta): No second database server for a two-person team.');
    expect(prompt).toContain('- C1 on "The PostgreSQL database": alpha requires it');
    expect(prompt.indexOf('(the user)')).toBeLessThan(prompt.indexOf('(alpha)'));
    const format = synthesis.format as { required: string[]; properties: { collisionResolutions: { items: { properties: { collision: { enum: string[] } } } } } };
    expect(format.required).toContain('collisionResolutions');
    expect(format.properties.collisionResolutions.items.properties.collision.enum).toEqual(['C1']);

    const id = /Stored as (\S+)/.exec(run.stderr)![1]!;
    const doc = JSON.parse((await runCli(['show', id, '--db', db, '--json'], dir)).stdout) as {
      constraints: { stage: string; collisions: { id: string; resolution: string | null; requires: { authors: string[] } }[]; tradeOffs: unknown[] };
      rounds: { turns: { agentId: string; opening: { constraints?: unknown[] } | null }[] }[];
    };
    expect(doc.constraints.stage).toBe('synthesis');
    expect(doc.constraints.collisions.map((c) => [c.id, c.requires.authors, c.resolution])).toEqual([['C1', ['alpha'], 'Stay on SQLite now and revisit C1 at 50 writers a second.']]);
    expect(doc.constraints.tradeOffs).toHaveLength(3);
    // Recorded per turn, and rated: the seed's has_trade_offs and constraint_count.
    expect(doc.rounds[0]!.turns.find((t) => t.agentId === 'alpha')!.opening!.constraints).toEqual([STATING.alpha]);
    const quality = (JSON.parse((await runCli(['show', id, '--db', db, '--json'], dir)).stdout) as { quality: { stage: string; agentId: string; indicators?: unknown }[] }).quality;
    expect(quality.find((q) => q.stage === 'opening' && q.agentId === 'alpha')!.indicators).toEqual({ hasTradeOffs: true, constraintCount: 1 });
    const md = (await runCli(['show', id, '--db', db], dir)).stdout;
    expect(md).toContain('## Constraints and trade-offs');
    expect(md).toContain('- **C1** "The PostgreSQL database": alpha requires it');
    expect(md).toContain('- gamma: gamma trades speed for safety');
    const store = openStore(db, { readonly: true });
    try {
      const page = debatePage(store.getDebate(id), null);
      expect(page).toContain('<section id="stated-constraints" class="card">');
      expect(page).toContain('<strong>C1</strong> &quot;The PostgreSQL database&quot;: alpha requires it');
    } finally {
      store.close();
    }
    expect((await runCli(['verify', id, '--db', db], dir)).stdout).toContain('sealed');
  });

  it('checks the parts of a decomposition against each other before they are reassembled', async () => {
    const { file, preset } = presetFile('constraints-decompose', { kind: 'decompose' });
    // alpha decomposes; beta and gamma answer the parts.
    const responder = panelResponder({ beta: { ...STATING.alpha }, gamma: { ...STATING.beta } });
    sim = await startSimulator({ models: simModels(preset), respond: responder.respond });
    const db = join(dir, 'decompose.db');
    const run = await runCli(['run', 'Plan the storage of the tool', '--preset', file, '--host', sim.url, '--db', db], dir);
    expect(run.code).toBe(0);
    const reassembly = responder.seen.find((r) => r.messages.at(-1)!.content.includes('Put the answers together'))!;
    const prompt = reassembly.messages.at(-1)!.content;
    expect(prompt).toMatch(/- C1 on "The PostgreSQL database": beta \(sub-question \d\)(, beta \(sub-question \d\))? requires it/);
    expect(prompt).toMatch(/gamma \(sub-question \d\) prohibits it/);
    expect((reassembly.format as { required: string[] }).required).toContain('collisionResolutions');
    expect(run.stdout).toContain('CONFLICTS (1 between');
  });

  it("hands the user's --constraint to the synthesizer even when no agent restates it, and a \"never …\" constraint overrules an agent that requires the thing", async () => {
    const { file, preset } = presetFile('constraints-user-only', {});
    const responder = scriptedResponder([0.95]);
    sim = await startSimulator({ models: simModels(preset), respond: responder.respond });
    const db = join(dir, 'user-only.db');
    const run = await runCli(['run', 'Q?', '--preset', file, '--host', sim.url, '--db', db, '--constraint', 'Runs without a network connection'], dir);
    expect(run.code).toBe(0);
    const synthesis = responder.seen.find((r) => stageOf(r) === 'synthesis')!;
    expect(synthesis.messages.at(-1)!.content).toContain('requires Runs without a network connection (the user)');

    const { file: file2, preset: preset2 } = presetFile('constraints-user-never', {});
    const stating = { alpha: STATING.alpha };
    const responder2 = panelResponder(stating);
    await sim.close();
    sim = await startSimulator({ models: simModels(preset2), respond: responder2.respond });
    const run2 = await runCli(['run', 'Should we move the record to PostgreSQL?', '--preset', file2, '--host', sim.url, '--db', db, '--constraint', 'never a PostgreSQL database'], dir);
    expect(run2.code).toBe(0);
    const synthesis2 = responder2.seen.find((r) => stageOf(r) === 'synthesis')!;
    const prompt = synthesis2.messages.at(-1)!.content;
    expect(prompt).toContain('prohibits a PostgreSQL database (the user): never a PostgreSQL database');
    expect(prompt).toContain('The user prohibits it: leave it out.');
    expect(run2.stdout).toContain('The user prohibits it: leave it out. The user outranks the agents.');
  });

  it('leaves a debate whose agents state nothing as it was: no section, no step, no resolutions asked', async () => {
    const { file, preset } = presetFile('constraints-none', {});
    const responder = scriptedResponder([0.95]);
    sim = await startSimulator({ models: simModels(preset), respond: responder.respond });
    const db = join(dir, 'none.db');
    const run = await runCli(['run', 'Q?', '--preset', file, '--host', sim.url, '--db', db], dir);
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain('CONFLICTS');
    const synthesis = responder.seen.find((r) => stageOf(r) === 'synthesis')!;
    expect(synthesis.messages.at(-1)!.content).not.toContain('Constraints the answers stated');
    expect((synthesis.format as { properties: object }).properties).not.toHaveProperty('collisionResolutions');
  });
});
