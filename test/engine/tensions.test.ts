import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { PresetInput } from '../../src/config/preset-schema.js';
import { recorder } from '../../src/engine/recorder.js';
import { planResume, resumeDebate } from '../../src/engine/resume.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { renderCard } from '../../src/render/card.js';
import { debateDocument } from '../../src/render/document.js';
import { liveRenderer } from '../../src/render/live.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import { plainStyle } from '../../src/render/style.js';
import { storedEvents } from '../../src/render/replay.js';
import { debatePage } from '../../src/serve/debate-page.js';
import { type SimHandle, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { flaggedTensionMaps } from '../../src/store/tensions.js';
import { agentOf, simModels, testPreset } from '../helpers/panel.js';
import { type TensionScript, type TensionStage, mapReply, tensionResponder, tensionStageOf, userText } from '../helpers/tensions.js';

// The tension stage inside real debates against the simulator; claim ids as in test/helpers/tensions.ts.

let sim: SimHandle | null = null;
let store: Store | null = null;

afterEach(async () => {
  store?.close();
  store = null;
  await sim?.close();
  sim = null;
});

async function debate(agentIds: string[], script: TensionScript, tensions: NonNullable<PresetInput['tensions']> = {}, path = ':memory:') {
  const preset = testPreset(agentIds, { tensions, protocol: { maxRounds: 1, callTimeoutSeconds: 10 } });
  const responder = tensionResponder(script);
  sim = await startSimulator({ models: simModels(preset), respond: responder.respond });
  store = openStore(path);
  const result = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store) });
  return { result, seen: responder.seen, stored: store.getDebate(result.id), store, preset };
}

const of = (seen: SimRequest[], stage: TensionStage) => seen.filter((r) => tensionStageOf(r) === stage);

