import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load-preset.js';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { cardBlock, keyParts } from '../../src/mcp/results.js';
import { decompositionConfidence, reviewConfidence, tournamentConfidence } from '../../src/protocol/confidence.js';
import { renderCard } from '../../src/render/card.js';
import { confidenceOf } from '../../src/render/confidence.js';
import { debateDocument } from '../../src/render/document.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import { plainStyle } from '../../src/render/style.js';
import { debatePage } from '../../src/serve/debate-page.js';
import { demoResponder, simModelsFor } from '../../src/sim/demo.js';
import { startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { closesAfterEach } from '../helpers/lifecycle.js';

const track = closesAfterEach();

/** Runs a built-in preset's simulated panel through the library and returns the stored run. */
async function demo(name: string) {
  const { preset } = loadPreset(name, process.cwd());
  const sim = track(await startSimulator({ models: simModelsFor([preset]), respond: demoResponder(preset), tokenMs: 0, vramBytes: 24 * 2 ** 30 }));
  const store = track(openStore(':memory:'));
  const result = await runDebate({ question: 'Should we migrate this tool from SQLite to Postgres now?', preset, host: sim.url, recorder: recorder(store) });
  return store.getDebate(result.id);
}

describe('every protocol has a confidence computed from what it recorded, the same in every view', () => {
  const cases = [
    { preset: 'decompose', level: 'medium', text: "parts' weighted confidence" },
    { preset: 'code-review', level: 'high', text: "blocking findings' mean confidence 0.85, 2/2 reviews usable" },
    { preset: 'tournament', level: 'medium', text: 'judged win' },
    { preset: 'parallel', level: 'medium', text: 'no judge score' },
  ];
  for (const c of cases) {
    it(`rates the ${c.preset} demo ${c.level.toUpperCase()} and shows it on the card, in show, the JSON document, the viewer and the MCP result`, async () => {
      const d = await demo(c.preset);
      const computed = confidenceOf(d)!;
      expect(computed.level).toBe(c.level);
      const line = `CONFIDENCE: ${c.level.toUpperCase()} (`;
      const card = renderCard(d, { ...plainStyle, columns: 200 });
      expect(card).toContain(line);
      expect(card).toContain(c.text);
      expect(renderMarkdown(d)).toContain(`**Confidence:** ${c.level.toUpperCase()} (`);
      expect(debateDocument(d).confidence).toMatchObject({ level: c.level, rule: c.preset === 'code-review' ? 'pipeline' : c.preset });
      expect(debatePage(d, null)).toContain(`Confidence: ${c.level.toUpperCase()} (`);
      expect(keyParts(d).confidence).toMatchObject({ level: c.level });
      expect(cardBlock(d)).toContain(line);
    });
  }

  it('does not count a position the cluster vote rejected among the agents the answer rests on', async () => {
    const d = await demo('cluster-vote');
    const computed = confidenceOf(d)!;
    const rejected = d.voting!.iterations.at(-1)!.tiers.filter((t) => t.tier === 'reject').length;
    expect(rejected).toBeGreaterThan(0);
    expect(computed.rejected).toHaveLength(rejected);
    // Every agent the synthesis named is counted, except the ones whose position the vote rejected.
    const named = new Set(d.synthesis!.synthesis!.restsOn ?? []);
    for (const id of computed.rejected) expect(named.has(id)).toBe(true);
    expect(computed.restsOn).toEqual([...named].filter((id) => !computed.rejected.includes(id)).sort((x, y) => d.agents.findIndex((a) => a.id === x) - d.agents.findIndex((a) => a.id === y)));
    const card = renderCard(d, { ...plainStyle, columns: 200 });
    expect(card).toContain(`rests on ${computed.restsOn.length}/${computed.of} agents, ${rejected} rejected by the vote`);
    expect(card).toContain(`The cluster vote rejected the position of ${computed.rejected[0]}`);
    expect(debatePage(d, null)).toContain(`${rejected} rejected by the vote`);
  });
});

describe('the decomposition rule', () => {
  const part = (index: number, confidence: number, more: { fallback?: boolean; dependsOn?: number[]; status?: 'ok' | 'failed' } = {}) => ({
    index,
    status: more.status ?? 'ok',
    confidence: more.status === 'failed' ? null : confidence,
    fallback: more.fallback ?? false,
    dependsOn: more.dependsOn ?? [],
  });

  it('is a weighted average of the parts, a part weighing more for each part built on it', () => {
    // Part 1 carries part 2 and part 3 (through 2): weight 3; the others 2 and 1.
    const c = decompositionConfidence([part(1, 0.9), part(2, 0.6, { dependsOn: [1] }), part(3, 0.3, { dependsOn: [2] })], true, 0.85);
    expect(c.score).toBeCloseTo((3 * 0.9 + 2 * 0.6 + 1 * 0.3) / 6);
    expect(c.level).toBe('medium');
    expect(decompositionConfidence([part(1, 0.85), part(2, 0.82)], true, 0.85).level).toBe('high');
  });

  it('is HIGH when the parts average exactly the HIGH score, float noise and all', () => {
    // 0.4, 1 and 1 average 0.7999999999999999 in floating point.
    expect(decompositionConfidence([part(1, 0.4), part(2, 1), part(3, 1)], true, 0.85).level).toBe('high');
    expect(decompositionConfidence([part(1, 0.4), part(2, 1), part(3, 0.99)], true, 0.85).level).toBe('medium');
  });

  it('counts a fallback part at half its confidence and caps the level at MEDIUM', () => {
    const c = decompositionConfidence([part(1, 0.9, { fallback: true }), part(2, 0.9), part(3, 0.9), part(4, 0.95), part(5, 0.95)], true, 0.85);
    expect(c.score).toBeCloseTo((0.45 + 0.9 + 0.9 + 0.95 + 0.95) / 5);
    expect(c.level).toBe('medium');
    expect(c.lowered.join(' ')).toContain("part 1 rests on the decomposer's fallback analysis");
  });

  it('counts a part without an answer as 0, and is LOW when the reassembly failed', () => {
    expect(decompositionConfidence([part(1, 0.9), part(2, 0, { status: 'failed' })], true, 0.85)).toMatchObject({ score: 0.45, level: 'low' });
    const failed = decompositionConfidence([part(1, 0.9), part(2, 0.9)], false, 0.85);
    expect(failed.level).toBe('low');
    expect(failed.lowered).toEqual(['LOW: the reassembly failed, so no answer to the whole question was written.']);
  });
});

describe('the review rule', () => {
  const ok = { role: 'reviewer', status: 'ok' as const };
  const failed = { role: 'reviewer', status: 'failed' as const };
  it('reads the blocking findings when there are any, else every finding', () => {
    const findings = [
      { confidence: 90, blocking: true },
      { confidence: 40, blocking: false },
    ];
    expect(reviewConfidence({ reviews: [ok, ok], report: { ok: true, findings }, threshold: 0.85 })).toMatchObject({ level: 'high', score: 0.9 });
    expect(reviewConfidence({ reviews: [ok, ok], report: { ok: true, findings: [{ confidence: 65, blocking: false }] }, threshold: 0.85 }).level).toBe('medium');
  });

  it('is MEDIUM at most when a review is missing, LOW when most are, and LOW without a report', () => {
    const findings = [{ confidence: 95, blocking: true }];
    expect(reviewConfidence({ reviews: [ok, failed], report: { ok: true, findings }, threshold: 0.85 }).level).toBe('medium');
    expect(reviewConfidence({ reviews: [ok, failed, failed], report: { ok: true, findings }, threshold: 0.85 }).level).toBe('low');
    expect(reviewConfidence({ reviews: [ok, ok], report: { ok: false, findings: [] }, threshold: 0.85 }).level).toBe('low');
  });
});

describe('the tournament rule', () => {
  it('is MEDIUM at most, and LOW when the champion won no judged match or the synthesis does not rest on it', () => {
    const judged = { a: 'x', b: 'y', winner: 'x', decidedBy: 'judged' as const };
    expect(tournamentConfidence({ champion: 'x', matches: [judged], restsOn: ['x', 'y'], threshold: 0.85 }).level).toBe('medium');
    expect(tournamentConfidence({ champion: 'x', matches: [{ ...judged, decidedBy: 'walkover' }], restsOn: ['x'], threshold: 0.85 }).level).toBe('low');
    expect(tournamentConfidence({ champion: 'x', matches: [judged], restsOn: ['y'], threshold: 0.85 }).level).toBe('low');
  });
});

describe('the tension map runs by default wherever a protocol has independent answers', () => {
  it('is on in every built-in debate, parallel and tournament preset, and a preset can still turn it off', () => {
    for (const name of ['tech-decision', 'risk-review', 'small-8gb', 'thinking', 'cluster-vote', 'parallel', 'tournament', 'decompose', 'code-review']) {
      expect(loadPreset(name, process.cwd()).preset.tensions?.enabled, name).toBe(true);
    }
  });

  it("maps a tournament's clashes on its round-0 answers before the first match, and hands the map to the synthesizer", async () => {
    const d = await demo('tournament');
    const map = d.tensions?.map;
    expect(map?.tensions.length).toBeGreaterThan(0);
    const stages = d.calls.map((c) => c.stage);
    const firstMatch = stages.indexOf('critique');
    expect(firstMatch).toBeGreaterThan(0);
    expect(stages.lastIndexOf('claims') === -1 || stages.lastIndexOf('claims') < firstMatch).toBe(true);
    expect(stages.indexOf('clash')).toBeGreaterThan(-1);
    expect(stages.indexOf('clash')).toBeLessThan(firstMatch);
    const synthesis = d.calls.find((c) => c.stage === 'synthesis')!;
    expect(JSON.stringify(synthesis.messages)).toContain('Tension map (');
    expect(renderCard(d, { ...plainStyle, columns: 200 })).toContain('TENSION MAP');
  });

  it("maps the clashes between a decomposition's parts before the reassembly, and hands the map to the decomposer", async () => {
    const d = await demo('decompose');
    expect(d.tensions?.map?.tensions.length).toBeGreaterThan(0);
    const stages = d.calls.map((c) => c.stage);
    const reassembly = stages.indexOf('reassembly');
    expect(stages.lastIndexOf('subanswer')).toBeLessThan(stages.indexOf('clash'));
    expect(stages.lastIndexOf('clash')).toBeLessThan(reassembly);
    expect(JSON.stringify(d.calls[reassembly]!.messages)).toContain('Tension map (');
    expect(renderMarkdown(d)).toContain('## Tension map');
  });

  it('maps the clashes between the reviews of a pipeline before the filter, and hands the map to the filter', async () => {
    const d = await demo('code-review');
    expect(d.tensions?.map?.agents.sort()).toEqual(['correctness', 'operations']);
    const stages = d.calls.map((c) => c.stage);
    const filter = stages.indexOf('filter');
    expect(stages.lastIndexOf('clash')).toBeLessThan(filter);
    expect(JSON.stringify(d.calls[filter]!.messages)).toContain('Tension map (');
  });
});
