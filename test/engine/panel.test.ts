import { describe, expect, it } from 'vitest';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import type { DebateEvent } from '../../src/engine/events.js';
import { renderCard } from '../../src/render/card.js';
import { debateDocument } from '../../src/render/document.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import { storedEvents } from '../../src/render/replay.js';
import { debatePage } from '../../src/serve/debate-page.js';
import type { SchedulePlan } from '../../src/schedule/plan.js';
import { demoResponder, simModelsFor } from '../../src/sim/demo.js';
import { startSimulator } from '../../src/sim/index.js';
import { loadPreset } from '../../src/config/load-preset.js';
import { openStore } from '../../src/store/open.js';
import { closesAfterEach } from '../helpers/lifecycle.js';
import { runCli } from '../helpers/cli.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { judgedIdsOf, judgedRoundOf, reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

const track = closesAfterEach();

/** The panel's models served with the given families, and the judge's and synthesizer's. */
function familyModels(preset: ReturnType<typeof testPreset>, families: readonly string[]) {
  return [
    ...preset.agents.map((a, i) => ({ name: a.model, contextLength: 32768, family: families[i]!, parameterSize: '8B', quantization: 'Q4_K_M' })),
    { name: 'judge:1b', contextLength: 32768 },
    { name: 'synth:1b', contextLength: 32768 },
  ];
}

/** Three agents: a and b agree at round 0, c stands apart and joins them in round 1, giving no reason. */
async function conformingDebate(families: [string, string, string]) {
  const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 10 } as never });
  const script = scriptedResponder([0.3, 0.9], (req) => {
    if (stageOf(req) === 'synthesis') return reply.synthesis([], ['a', 'b', 'c']);
    if (stageOf(req) !== 'judge') return undefined;
    const ids = judgedIdsOf(req);
    const round = judgedRoundOf(req);
    const stances =
      round === 0
        ? [
            { id: 'S1', summary: 'Do A', agents: ids.filter((id) => id !== 'c') },
            { id: 'S2', summary: 'Do B', agents: ['c'] },
          ]
        : [{ id: 'S1', summary: 'Do A', agents: ids }];
    const v = round === 0 ? 30 : 90;
    return JSON.stringify({ rationale: 'scored', recommendation: v, facts: v, caveats: v, stances });
  });
  const sim = track(await startSimulator({ models: familyModels(preset, families), respond: script.respond }));
  const store = track(openStore(':memory:'));
  const result = await runDebate({ question: 'A or B?', preset, host: sim.url, recorder: recorder(store) });
  return { d: store.getDebate(result.id), script };
}

/**
 * Three agents of one family: a and b together (A), c apart (B) at round 0; at round 1 the judge
 * gives `round1` under its own letters, and scores the round converged.
 */
async function relabellingDebate(round1: { id: string; summary: string; agents: string[] }[]) {
  const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 10 } as never });
  const script = scriptedResponder([0.3, 0.9], (req) => {
    if (stageOf(req) === 'synthesis') return reply.synthesis([], ['a', 'b']);
    if (stageOf(req) !== 'judge') return undefined;
    const round = judgedRoundOf(req);
    const stances = round === 0 ? [{ id: 'A', summary: 'Use SQLite', agents: ['a', 'b'] }, { id: 'B', summary: 'Use Postgres', agents: ['c'] }] : round1;
    const v = round === 0 ? 30 : 90;
    return JSON.stringify({ rationale: 'scored', recommendation: v, facts: v, caveats: v, stances });
  });
  const sim = track(await startSimulator({ models: familyModels(preset, ['llama', 'llama', 'llama']), respond: script.respond }));
  const store = track(openStore(':memory:'));
  const events: DebateEvent[] = [];
  const result = await runDebate({ question: 'SQLite or Postgres?', preset, host: sim.url, recorder: recorder(store), listeners: [(e) => void events.push(e)] });
  const d = store.getDebate(result.id);
  expect(store.verifyDebate(d.id).state).toBe('sealed');
  return { d, events };
}