describe('the tension map stage', () => {
  it('never fires the targeted round on emphasis clashes, even with the severity bar at 1', async () => {
    const { seen, stored } = await debate(
      ['a', 'b', 'c'],
      {
        clashes: [
          { a: 'C1', b: 'C3', type: 'emphasis', severity: 3 },
          { a: 'C2', b: 'C5', type: 'emphasis', severity: 3 },
          { a: 'C4', b: 'C6', type: 'emphasis', severity: 2 },
        ],
      },
      { round2: { minSeverity: 1, minClashes: 2 } },
    );
    expect(of(seen, 'targeted')).toHaveLength(0);
    const map = stored.tensions!.map!;
    expect(map.tensions.map((t) => t.type)).toEqual(['emphasis', 'emphasis', 'emphasis']);
    expect(map.round2Target).toBeNull();
    expect(map.round).toBe(1);
    expect(stored.tensions!.exchange).toBeNull();
  });

  it('fires on two load-bearing factual clashes and re-asks only the two agents of the worst one, each shown the other\'s exact claim', async () => {
    const { seen, stored, preset } = await debate(['a', 'b', 'c', 'd'], {
      clashes: [
        { a: 'C5', b: 'C7', type: 'factual', severity: 8 },
        { a: 'C1', b: 'C3', type: 'factual', severity: 9 },
      ],
      stances: { a: 'concede', b: 'maintain' },
    });
    const targeted = of(seen, 'targeted');
    expect(targeted.map(agentOf).sort()).toEqual(['a', 'b']);
    const toA = targeted.find((r) => agentOf(r) === 'a')!;
    const toB = targeted.find((r) => agentOf(r) === 'b')!;
    expect(userText(toA)).toContain('Your claim: "a claim 1"');
    expect(userText(toA)).toContain('b\'s claim: "b claim 1"');
    expect(userText(toB)).toContain('Your claim: "b claim 1"');
    expect(userText(toB)).toContain('a\'s claim: "a claim 1"');
    // Each agent answers with its own model and persona, not the clash model.
    expect(toA.model).toBe(preset.agents[0]!.model);
    expect(toB.messages[0]!.content).toBe('You are agent b.');

    const t = stored.tensions!;
    expect(t.exchange).toMatchObject({ tensionId: 'T1', agents: ['a', 'b'], outcome: 'resolved' });
    expect(t.exchange!.turns.map((x) => x.prompt)).toEqual([userText(toA), userText(toB)]);
    expect(t.map!.round).toBe(2);
    expect(t.map!.round2Target).toMatchObject({ tensionId: 'T1', agents: ['a', 'b'], outcome: 'resolved' });
    expect(t.map!.tensions.map((x) => [x.id, x.agentA, x.agentB, x.resolution])).toEqual([
      ['T1', 'a', 'b', 'resolved'],
      ['T2', 'c', 'd', 'open'],
    ]);
    expect(stored.calls.filter((c) => c.stage === 'targeted').map((c) => c.agentId).sort()).toEqual(['a', 'b']);
    // The map model sees the exchange; the synthesizer sees the map.
    expect(userText(of(seen, 'map')[0]!)).toContain('Targeted exchange on T1');
    const synthesis = seen.find((r) => 'triggersToRevisit' in ((r.format as { properties?: object })?.properties ?? {}))!;
    expect(userText(synthesis)).toContain('Tension map (');
    expect(userText(synthesis)).toContain('"c claim 1" against d [C7] "d claim 1"');
  });

  it('does not fire on a single high clash', async () => {
    const { seen, stored } = await debate(['a', 'b', 'c'], {
      clashes: [
        { a: 'C1', b: 'C3', type: 'factual', severity: 10 },
        { a: 'C2', b: 'C5', type: 'interpretive', severity: 5 },
      ],
    });
    expect(of(seen, 'targeted')).toHaveLength(0);
    expect(stored.tensions!.map!.tensions).toHaveLength(2);
    expect(stored.tensions!.map!.round2Target).toBeNull();
  });

  it('flags a long zero-tension map for human review, stores the flag and counts it, and leaves a short one alone', async () => {
    const long = (agent: string) => `${agent} argues at length. ${'The evidence points one way. '.repeat(40)}`;
    const first = await debate(['a', 'b', 'c'], { clashes: [], opening: long });
    const review = first.stored.tensions!.map!.review;
    expect(review.flagged).toBe(true);
    expect(review.answerTokens).toBeGreaterThan(800);
    expect(review.reasons.map((r) => r.code)).toEqual(['long-answers-no-tensions']);
    expect(flaggedTensionMaps(first.store, [first.result.id])).toEqual({ count: 1, ids: [first.result.id] });
    expect(renderCard(first.stored)).toContain('⚑ FLAGGED FOR HUMAN REVIEW');
    store!.close();
    store = null;
    await sim!.close();
    sim = null;

    const second = await debate(['a', 'b', 'c'], { clashes: [] });
    expect(second.stored.tensions!.map!.tensions).toHaveLength(0);
    expect(second.stored.tensions!.map!.review.flagged).toBe(false);
    expect(flaggedTensionMaps(second.store).count).toBe(0);
  });

  it("flags a map that says nothing on one agent's main point, and shows why on the card, in show and in the viewer", async () => {
    const { stored } = await debate(['a', 'b', 'c'], {
      clashes: [{ a: 'C2', b: 'C4', type: 'interpretive', severity: 5 }],
      map: (req) => {
        const draft = JSON.parse(mapReply(req)) as { consensus: { supportingAgents: string[] }[] };
        draft.consensus[0]!.supportingAgents = ['a', 'b'];
        return JSON.stringify(draft);
      },
    });
    const review = stored.tensions!.map!.review;
    expect(review.reasons.map((r) => r.code)).toEqual(['uncovered-topics']);
    expect(review.reasons[0]!.detail).toContain('main point of c (C5: "c claim 1")');
    expect(renderCard(stored, { ...plainStyle, columns: 200 })).toContain('main point of c (C5');
    expect(renderMarkdown(stored)).toContain('main point of c (C5');
    expect(debatePage(stored, null)).toContain('main point of c (C5');
  });

  it('drops a consensus zone that lists one panelist twice, notes it on the call, and draws the map without a repair', async () => {
    const { stored } = await debate(['a', 'b', 'c'], {
      clashes: [{ a: 'C1', b: 'C3', type: 'factual', severity: 9 }],
      map: (req) => {
        const draft = JSON.parse(mapReply(req)) as { consensus: { supportingAgents: string[] }[] };
        draft.consensus[0]!.supportingAgents = ['a', 'a'];
        return JSON.stringify(draft);
      },
    });
    const mapCalls = stored.calls.filter((c) => c.agentId === 'tension-map');
    expect(mapCalls.map((c) => [c.attempt, c.status])).toEqual([[0, 'ok']]);
    expect(mapCalls[0]!.normalized!.join('\n')).toContain('consensus[0] dropped');
    expect(stored.tensions!.status).toBe('ok');
    expect(stored.tensions!.map!.consensus).toEqual([]);
  });

  it('sends a hedged headline back once, quoting the hedge, and keeps the committed one the repair brings', async () => {
    // The repair request ends with the repair, not the panel: the first draft is answered again, mended.
    let first: { headline: string } | null = null;
    const { stored, seen } = await debate(['a', 'b', 'c'], {
      clashes: [{ a: 'C1', b: 'C3', type: 'factual', severity: 9 }],
      map: (req) => {
        if (first) return JSON.stringify({ ...first, headline: 'The panel backs A; its cost is the open clash.' });
        first = { ...(JSON.parse(mapReply(req)) as { headline: string }), headline: 'It depends on how the costs are weighed.' };
        return JSON.stringify(first);
      },
    });
    const mapCalls = stored.calls.filter((c) => c.agentId === 'tension-map');
    expect(mapCalls.map((c) => [c.attempt, c.status])).toEqual([
      [0, 'invalid'],
      [1, 'ok'],
    ]);
    expect(mapCalls[0]!.validationError).toContain('hedges');
    expect(userText(of(seen, 'map')[1]!)).toContain('"headline" hedges');
    expect(stored.tensions!.map!.synthesis.headline).toBe('The panel backs A; its cost is the open clash.');
  });

  it('keeps a headline that still hedges after its one repair, noted on the call, and draws the map', async () => {
    let first: string | null = null;
    const { stored } = await debate(['a', 'b', 'c'], {
      clashes: [{ a: 'C1', b: 'C3', type: 'factual', severity: 9 }],
      map: (req) => (first ??= JSON.stringify({ ...(JSON.parse(mapReply(req)) as object), headline: 'Both perspectives have merit.' })),
    });
    const mapCalls = stored.calls.filter((c) => c.agentId === 'tension-map');
    expect(mapCalls.map((c) => [c.attempt, c.status])).toEqual([
      [0, 'invalid'],
      [1, 'ok'],
    ]);
    expect(mapCalls[1]!.normalized!.join('\n')).toContain('headline kept as written although it hedges');
    expect(stored.tensions!.status).toBe('ok');
    expect(stored.tensions!.map!.synthesis.headline).toBe('Both perspectives have merit.');
  });

  it('rejects a map naming an unknown agent (a server ignoring format), asks once more, then records the map as failed while the debate completes', async () => {
    const { stored, result } = await debate(['a', 'b', 'c'], {
      clashes: [{ a: 'C1', b: 'C3', type: 'factual', severity: 9 }],
      map: (req) => {
        const draft = JSON.parse(mapReply(req)) as { consensus: { supportingAgents: string[] }[] };
        draft.consensus[0]!.supportingAgents = ['a', 'ghost'];
        return JSON.stringify(draft);
      },
    });
    const mapCalls = stored.calls.filter((c) => c.agentId === 'tension-map');
    expect(mapCalls.map((c) => [c.attempt, c.status])).toEqual([
      [0, 'invalid'],
      [1, 'invalid'],
    ]);
    expect(mapCalls[0]!.validationError).toMatch(/did not enforce the JSON Schema sent as format[\s\S]*supportingAgents/);
    const t = stored.tensions!;
    expect(t.status).toBe('failed');
    expect(t.map).toBeNull();
    expect(t.error).toContain('the map could not be drawn');
    expect(debateDocument(stored)).toMatchObject({ tensionMap: { status: 'failed', map: null } });
    expect(renderCard(stored)).toContain('TENSION MAP FAILED');
    expect(result.status).toBe('completed');
    expect(stored.synthesis?.status).toBe('ok');
  });

  it('repairs a clash reply with an unknown claim id or a severity out of range, and stores only what validated', async () => {
    const { stored } = await debate(['a', 'b', 'c'], {
      clashOverride: (_req, attempt) => {
        const clash = { claimA: 'C1', claimB: 'C3', type: 'factual', loadBearing: true, resolvable: true, recommendation: 'r' };
        if (attempt === 0) return JSON.stringify({ clashes: [{ ...clash, claimB: 'C77', severity: 9 }] });
        return JSON.stringify({ clashes: [{ ...clash, severity: 9 }] });
      },
    });
    const clashCalls = stored.calls.filter((c) => c.agentId === 'clash-1');
    expect(clashCalls.map((c) => c.status)).toEqual(['invalid', 'ok']);
    expect(clashCalls[0]!.validationError).toMatch(/did not enforce the JSON Schema sent as format[\s\S]*claimB/);
    expect(stored.tensions!.map!.tensions.map((t) => [t.claimAId, t.claimBId])).toEqual([['C1', 'C3']]);

    await sim!.close();
    store!.close();
    const outOfRange = await debate(['a', 'b', 'c'], {
      clashOverride: () => JSON.stringify({ clashes: [{ claimA: 'C1', claimB: 'C3', type: 'factual', severity: 14, loadBearing: true, resolvable: true, recommendation: 'r' }] }),
    });
    const t = outOfRange.stored.tensions!;
    expect(outOfRange.stored.calls.filter((c) => c.agentId === 'clash-1').map((c) => c.status)).toEqual(['invalid', 'invalid']);
    expect(t.tensions).toHaveLength(0);
    expect(t.gaps.join()).toContain('pairs a–b, a–c, b–c not compared');
    expect(t.map!.review.reasons.map((r) => r.code)).toContain('incomplete-coverage');
  });

  it('sends a clash reply that pits two claims of one agent back once, naming the problem, and maps the repaired reply', async () => {
    const clash = { type: 'factual', severity: 9, loadBearing: true, resolvable: true, recommendation: 'r' };
    const { stored, seen } = await debate(['a', 'b', 'c'], {
      clashOverride: (req) =>
        JSON.stringify({
          clashes: req.messages.some((m) => m.role === 'assistant') ? [{ ...clash, claimA: 'C1', claimB: 'C3' }] : [{ ...clash, claimA: 'C1', claimB: 'C2' }, { ...clash, claimA: 'C1', claimB: 'C3' }],
        }),
    });
    const clashCalls = stored.calls.filter((c) => c.agentId === 'clash-1');
    expect(clashCalls.map((c) => c.status)).toEqual(['invalid', 'ok']);
    expect(clashCalls[0]!.validationError).toContain('clashes[0] (C1, C2) dropped: it compares two claims of a');
    const repair = of(seen, 'clash').find((r) => r.messages.some((m) => m.role === 'assistant'))!;
    expect(repair.messages.at(-1)!.content).toContain('compares two claims of a');
    const map = stored.tensions!.map!;
    expect(map.tensions.map((t) => [t.claimAId, t.claimBId])).toEqual([['C1', 'C3']]);
    expect(map.review.reasons.map((r) => r.code)).not.toContain('malformed-clashes');
  });

  it('counts the clashes still misnamed after the repair, says so on the card, show and viewer, and flags an empty map as possible false consensus', async () => {
    const clash = { type: 'factual', severity: 9, loadBearing: true, resolvable: true, recommendation: 'r' };
    const { stored } = await debate(['a', 'b', 'c'], {
      clashOverride: () => JSON.stringify({ clashes: [{ ...clash, claimA: 'C1', claimB: 'C2' }, { ...clash, claimA: 'C5', claimB: 'C6' }] }),
    });
    const clashCalls = stored.calls.filter((c) => c.stage === 'clash' && c.agentId.startsWith('clash-'));
    expect(clashCalls.every((c) => c.status === (c.attempt === 0 ? 'invalid' : 'ok'))).toBe(true);
    const calls = clashCalls.filter((c) => c.attempt === 0).length;
    const map = stored.tensions!.map!;
    expect(map.tensions).toEqual([]);
    expect(map.review.flagged).toBe(true);
    const reason = map.review.reasons.find((r) => r.code === 'malformed-clashes')!;
    expect(reason.count).toBe(2 * calls);
    expect(reason.detail).toMatch(/dropped as malformed.*possible false consensus/);
    const card = renderCard(stored);
    expect(card).toContain(`TENSION MAP (0 tensions, ${2 * calls} clashes dropped as malformed`);
    expect(card).toContain('possible false consensus');
    expect(renderMarkdown(stored)).toContain(`${2 * calls} clashes dropped as malformed`);
    expect(debatePage(stored, null)).toContain(`${2 * calls} clashes were dropped as malformed`);
    let live = '';
    const out = { write: (s: string) => ((live += s), true) } as unknown as NodeJS.WritableStream;
    const view = liveRenderer(out, { color: false, live: false, columns: 120 });
    for (const event of storedEvents(stored)) view(event);
    expect(live).toContain(`${2 * calls} clashes dropped as malformed`);
  });

  it('compares every pair of a ten-agent panel once, in nine clash calls', async () => {
    const ids = Array.from({ length: 10 }, (_, i) => `p${i}`);
    const { seen, stored } = await debate(ids, { clashes: [] });
    expect(of(seen, 'claims')).toHaveLength(10);
    const clash = of(seen, 'clash');
    expect(clash).toHaveLength(9);
    const compared = clash.flatMap((r) => (/only these: (.*)\.$/m.exec(userText(r))?.[1] ?? '').split('; '));
    expect(new Set(compared).size).toBe(45);
    expect(compared).toHaveLength(45);
    expect(of(seen, 'map')).toHaveLength(1);
    expect(stored.tensions!.map!.coverage).toEqual({ pairsCompared: 45, pairsTotal: 45, gaps: [] });
  });

  it('replays the map, the tension list by severity and the Round 2 exchange from the file, with no model server', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'conclave-tensions-')), 'record.db');
    const { result } = await debate(
      ['a', 'b', 'c', 'd'],
      {
        clashes: [
          { a: 'C5', b: 'C7', type: 'factual', severity: 8 },
          { a: 'C1', b: 'C3', type: 'factual', severity: 9 },
          { a: 'C2', b: 'C6', type: 'emphasis', severity: 2 },
        ],
        stances: { a: 'narrow', b: 'maintain' },
      },
      {},
      path,
    );
    store!.close();
    store = null;
    await sim!.close();
    sim = null;

    store = openStore(path);
    const stored = store.getDebate(result.id);
    let text = '';
    const out = { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream;
    const render = liveRenderer(out, { color: false, live: false, columns: 120 });
    for (const event of storedEvents(stored)) render(event);
    const t1 = text.indexOf('T1   9 factual');
    const t2 = text.indexOf('T2   8 factual');
    const t3 = text.indexOf('T3   2 emphasis');
    expect(t1).toBeGreaterThan(0);
    expect(t2).toBeGreaterThan(t1);
    expect(t3).toBeGreaterThan(t2);
    expect(text).toContain('re-asking only a and b about T1');
    expect(text).toContain('Targeted exchange · T1');
    expect(text).toContain('a (narrows, confidence 0.50): a engages');
    expect(text).toContain('→ narrowed, not resolved');
    expect(text).toContain('map: The panel agrees on A but splits on its cost.');

    const md = renderMarkdown(stored);
    expect(md).toContain('## Tension map');
    expect(md).toContain('| T1 | 9 | factual | a ↔ b | yes | yes | narrowed in the targeted exchange, not resolved |');
    expect(md).toContain('### Targeted exchange on T1 (narrowed, not resolved)');
    const doc = debateDocument(stored) as { tensionMap: { map: { format: string; version: number; tensions: unknown[] }; round2: { turns: { prompt: string }[] } } };
    expect(doc.tensionMap.map).toMatchObject({ format: 'conclave.tension-map', version: 1 });
    expect(doc.tensionMap.map.tensions).toHaveLength(3);
    expect(doc.tensionMap.round2.turns[0]!.prompt).toContain('Your claim: "a claim 1"');
  });
});

