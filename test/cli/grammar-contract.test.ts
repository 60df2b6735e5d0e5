import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { CliIO } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import { type SimHandle, type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { capture } from '../helpers/cli.js';
import { agentOf, contractPanel, pipelineContractPanel, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';
import { arbitraryOf } from '../helpers/schema-arbitrary.js';

let sim: SimHandle | null = null;
afterEach(async () => {
  await sim?.close();
  sim = null;
});

function workspace() {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-grammar-'));
  const cli = async (args: string[]) => {
    const stdout = capture();
    const stderr = capture();
    const io: CliIO = { stdout, stderr, env: {}, cwd: dir };
    const code = await main(args, io);
    return { code, stdout: stdout.text, stderr: stderr.text };
  };
  return { dir, db: join(dir, 'record.db'), cli };
}

/**
 * A server that, like Ollama under `format`, can answer anything the schema sent allows: here, a
 * random instance of it, free strings of any unicode. Strings stay under a few dozen characters so a
 * reply fits its num_predict: a reply cut off by the token budget is not JSON, a bound the grammar
 * does not express (the property tests cover long strings).
 */
function arbitraryServer(debate: () => number) {
  return (req: SimRequest): SimReply => {
    if (!req.format || typeof req.format !== 'object') return {};
    const seed = createHash('sha256').update(`${debate()}\u0000${JSON.stringify(req.messages)}\u0000${req.model}`).digest().readInt32BE(0);
    const arbitrary = arbitraryOf(req.format as Record<string, unknown>, { long: false });
    // A position with no word in it is rejected by design (test/protocol/quality.test.ts), and two in one
    // round 0 end the debate there; draw again for those, so every debate meets the stages after round 0.
    for (let draw = 0; ; draw++) {
      const [value] = fc.sample(arbitrary, { seed: seed + draw, numRuns: 1 });
      const position = (value as { position?: unknown; updatedPosition?: unknown } | null)?.position ?? (value as { updatedPosition?: unknown } | null)?.updatedPosition;
      if (typeof position !== 'string' || /[\p{L}\p{N}]/u.test(position) || draw >= 20) return JSON.stringify(value);
    }
  };
}

describe('the grammar is the contract', () => {
  it('completes debates with a tension map and a vote on arbitrary schema-valid replies, no repair, one call per turn plus any quality retry, every answer rated', async () => {
    const { dir, db, cli } = workspace();
    const preset = contractPanel();
    const presetFile = join(dir, 'panel.json');
    writeFileSync(presetFile, JSON.stringify(preset));
    let debate = 0;
    sim = await startSimulator({ models: simModels(preset), respond: arbitraryServer(() => debate) });

    const actions = new Set<string>();
    for (debate = 0; debate < 4; debate++) {
      const r = await cli(['run', `Should we adopt plan ${debate}?`, '--preset', presetFile, '--host', sim.url, '--db', db, '--quiet', '--json']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const id = (JSON.parse(r.stdout) as { id: string }).id;
      const store = openStore(db);
      try {
        const d = store.getDebate(id);
        expect(d.status).toBe('completed');
        // No repair (odd attempts) and no failed call: a quality retry is attempt 2.
        expect(d.calls.filter((c) => c.attempt % 2 === 1 || c.status !== 'ok').map((c) => [c.stage, c.agentId, c.status, c.validationError ?? c.error, c.raw.slice(0, 300)])).toEqual([]);
        const rounds = d.roundsCompleted + 1;
        const ratings = d.quality ?? [];
        const count = (stage: string, agent?: string) => d.calls.filter((c) => c.stage === stage && (agent === undefined || c.agentId === agent)).length;
        const retried = (stage: string, agent: string) => ratings.filter((q) => q.stage === stage && q.agentId === agent && q.try === 1).length;
        for (const agent of ['alpha', 'beta', 'gamma']) {
          expect(count('opening', agent)).toBe(1 + retried('opening', agent));
          expect(count('critique', agent)).toBe(rounds - 1 + retried('critique', agent));
        }
        // Every answer is rated; a rejected one is a failed turn that says why.
        expect(ratings.filter((q) => q.try === 0)).toHaveLength(3 * rounds);
        for (const q of ratings) actions.add(q.action);
        for (const t of d.turns) {
          const final = ratings.filter((q) => q.round === t.round && q.agentId === t.agentId).at(-1);
          expect(final?.action === 'REJECT').toBe(t.status !== 'ok');
          if (t.status !== 'ok') expect(t.error).toMatch(/^rejected by the quality check \(score \d+\)/);
        }
        expect(count('judge')).toBe(rounds);
        expect(count('synthesis')).toBe(1);
        expect(d.synthesis?.status).toBe('ok');
        // A map needs claims from two agents: rejected answers make no claims. A debate reads them from round 0.
        const opening = d.turns.filter((t) => t.round === 0);
        if (opening.filter((t) => t.status === 'ok').length >= 2) expect(d.tensions?.status).toBe('ok');
        else expect(d.tensions?.error).toMatch(/a map needs two or more/);
        expect(d.voting?.iterations[0]?.ballots.every((b) => b.parseStatus === 'ok')).toBe(true);
      } finally {
        store.close();
      }
    }
    // Arbitrary text is mostly poor text: the ratings cover more than a pass.
    expect(actions.size).toBeGreaterThan(1);
  }, 60_000);

  it('completes review pipelines, in both filter modes, on arbitrary schema-valid replies, with no repair, one call per role plus any quality retry, every result rated', async () => {
    const { dir, db, cli } = workspace();
    let debate = 0;
    for (const mode of ['list', 'artifact'] as const) {
      const preset = pipelineContractPanel(mode);
      const presetFile = join(dir, `pipeline-${mode}.json`);
      writeFileSync(presetFile, JSON.stringify(preset));
      sim = await startSimulator({ models: simModels(preset), respond: arbitraryServer(() => debate) });
      for (let i = 0; i < 3; i++, debate++) {
        const r = await cli(['run', `Review change ${debate}`, '--preset', presetFile, '--host', sim.url, '--db', db, '--quiet', '--json']);
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        const id = (JSON.parse(r.stdout) as { id: string }).id;
        const store = openStore(db);
        try {
          const d = store.getDebate(id);
          expect(d.status).toBe('completed');
          // No repair (odd attempts) and no failed call: a quality retry is attempt 2.
          expect(d.calls.filter((c) => c.attempt % 2 === 1 || c.status !== 'ok').map((c) => [c.stage, c.agentId, c.validationError ?? c.error])).toEqual([]);
          const ratings = d.quality ?? [];
          const roles = ['plan:lead', 'observe:ana', 'review:r1', 'review:r2'];
          // One call per role, plus its quality retry if it had one; the filter's report is not rated.
          for (const role of roles) {
            const [stage, agent] = role.split(':');
            const retried = ratings.filter((q) => q.stage === stage && q.agentId === agent && q.try === 1).length;
            expect(d.calls.filter((c) => c.stage === stage && c.agentId === agent)).toHaveLength(1 + retried);
          }
          expect(d.calls.filter((c) => c.stage === 'filter').map((c) => c.agentId)).toEqual(['filt']);
          expect(ratings.filter((q) => q.try === 0).map((q) => `${q.stage}:${q.agentId}`).sort()).toEqual([...roles].sort());
        } finally {
          store.close();
        }
        const card = await cli(['show', id, '--db', db]);
        expect(card.code).toBe(0);
        expect(card.stdout).toContain('## Review report');
      }
      await sim.close();
      sim = null;
    }
  });

  it('keeps a review whose filter failed, lists its observations on the card, and says how to go on', async () => {
    const { dir, db, cli } = workspace();
    const preset = pipelineContractPanel();
    const presetFile = join(dir, 'pipeline.json');
    writeFileSync(presetFile, JSON.stringify(preset));
    const panel = scriptedResponder([0.5], (req) => (stageOf(req) === 'filter' ? { error: 'model runner has unexpectedly stopped', status: 500 } : undefined));
    sim = await startSimulator({ models: simModels(preset), respond: panel.respond });
    const r = await cli(['run', 'Review this change', '--preset', presetFile, '--host', sim.url, '--db', db, '--quiet']);
    expect(r.code).toBe(5);
    expect(r.stdout).toContain('No report: ');
    expect(r.stdout).toContain('r1 observes a review point');
    expect(r.stderr).toMatch(/ran its plan and reviews, but the filter failed[\s\S]*conclave show/);
    expect(r.stderr).not.toContain('conclave synthesize');
    const id = /debate (\S+) · unsynthesized/.exec(r.stdout)?.[1];
    const again = await cli(['synthesize', id!, '--host', sim.url, '--db', db]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('is a review pipeline');
  });

  it('keeps a debate whose synthesis failed, shows every final position on the card, and `synthesize` finishes it later', async () => {
    const { dir, db, cli } = workspace();
    const preset = testPreset(['a', 'b', 'c']);
    const presetFile = join(dir, 'panel.json');
    writeFileSync(presetFile, JSON.stringify(preset));
    let synthesizerUp = false;
    const panel = scriptedResponder([0.3, 0.62], (req) =>
      stageOf(req) === 'synthesis' && !synthesizerUp ? { error: 'model runner has unexpectedly stopped', status: 500 } : undefined,
    );
    sim = await startSimulator({ models: [...simModels(preset), { name: 'other:3b', contextLength: 32768 }], respond: panel.respond });

    const first = await cli(['run', 'Should we do A?', '--preset', presetFile, '--host', sim.url, '--db', db, '--quiet']);
    expect(first.code).toBe(5);
    expect(first.stdout).toContain('No synthesis: ');
    expect(first.stdout).toContain('model runner has unexpectedly stopped');
    expect(first.stdout).toContain('FINAL POSITIONS (no synthesis)');
    for (const agent of ['a', 'b', 'c']) expect(first.stdout).toMatch(new RegExp(`${agent} \\(round 3, confidence 0\\.70\\)\\n\\s+${agent} now says A`));
    expect(first.stdout).toContain('LAST JUDGE SCORE: 0.62 after round 3');
    expect(first.stderr).toMatch(/ran all its rounds, but the synthesis failed[\s\S]*conclave synthesize/);
    const id = /debate (\S+) · unsynthesized/.exec(first.stdout)?.[1];
    expect(id).toBeDefined();

    const asJson = await cli(['run', 'Should we do B?', '--preset', presetFile, '--host', sim.url, '--db', db, '--quiet', '--json']);
    expect(asJson.code).toBe(5);
    expect(JSON.parse(asJson.stdout)).toMatchObject({ status: 'unsynthesized', synthesis: { status: 'failed' }, synthesisAttempts: [{ attempt: 1, status: 'failed' }] });

    const listed = await cli(['list', '--db', db]);
    expect(listed.stdout).toMatch(new RegExp(`${id}\\s+\\S+ \\S+\\s+unsynthesized`));
    expect((await cli(['list', '--db', db, '--status', 'unsynthesized'])).stdout).toContain(id!);

    // Still down: a second attempt, on the host the debate ran on (no --host), fails, is recorded, and the debate stays unsynthesized.
    const again = await cli(['synthesize', id!, '--db', db]);
    expect(again.code).toBe(5);
    expect(again.stderr).toContain(`on ${sim.url}`);

    synthesizerUp = true;
    const before = panel.seen.length;
    const fixed = await cli(['synthesize', id!, '--host', sim.url, '--db', db, '--model', 'other:3b']);
    expect(fixed.code).toBe(0);
    expect(fixed.stdout).toContain('RECOMMENDATION');
    expect(fixed.stdout).toMatch(/completed/);
    // Only the synthesis ran again: no debater or judge was called.
    const calls = panel.seen.slice(before);
    expect(calls.map((r) => [stageOf(r), r.model])).toEqual([['synthesis', 'other:3b']]);
    expect(calls[0]!.messages).toEqual(panel.seen.find((r) => stageOf(r) === 'synthesis')!.messages);
    expect(agentOf(calls[0]!)).toBeNull();

    const store = openStore(db);
    try {
      const d = store.getDebate(id!);
      expect(d.status).toBe('completed');
      expect(d.synthesis?.status).toBe('ok');
      expect(d.synthesisAttempts?.map((a) => [a.attempt, a.model, a.status])).toEqual([
        [1, 'synth:1b', 'failed'],
        [2, 'synth:1b', 'failed'],
        [3, 'other:3b', 'ok'],
      ]);
      expect(d.turns.filter((t) => t.round === 3)).toHaveLength(3);
    } finally {
      store.close();
    }
    expect((await cli(['list', '--db', db, '--status', 'completed'])).stdout).toContain(id!);
    // `show` names the synthesizer that wrote the synthesis, not the preset's.
    const shown = await cli(['show', id!, '--db', db]);
    expect(shown.stdout).toContain('synthesizer: `other:3b` (the preset names `synth:1b`)');
    // Each attempt extends the hash chain and seals the record again.
    const verified = await cli(['verify', id!, '--db', db]);
    expect([verified.code, verified.stdout]).toEqual([0, expect.stringContaining(`${id}  sealed`)]);
  });
});
