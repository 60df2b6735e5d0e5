import { afterEach, describe, expect, it } from 'vitest';
import { renderBenchMarkdown } from '../../src/bench/markdown.js';
import { buildReport } from '../../src/bench/report.js';
import { loadBenchData } from '../../src/store/bench.js';
import { agentOf, playersOf, reply } from '../helpers/panel.js';
import { type BenchSetup, items, scripts, setupBench } from './fixture.js';

let bench: BenchSetup | null = null;

afterEach(async () => {
  await bench?.close();
  bench = null;
});

const row = (b: BenchSetup, runId: string, condition: string) => loadBenchData(b.store, runId).trials.map((t) => t.results.find((r) => r.condition === condition && r.variant === '')!);

describe('benchmarking presets of every protocol', () => {
  it('runs a parallel preset as is, charging the parallel condition the whole run', async () => {
    bench = await setupBench({ preset: { protocol: { kind: 'parallel', callTimeoutSeconds: 10 } as never } });
    const runId = await bench.start();
    const data = loadBenchData(bench.store, runId);
    for (const t of data.trials) {
      const debate = bench.store.getDebate(t.debateId!);
      expect(debate.calls.filter((c) => c.attempt === 0).map((c) => c.stage)).toEqual(['opening', 'opening', 'opening', 'synthesis']);
      const parallel = t.results.find((r) => r.condition === 'parallel')!;
      expect(parallel.calls).toBe(debate.calls.length);
      expect(parallel.answer).toBe(t.results.find((r) => r.condition === 'debate-synth')!.answer);
      // No critique turn to match: the control is the round-0 vote, at the round-0 calls.
      const control = t.results.find((r) => r.condition === 'self-correction')!;
      expect(control).toMatchObject({ available: true, answer: t.results.find((r) => r.condition === 'round0-vote')!.answer, calls: debate.calls.filter((c) => c.stage === 'opening').length, callIds: [] });
    }
    expect(renderBenchMarkdown(buildReport(data))).toContain('protocol parallel');
  });

  it('runs a tournament preset as is, with the parallel condition built on its round 0, its synthesis bound by the panel', async () => {
    const syntheses: Record<string, any>[] = [];
    bench = await setupBench({
      preset: { protocol: { kind: 'tournament', callTimeoutSeconds: 10 } as never },
      onRequest: (req) => {
        const format = req.format as { properties?: Record<string, any> } | null;
        if (format?.properties && 'triggersToRevisit' in format.properties) syntheses.push(format.properties);
        return playersOf(req).length ? reply.verdict(playersOf(req)[0]!) : undefined;
      },
    });
    const runId = await bench.start();
    // Every synthesis, the parallel condition's included: panel ids as an enum, counts bounded by the panel, rounds by the rounds held.
    expect(syntheses.length).toBeGreaterThan(0);
    for (const p of syntheses) {
      expect(p.restsOn.items.enum).toHaveLength(3);
      expect(p.confidence.properties.converged).toMatchObject({ type: 'integer', minimum: 0, maximum: 3 });
      expect(p.minorityPositions.items.properties.round.maximum).toBeLessThanOrEqual(3);
    }
    for (const r of row(bench, runId, 'parallel')) {
      expect(r.available).toBe(true);
      expect(r.calls).toBe(4);
    }
    // The control revises round 0 once for every match critique an agent made: the debater calls of the tournament.
    for (const t of loadBenchData(bench.store, runId).trials) {
      const control = t.results.find((r) => r.condition === 'self-correction')!;
      expect(control.available).toBe(true);
      expect(control.calls).toBe(t.agentTurns);
      expect(control.callIds.length).toBe(bench.store.getDebate(t.debateId!).calls.filter((c) => c.stage === 'critique' && c.attempt === 0).length);
    }
    // Three agents: a bye and one match, then the final; two verdicts per item.
    for (const t of loadBenchData(bench.store, runId).trials) expect(bench.store.getDebate(t.debateId!).calls.filter((c) => c.stage === 'verdict')).toHaveLength(2);
    expect(renderBenchMarkdown(buildReport(loadBenchData(bench.store, runId)))).toContain('protocol tournament');
  });

  it('runs a decompose preset as is, and says the conditions built on independent answers do not apply', async () => {
    bench = await setupBench({
      preset: { protocol: { kind: 'decompose', callTimeoutSeconds: 10 } as never },
      onRequest: (req) => ('subQuestions' in ((req.format as { properties?: object } | null)?.properties ?? {}) ? reply.split([{ question: 'What is the sum?', dependsOn: [] }]) : undefined),
    });
    const runId = await bench.start();
    for (const condition of ['round0-vote', 'parallel']) {
      for (const r of row(bench, runId, condition)) expect(r).toMatchObject({ available: false, note: 'a decomposition has no independent answers' });
    }
    for (const r of row(bench, runId, 'debate-synth')) expect(r.calls).toBe(3);
    for (const r of row(bench, runId, 'self-correction')) expect(r).toMatchObject({ available: false, note: 'a decompose run has no round of independent answers to revise' });
  });

  it('runs a delphi preset as is, with the parallel condition built on its round 0', async () => {
    bench = await setupBench({
      preset: { protocol: { kind: 'delphi', maxRounds: 2, callTimeoutSeconds: 10 } as never },
      onRequest: (req) => {
        if (!('reason' in ((req.format as { properties?: object } | null)?.properties ?? {}))) return undefined;
        // Each agent gives its item's round-0 figure in every round: round 1 shows no narrowing, so the rounds stop there.
        const agent = agentOf(req)!;
        const item = Object.keys(scripts).find((id) => req.messages.at(-1)!.content.includes(items.find((i) => i.id === id)!.question))!;
        const figure = scripts[item]!.rounds[agent]![0] ?? '0';
        return JSON.stringify({ answer: `The answer is ${figure}`, estimate: Number(figure), reason: 'computed', confidence: 70 });
      },
    });
    const runId = await bench.start();
    let revised = 0;
    for (const t of loadBenchData(bench.store, runId).trials) {
      const debate = bench.store.getDebate(t.debateId!);
      expect(debate.exitReason).toBe('stable');
      const parallel = t.results.find((r) => r.condition === 'parallel')!;
      expect(parallel).toMatchObject({ available: true, calls: 4 });
      // The control revises round 0 once for every anonymous round an agent answered: the panel's calls after round 0.
      const control = t.results.find((r) => r.condition === 'self-correction')!;
      const revisions = debate.calls.filter((c) => c.stage === 'critique' && c.attempt === 0).length;
      revised += revisions;
      expect(control).toMatchObject({ available: true, calls: t.agentTurns });
      expect(control.callIds.length).toBe(revisions);
    }
    // Items whose panel agreed at round 0 stop there; the others ran an anonymous round to match.
    expect(revised).toBeGreaterThan(0);
    expect(renderBenchMarkdown(buildReport(loadBenchData(bench.store, runId)))).toContain('protocol delphi');
  });
});