describe('clashes in a debate with critique rounds', () => {
  async function rounds(script: TensionScript, maxRounds = 2) {
    const preset = testPreset(['a', 'b', 'c', 'd'], { tensions: {}, protocol: { maxRounds, callTimeoutSeconds: 10 } });
    const responder = tensionResponder({ judge: [0.2], ...script });
    sim = await startSimulator({ models: simModels(preset), respond: responder.respond });
    store = openStore(':memory:');
    const result = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store) });
    return { seen: responder.seen, stored: store.getDebate(result.id) };
  }
  const clashes = [
    { a: 'C1', b: 'C3', type: 'factual' as const, severity: 9 },
    { a: 'C5', b: 'C7', type: 'factual' as const, severity: 8 },
    { a: 'C2', b: 'C6', type: 'interpretive' as const, severity: 6 },
  ];
  const isCritique = (r: SimRequest): boolean => 'updatedPosition' in ((r.format as { properties?: object })?.properties ?? {});

  it('maps the clashes on the round-0 answers, before the first critique round, and shows each agent the open clashes it is a party to', async () => {
    const { seen, stored } = await rounds({ clashes });
    const firstCritique = seen.findIndex(isCritique);
    const clashCalls = of(seen, 'clash');
    expect(clashCalls).toHaveLength(2);
    expect(clashCalls.every((r) => seen.indexOf(r) < firstCritique)).toBe(true);
    // Only the map itself is drawn after the rounds.
    expect(seen.indexOf(of(seen, 'map')[0]!)).toBeGreaterThan(seen.findLastIndex(isCritique));
    // The claims were read from the opening answers.
    expect(of(seen, 'claims').every((r) => seen.indexOf(r) < firstCritique)).toBe(true);
    expect(stored.calls.filter((c) => c.stage === 'claims' || (c.stage === 'clash' && c.agentId !== 'tension-map')).every((c) => c.round === 0)).toBe(true);
    const toA = seen.find((r) => isCritique(r) && agentOf(r) === 'a')!;
    expect(userText(toA)).toContain('Open clashes you are a party to');
    expect(userText(toA)).toContain('- T1 (factual, severity 9): you hold "a claim 1"; b holds "b claim 1"');
    expect(userText(toA)).toContain('- T3 (interpretive, severity 6)');
    expect(userText(toA)).not.toContain('- T2 ');
    // The schema limits a's stances to its own clashes.
    const sent = (toA.format as { properties: { clashUpdates: { items: { properties: { tension: { enum: string[] } } } } } }).properties;
    expect(sent.clashUpdates.items.properties.tension.enum.sort()).toEqual(['T1', 'T3']);
  });

  it('records the round in which a clash was resolved and stops showing it to its parties', async () => {
    const { seen, stored } = await rounds({ clashes, concessions: { c: { 1: ['T2'] } } });
    const t = stored.tensions!;
    const byId = Object.fromEntries(t.map!.tensions.map((x) => [x.id, x]));
    expect(byId.T2).toMatchObject({ resolution: 'resolved', resolvedInRound: 1, concededBy: 'c' });
    expect(byId.T1!.resolvedInRound ?? null).toBeNull();
    const round2ToC = seen.find((r) => isCritique(r) && agentOf(r) === 'c' && userText(r).includes('critique round 2'))!;
    expect(userText(round2ToC)).not.toContain('- T2 ');
    expect(renderMarkdown(stored)).toContain('| T2 | 8 | factual | c ↔ d | yes | yes | resolved in round 1 (c conceded) |');
    const replayed = storedEvents(stored).filter((e) => e.type === 'tensions.update').map((e) => (e.type === 'tensions.update' ? e.update.step : ''));
    expect(replayed).toEqual(['claims', 'clashes', 'settled', 'settled', 'decision', 'targeted', 'map']);
  });

  it('keeps the first stance an agent gives a clash it names twice, notes the second on the call, and settles nothing on it', async () => {
    // c maintains T2, then concedes it in the same list: the grammar bounds the list's length and ids, not their repeats.
    const { stored } = await rounds({ clashes, repeats: { c: { 1: ['T2'] } } });
    const byId = Object.fromEntries(stored.tensions!.map!.tensions.map((x) => [x.id, x]));
    expect(byId.T2!.resolvedInRound ?? null).toBeNull();
    const critique = stored.calls.find((c) => c.stage === 'critique' && c.round === 1 && c.agentId === 'c')!;
    expect(critique.status).toBe('ok');
    expect(critique.normalized).toEqual(['clashUpdates: a second stance on T2 ("concede") was dropped; the first ("maintain") stands']);
    expect(stored.turns.find((t) => t.round === 1 && t.agentId === 'c')!.critique!.clashUpdates).toEqual([{ tension: 'T2', stance: 'maintain' }]);
  });

  it('runs the targeted exchange only for a clash still open after the last round', async () => {
    // T1 is conceded in round 1: the targeted exchange goes to T2, the worst clash still open.
    const { seen, stored } = await rounds({ clashes, concessions: { b: { 1: ['T1'] } } });
    expect(of(seen, 'targeted').map(agentOf).sort()).toEqual(['c', 'd']);
    expect(stored.tensions!.exchange).toMatchObject({ tensionId: 'T2' });
    // With only one clash still open the rule (two qualifying clashes) does not fire at all.
    await sim?.close();
    store?.close();
    sim = null;
    store = null;
    const again = await rounds({ clashes, concessions: { b: { 1: ['T1'] }, d: { 2: ['T2'] } } });
    expect(of(again.seen, 'targeted')).toHaveLength(0);
    expect(again.stored.tensions!.map!.round2Target).toBeNull();
  });

  it('never calls the targeted exchange "Round 2" in the live view, the replay or the Markdown', async () => {
    const { stored } = await rounds({ clashes });
    let text = '';
    const out = { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream;
    const live = liveRenderer(out, { color: false, live: false, columns: 120 });
    for (const e of storedEvents(stored)) live(e);
    expect(text).toContain('Targeted exchange · T1');
    const md = renderMarkdown(stored);
    for (const view of [text, md]) {
      expect(view).not.toMatch(/Round 2[^\n]*targeted/i);
      expect(view).not.toMatch(/targeted[^\n]*round 2/i);
    }
  });
});