describe('panel independence on the record', () => {
  it('names each agent\'s family and its stance per round in the JSON document and in show, for a mixed panel', async () => {
    const { d, script } = await conformingDebate(['llama', 'qwen2', 'gemma2']);
    // The judge's call carries the stances: its schema lists the agents it read as the enum.
    const judge = script.seen.find((r) => stageOf(r) === 'judge')!;
    expect((judge.format as { properties: { stances: { items: { properties: { agents: { items: { enum: string[] } } } } } } }).properties.stances.items.properties.agents.items.enum).toEqual(['a', 'b', 'c']);
    const doc = debateDocument(d) as { panel: { families: { agentId: string; family: string; source: string; parameterSize: string }[]; rounds: { round: number; agents: { agentId: string; stance: string; move: string; reasoned: boolean | null }[] }[]; figures: Record<string, unknown> } };
    expect(doc.panel.families.map((f) => [f.agentId, f.family, f.source, f.parameterSize])).toEqual([
      ['a', 'llama', 'server', '8B'],
      ['b', 'qwen2', 'server', '8B'],
      ['c', 'gemma2', 'server', '8B'],
    ]);
    expect(doc.panel.rounds.map((r) => r.agents.map((a) => `${a.agentId}:${a.stance}:${a.move}`))).toEqual([
      ['a:S1:opened', 'b:S1:opened', 'c:S2:opened'],
      ['a:S1:held', 'b:S1:held', 'c:S1:joined'],
    ]);
    expect(doc.panel.rounds[1]!.agents[2]!.reasoned).toBe(false);
    expect(doc.panel.figures).toMatchObject({ stancesAtStart: 2, stancesAtEnd: 1, majorityAdoption: 1, joinedMajority: ['c'] });
    // The stances the engine normalised are a sealed step of the record.
    expect(d.steps!.filter((s) => s.step.kind === 'stances').map((s) => s.step.kind === 'stances' && s.step.round)).toEqual([0, 1]);
    const md = renderMarkdown(d);
    expect(md).toContain('| a | `model-0:1b` | llama | 8B | Q4_K_M | server |');
    expect(md).toContain('| c | S2 (opened) | S1 (joined the majority, no reason stated) |');
    // Three families: HIGH stands.
    const card = renderCard(d).replace(/\s+/g, ' ');
    expect(card).toContain('CONFIDENCE: HIGH');
    expect(card).toContain('families: llama (a) · qwen (b) · gemma (c)');
    expect(card).toContain('joined the majority: c (round 1, no reason stated); adoption 1/1');
    expect((d.plan as SchedulePlan).warnings.join('\n')).not.toMatch(/one model family/);
    // The web viewer: a strip per agent, its stance in each round.
    const page = debatePage(d, null);
    const strip = /<tr data-agent="c"><th><span class="agent">c<\/span><\/th>(.*?)<\/tr>/s.exec(page.slice(page.indexOf('stance-strips')))?.[1] ?? '';
    expect(strip).toMatch(/class="stance move-opened" title="Do B">S2 /);
    expect(strip).toMatch(/class="stance move-joined" title="Do A">S1 <span class="muted">joined the majority, no reason stated/);
  });

  it('warns about a one-family panel before it runs, and keeps its agreement after round 0 below HIGH, saying why', async () => {
    const { d } = await conformingDebate(['llama', 'llama', 'llama']);
    expect((d.plan as SchedulePlan).warnings.join('\n')).toMatch(/All 3 agents are of one model family \(llama\)/);
    const card = renderCard(d).replace(/\s+/g, ' ');
    expect(card).toContain('CONFIDENCE: MEDIUM (judge 0.90 ≥ 0.85, rests on 3/3 agents, not independent)');
    expect(card).toContain('MEDIUM at most: agreement after 1 agent moved rests on one model family (llama): not independent support');
    expect(renderMarkdown(d)).toContain('_MEDIUM at most: agreement after 1 agent moved');
    expect(debateDocument(d).confidence).toMatchObject({ level: 'medium', capped: expect.stringMatching(/one model family/) });
  });

  it('reads a judge that re-letters its stances between rounds, with nobody changing group, as nobody moving, live, on the card and in a replay', async () => {
    const { d, events } = await relabellingDebate([{ id: 'A', summary: 'Use Postgres', agents: ['c'] }, { id: 'B', summary: 'Use SQLite', agents: ['a', 'b'] }]);
    // The live view and --events read the step the engine emits.
    const live = events.flatMap((e) => (e.type === 'protocol.step' && e.step.kind === 'stances' && e.step.round === 1 ? [e.step] : []));
    expect(live.flatMap((s) => s.agents.map((a) => `${a.agentId}:${a.stance}:${a.move}`))).toEqual(['a:B:held', 'b:B:held', 'c:A:held']);
    const doc = debateDocument(d) as { panel: { rounds: { agents: { move: string }[] }[]; figures: Record<string, unknown> } };
    expect(doc.panel.rounds[1]!.agents.map((a) => a.move)).toEqual(['held', 'held', 'held']);
    expect(doc.panel.figures).toMatchObject({ movers: [], joins: [], joinedMajority: [], majorityAdoption: 0 });
    const card = renderCard(d).replace(/\s+/g, ' ');
    expect(card).toContain('MEDIUM at most: agreement from 2 stances at round 0 rests on one model family (llama): not independent support');
    expect(card).toContain('joined the majority: nobody joined the majority');
    expect(card).not.toMatch(/moved/);
    // A record an engine wrote when stances were carried over by the judge's letters (everyone moved) reads the same.
    const older = { ...d, steps: d.steps!.map((s) => (s.step.kind === 'stances' && s.step.round === 1 ? { ...s, step: { ...s.step, lineage: { A: 'A', B: 'B' }, agents: s.step.agents.map((a) => ({ ...a, move: a.agentId === 'c' ? ('joined' as const) : ('left' as const), reasoned: true })) } } : s)) };
    expect(renderCard(older).replace(/\s+/g, ' ')).toContain('agreement from 2 stances at round 0 rests on one model family');
    expect(renderMarkdown(older)).toContain('| c | B (opened) | A (held) |');
    const replayed = storedEvents(older).flatMap((e) => (e.type === 'protocol.step' && e.step.kind === 'stances' && e.step.round === 1 ? e.step.agents.map((a) => a.move) : []));
    expect(replayed).toEqual(['held', 'held', 'held']);
  });

  it('reads the one agent that changed group as the only move, toward the group it joined, when the judge re-letters the stances', async () => {
    // b goes over to c; the judge gives c's group the letter A, a's the letter B.
    const { d } = await relabellingDebate([{ id: 'A', summary: 'Use Postgres', agents: ['b', 'c'] }, { id: 'B', summary: 'Use SQLite', agents: ['a'] }]);
    const doc = debateDocument(d) as { panel: { rounds: { agents: { agentId: string; move: string }[] }[]; figures: Record<string, unknown> } };
    expect(doc.panel.rounds[1]!.agents.map((a) => `${a.agentId}:${a.move}`)).toEqual(['a:held', 'b:left', 'c:held']);
    expect(doc.panel.figures).toMatchObject({ movers: ['b'], joins: [] });
    expect(renderCard(d).replace(/\s+/g, ' ')).toContain('agreement after 1 agent moved rests on one model family (llama)');
  });

  it('keeps a debate below HIGH when the judge scored it converged but its stances split the panel with no majority', async () => {
    const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 10 } as never });
    // The judge scores 0.95 and, in the same reply, puts every agent in a stance of its own.
    const script = scriptedResponder([0.95], (req) => {
      if (stageOf(req) === 'synthesis') return reply.synthesis([], ['a', 'b', 'c']);
      if (stageOf(req) !== 'judge') return undefined;
      const stances = judgedIdsOf(req).map((id, i) => ({ id: `S${i + 1}`, summary: `Do what ${id} says`, agents: [id] }));
      return JSON.stringify({ rationale: 'they agree', recommendation: 95, facts: 95, caveats: 95, stances });
    });
    const families = ['llama', 'qwen2', 'gemma2'];
    const sim = track(await startSimulator({ models: familyModels(preset, families), respond: script.respond }));
    const store = track(openStore(':memory:'));
    const d = store.getDebate((await runDebate({ question: 'A or B?', preset, host: sim.url, recorder: recorder(store) })).id);
    const doc = debateDocument(d) as { confidence: { level: string; basis: string[]; lowered: string[] } };
    expect(doc.confidence.level).toBe('medium');
    expect(doc.confidence.basis).toContain("judge's stances split 1/1/1");
    expect(doc.confidence.lowered).toEqual(['MEDIUM at most: the judge scored 0.95 but put the 3 positions it read in 3 stances, none held by a majority.']);
    const card = renderCard(d).replace(/\s+/g, ' ');
    expect(card).toContain("CONFIDENCE: MEDIUM (judge 0.95 ≥ 0.85, rests on 3/3 agents, judge's stances split 1/1/1)");
    expect(card).toContain('none held by a majority');
    expect(renderMarkdown(d)).toContain('none held by a majority');
    // Nor does the run stop on that score: it holds every critique round, and says why at each.
    expect(d.exitReason).toBe('max_rounds');
    expect(d.rounds.map((r) => r.round)).toEqual([0, 1, 2]);
    expect(d.exitDetail).toBe('reached the ceiling of 2 critique rounds');
  });

  it('stops at the threshold when the stances the judge gives with its score have a majority', async () => {
    const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 10 } as never });
    const script = scriptedResponder([0.95], (req) => {
      if (stageOf(req) !== 'judge') return undefined;
      const [first, ...rest] = judgedIdsOf(req);
      const stances = [{ id: 'S1', summary: 'most', agents: rest }, { id: 'S2', summary: 'one', agents: [first!] }];
      return JSON.stringify({ rationale: 'they agree', recommendation: 95, facts: 95, caveats: 95, stances });
    });
    const sim = track(await startSimulator({ models: simModels(preset), respond: script.respond }));
    const store = track(openStore(':memory:'));
    const warnings: string[] = [];
    const d = store.getDebate((await runDebate({ question: 'A or B?', preset, host: sim.url, recorder: recorder(store), listeners: [(e) => void (e.type === 'warning' && warnings.push(e.message))] })).id);
    expect([d.exitReason, d.rounds.length]).toEqual(['converged', 1]);
    expect(warnings.filter((w) => w.includes('not taken as convergence'))).toEqual([]);
  });

  it('plays a conforming panel in the demo: the agent that argued to migrate joins the majority', async () => {
    const { preset } = loadPreset('tech-decision', process.cwd());
    const sim = track(await startSimulator({ models: simModelsFor([preset]), respond: demoResponder(preset), tokenMs: 0 }));
    const store = track(openStore(':memory:'));
    const result = await runDebate({ question: 'Should we migrate this tool from SQLite to Postgres now?', preset, host: sim.url, recorder: recorder(store) });
    const d = store.getDebate(result.id);
    const doc = debateDocument(d) as { panel: { figures: { joins: { agentId: string }[]; majorityAdoption: number; familiesAll: { families: string[] } } } };
    const migrator = preset.agents[1]!.id;
    expect(doc.panel.figures.joins.map((j) => j.agentId)).toEqual([migrator]);
    expect(doc.panel.figures.majorityAdoption).toBe(1);
    // The simulator reports a family per model from its name.
    expect(doc.panel.figures.familiesAll.families.length).toBe(new Set(preset.agents.map((a) => a.model.replace(/[\d.:].*$/, ''))).size);
    expect(renderCard(d)).toMatch(/PANEL\n {2}families: /);
  });

  it('shows each model\'s family in `models --preset` and warns about a one-family panel', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-families-'));
    const file = join(dir, 'panel.yaml');
    writeFileSync(
      file,
      'name: one-family\nagents:\n  - {id: a, model: "m-a:8b"}\n  - {id: b, model: "m-b:8b"}\n  - {id: c, model: "other:8b", family: llama}\njudge: {model: "m-a:8b"}\nsynthesizer: {model: "m-b:8b"}\n',
    );
    const sim = track(
      await startSimulator({
        models: [
          { name: 'm-a:8b', family: 'llama' },
          { name: 'm-b:8b', family: 'llama' },
          { name: 'other:8b', family: 'llama' },
        ],
        respond: () => ({}),
      }),
    );
    const r = await runCli(['models', '--preset', file, '--host', sim.url], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/model\s+family\s+size/);
    expect(r.stdout).toMatch(/m-a:8b\s+llama/);
    expect(r.stdout).toContain('Panel of one-family: a llama · b llama · c llama');
    expect(r.stdout).toContain('warning: All 3 agents are of one model family (llama)');
    const json = JSON.parse((await runCli(['models', '--preset', file, '--host', sim.url, '--json'], dir)).stdout) as { families: { agentId: string; family: string; source: string }[] };
    expect(json.families.map((f) => `${f.agentId}:${f.family}:${f.source}`)).toEqual(['a:llama:server', 'b:llama:server', 'c:llama:server']);
  });
});
