import { afterEach, describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load-preset.js';
import type { DebateEvent } from '../../src/engine/events.js';
import type { ProtocolStep } from '../../src/engine/protocol-events.js';
import { runDebate } from '../../src/engine/run-debate.js';
import type { TensionUpdate } from '../../src/protocol/tensions.js';
import { demoResponder, simModelsFor } from '../../src/sim/demo.js';
import { type SimHandle, type SimRequest, startSimulator } from '../../src/sim/index.js';

const QUESTION = 'Should we migrate this tool from SQLite to Postgres now?';

let sim: SimHandle | null = null;
afterEach(async () => {
  await sim?.close();
  sim = null;
});

/** Runs `name` against the demo panel, keeping every call and every tension-map step. */
async function play(name: string, question = QUESTION, respond?: (demo: ReturnType<typeof demoResponder>) => ReturnType<typeof demoResponder>) {
  const { preset } = loadPreset(name);
  const demo = demoResponder(preset);
  sim = await startSimulator({ models: simModelsFor([preset]), respond: respond ? respond(demo) : demo });
  const calls: { stage: string; agentId: string | null; round: number; attempt: number; status: string; prompt: string }[] = [];
  const tensions: TensionUpdate[] = [];
  const steps: ProtocolStep[] = [];
  const result = await runDebate({
    question,
    preset,
    host: sim.url,
    listeners: [
      (e: DebateEvent) => {
        if (e.type === 'call.finished') calls.push({ stage: e.call.stage, agentId: e.call.agentId, round: e.call.round, attempt: e.call.attempt, status: e.call.status, prompt: e.call.messages.at(-1)!.content });
        if (e.type === 'tensions.update') tensions.push(e.update);
        if (e.type === 'protocol.step') steps.push(e.step);
      },
    ],
  });
  return { preset, result, calls, tensions, steps };
}

describe('the demo panel of each preset', () => {
  it("plays the devil's advocate without a repair: each round's advocate argues against the majority it was briefed on, disagrees with who holds it, and states every clash it is shown", async () => {
    const { preset, result, calls } = await play('devils-advocate');
    expect(result.status).toBe('completed');
    expect(calls.filter((c) => c.attempt > 0)).toEqual([]);
    expect(calls.every((c) => c.status === 'ok')).toBe(true);
    const critiqueRounds = result.rounds.filter((r) => r.round > 0);
    expect(critiqueRounds.length).toBeGreaterThan(0);
    for (const round of critiqueRounds) {
      const advocate = preset.agents[(round.round - 1) % preset.agents.length]!.id;
      const prompt = calls.find((c) => c.stage === 'critique' && c.agentId === advocate && c.round === round.round)!.prompt;
      const majority = /^The majority of the panel holds: (.*)$/m.exec(prompt)?.[1];
      expect(majority, `round ${round.round}'s advocate is briefed`).toBeDefined();
      const critique = round.turns.find((t) => t.agentId === advocate)!.critique!;
      // Its case is not the majority restated, nor any other agent's answer of that round.
      expect(critique.updatedPosition.startsWith(majority!.replace(/\.$/, ''))).toBe(false);
      for (const other of round.turns.filter((t) => t.agentId !== advocate)) expect(critique.updatedPosition).not.toBe(other.position);
      expect(critique.disagreements.length).toBeGreaterThan(0);
      for (const d of critique.disagreements) expect(d.on).toContain(majority!.replace(/\.$/, ''));
      const listed = [...prompt.matchAll(/^- (T\d+) \(/gm)].map((m) => m[1]);
      expect(listed.length).toBeGreaterThan(0);
      expect((critique.clashUpdates ?? []).map((u) => u.tension).sort()).toEqual([...listed].sort());
    }
  });

  it('gives each agent its own disagreement in round 1', async () => {
    const { result } = await play('tech-decision');
    const disagreements = result.rounds.find((r) => r.round === 1)!.turns.flatMap((t) => t.critique?.disagreements ?? []);
    expect(disagreements.length).toBeGreaterThan(1);
    expect(new Set(disagreements.map((d) => d.reason)).size).toBe(disagreements.length);
    expect(new Set(disagreements.map((d) => d.on)).size).toBe(disagreements.length);
  });

  it('gives each tournament match its own reasons', async () => {
    const tournament = await play('tournament');
    const verdicts = tournament.calls.filter((c) => c.stage === 'verdict');
    expect(verdicts.length).toBeGreaterThan(1);
    const reasons = tournament.steps.flatMap((s) => (s.kind === 'verdict' ? [s.reasons.join('; ')] : []));
    expect(reasons.length).toBe(verdicts.length);
    expect(new Set(reasons).size).toBe(reasons.length);
  });

  it("maps a code review's clashes on what its reviews say, not on another question's script", async () => {
    const { result, tensions } = await play('code-review', 'Review this change');
    expect(result.status).toBe('completed');
    const claims = tensions.find((u) => u.step === 'claims');
    const drawn = tensions.find((u) => u.step === 'map');
    expect(claims?.step === 'claims' && claims.claims.length).toBeGreaterThan(0);
    expect(drawn?.step === 'map' && drawn.result.status).toBe('ok');
    if (claims?.step !== 'claims' || drawn?.step !== 'map' || drawn.result.status !== 'ok') return;
    const map = drawn.result.map;
    const text = [
      ...claims.claims.map((c) => c.text),
      map.synthesis.headline,
      ...map.synthesis.majorFindings,
      ...map.synthesis.openQuestions,
      ...map.consensus.map((z) => z.claim),
      ...map.tensions.flatMap((t) => [t.claimA, t.claimB, t.recommendation]),
    ].join('\n');
    expect(text).not.toMatch(/SQLite|Postgres|write load/);
    // The reviews' own subjects: the migration both found, and the retry loop they read differently.
    expect(map.synthesis.headline).toContain('owner_id');
    expect(map.tensions.some((t) => /retry/.test(t.claimA) && /retry/.test(t.claimB))).toBe(true);
  });

  it("cites in the filter's report only observations of reviewers that answered, and says who did not", async () => {
    const { preset } = loadPreset('code-review');
    const operations = preset.agents.find((a) => a.id === 'operations')!.persona!.trim();
    // The operations reviewer's model answers nothing usable, as a budget skip leaves the filter without its review.
    const silenced = (demo: ReturnType<typeof demoResponder>) => (req: SimRequest) =>
      req.messages.find((m) => m.role === 'system')?.content.trim() === operations && JSON.stringify(req.format ?? {}).includes('"observations"') ? 'no review' : demo(req);
    const { result, calls, steps } = await play('code-review', 'Review this change', silenced);
    expect(result.status).toBe('completed');
    const filter = calls.find((c) => c.stage === 'filter')!;
    expect(filter.prompt).toContain('Without a usable reply:');
    const report = steps.find((s) => s.kind === 'report');
    if (report?.kind !== 'report') throw new Error('the filter wrote no report');
    expect(report.findings.length).toBeGreaterThan(0);
    for (const f of report.findings) {
      expect(f.sources.length).toBeGreaterThan(0);
      expect(f.raisedBy).not.toContain('editor');
      expect(f.raisedBy).not.toContain('operations');
    }
    expect(report.summary).toContain('operations');
    expect(report.summary).not.toMatch(/retry/);
  });

  it('answers the Delphi demo with its median and its unit, keeping the estimates outside the quartiles as dissent in their own words', async () => {
    const { result } = await play('delphi');
    const s = result.synthesis?.synthesis;
    expect(s).toBeDefined();
    expect(s!.recommendation).toMatch(/about 50 per second/);
    expect(s!.recommendation).toContain('writes per second');
    expect(s!.minorityPositions.length).toBeGreaterThan(0);
    for (const m of s!.minorityPositions) {
      const said = result.rounds.find((r) => r.round === m.round)?.turns.find((t) => t.agentId === m.agent)?.position;
      expect(said).toBe(m.argument);
    }
  });
});