describe('resuming a debate that mapped its clashes', () => {
  it('reuses the recorded claims and clashes instead of sending those calls again', async () => {
    const preset = testPreset(['a', 'b', 'c', 'd'], { tensions: {}, protocol: { maxRounds: 2, convergenceThreshold: 0.95, callTimeoutSeconds: 10 } });
    const clashes = [
      { a: 'C1', b: 'C3', type: 'factual' as const, severity: 9 },
      { a: 'C5', b: 'C7', type: 'factual' as const, severity: 8 },
    ];
    const responder = tensionResponder({ judge: [0.2], clashes, concessions: { c: { 1: ['T2'] } } });
    sim = await startSimulator({ models: simModels(preset), respond: responder.respond });
    store = openStore(':memory:');
    const controller = new AbortController();
    // Stopped once round 1 is judged: round 2 and the stages are left to the resumed run.
    const stop = (e: { type: string; judgement?: { round: number } }): void => {
      if (e.type === 'round.judged' && e.judgement?.round === 1) controller.abort();
    };
    await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store), listeners: [stop as never], signal: controller.signal }).catch(() => undefined);
    const stored = store.getDebate(store.listDebates()[0]!.id);
    expect(stored.status).toBe('interrupted');
    expect(stored.calls.filter((c) => c.stage === 'claims' || c.stage === 'clash').length).toBeGreaterThan(0);
    const plan = planResume(stored);
    const before = responder.seen.length;
    const result = await resumeDebate(stored, { host: sim.url, recorder: recorder(store, { resume: plan.point }) }, plan);
    expect(result.status).toBe('completed');
    const asked = responder.seen.slice(before);
    expect(of(asked, 'claims')).toHaveLength(0);
    expect(of(asked, 'clash')).toHaveLength(0);
    expect(of(asked, 'map')).toHaveLength(1);
    const after = store.getDebate(stored.id);
    // The clash c conceded in round 1 stays resolved, and the map is drawn from the recorded board.
    const byId = Object.fromEntries(after.tensions!.map!.tensions.map((x) => [x.id, x]));
    expect(byId.T2).toMatchObject({ resolution: 'resolved', resolvedInRound: 1, concededBy: 'c' });
    expect(after.tensions!.claims).toHaveLength(8);
    expect(store.verifyDebate(stored.id).state).toBe('sealed');
  });
});
