import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsDoc } from '../../src/events/doc.js';
import { protocolKinds } from '../../src/config/preset-schema.js';
import { type ConclaveEvent, conclaveEvent } from '../../src/events/schema.js';
import { packagePath } from '../../src/package-root.js';
import { capture, runCli } from '../helpers/cli.js';
import { eventsWriter } from '../../src/events/writer.js';
import { loadPreset } from '../../src/config/load-preset.js';
import { demoResponder, simModelsFor } from '../../src/sim/demo.js';
import { startSimulator } from '../../src/sim/index.js';
import { items, setupBench } from '../bench/fixture.js';
import { writeFileSync } from 'node:fs';

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-events-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Every stdout line, each checked against the schema; throws on the first that does not validate. */
function linesOf(stdout: string): ConclaveEvent[] {
  const lines = stdout.split('\n');
  expect(lines.pop()).toBe('');
  return lines.map((line, i) => {
    const parsed = conclaveEvent.safeParse(JSON.parse(line));
    if (!parsed.success) throw new Error(`line ${i + 1} does not validate: ${parsed.error.message}\n${line}`);
    return parsed.data;
  });
}

describe('docs/events.md', () => {
  it('names every protocol a plan line can carry', () => {
    const row = readFileSync(packagePath('docs', 'events.md'), 'utf8').split('\n').find((l) => l.startsWith('| `protocol` |'))!;
    for (const kind of [...protocolKinds, 'auto']) expect(row).toContain(kind);
  });

  it('is what the zod types of the events generate', () => {
    expect(readFileSync(packagePath('docs', 'events.md'), 'utf8')).toBe(eventsDoc());
  });
});

describe('--events', () => {
  it('writes C1 controls, direction controls and line separators as \\u escapes, which parse back to the exact text', () => {
    const out = capture();
    const writer = eventsWriter(out, { now: () => 1, debateId: 'd1' });
    // A C1 CSI (clear the screen), NEL, an override and an isolate, the line and paragraph separators, an ESC CSI.
    const text = 'a\u009b2J b\u0085c \u202etpecca\u202c \u2066iso\u2069 line\u2028next\u2029para \u001b[31mred';
    writer({ type: 'warning', message: text, at: 1 });
    writer.end('failed', 3, text);
    expect(out.text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/);
    expect(out.text).toContain('a\\u009b2J b\\u0085c \\u202etpecca');
    const events = linesOf(out.text);
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({ type: 'warning', debateId: 'd1', seq: 1, message: text });
    expect(events[1]).toMatchObject({ type: 'end', status: 'failed', exitCode: 3, error: text });
  });

  it('prints a whole demo as lines that all validate, streamed text before each call ends, and the end line last', async () => {
    const db = join(dir, 'demo.db');
    const r = await runCli(['demo', '--events', '--db', db, '--token-ms', '4'], dir);
    expect(r.code).toBe(0);
    const events = linesOf(r.stdout);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events[0]?.type).toBe('plan');
    const end = events.at(-1);
    expect(end).toMatchObject({ type: 'end', status: 'completed', exitCode: 0, error: null });
    expect(events.filter((e) => e.type === 'end')).toHaveLength(1);
    const id = events[0]!.debateId!;
    expect(events.every((e) => e.debateId === id)).toBe(true);
    // No card on stdout: every line was an event.
    expect(r.stdout).not.toContain('RECOMMENDATION');

    const key = (e: { stage: string; round: number; agentId: string }): string => `${e.stage}/${e.round}/${e.agentId}`;
    const finishedAt = new Map<string, number>();
    events.forEach((e, i) => {
      if (e.type === 'call.finished') finishedAt.set(key(e), i);
    });
    const deltas = events.flatMap((e, i) => (e.type === 'call.delta' ? [{ e, i }] : []));
    // Each delta comes while its call is in flight: after its start, before its finish.
    for (const { e, i } of deltas) {
      const started = events.findLastIndex((x, j) => j < i && x.type === 'call.started' && key(x) === key(e));
      expect(started).toBeGreaterThanOrEqual(0);
      expect(events.slice(started, i).some((x) => x.type === 'call.finished' && key(x) === key(e))).toBe(false);
    }
    // The openings' text streams, and is the start of the position each agent then holds.
    const answers = events.filter((e): e is Extract<ConclaveEvent, { type: 'answer' }> => e.type === 'answer' && e.round === 0);
    expect(answers.length).toBeGreaterThan(0);
    for (const a of answers) {
      const streamed = deltas.filter(({ e }) => e.type === 'call.delta' && e.stage === 'opening' && e.agentId === a.agentId && e.text !== '');
      expect(streamed.length).toBeGreaterThan(0);
      const last = streamed.at(-1)!.e as Extract<ConclaveEvent, { type: 'call.delta' }>;
      expect(last.field).toBe('position');
      expect(a.position?.startsWith(last.text)).toBe(true);
    }
    // The synthesis streams its recommendation, which the synthesis line then carries whole.
    const synthesis = events.find((e): e is Extract<ConclaveEvent, { type: 'synthesis' }> => e.type === 'synthesis');
    expect(synthesis?.status).toBe('ok');
    const written = deltas.map(({ e }) => e as Extract<ConclaveEvent, { type: 'call.delta' }>).filter((e) => e.stage === 'synthesis' && e.field === 'recommendation' && e.text !== '');
    expect(written.length).toBeGreaterThan(0);
    expect(synthesis?.recommendation?.startsWith(written.at(-1)!.text)).toBe(true);
    // What the terminal view and the recorder saw: judge scores with stances, and the stop.
    expect(events.some((e) => e.type === 'judge' && e.status === 'ok' && e.stances.length > 0)).toBe(true);
    expect(events.some((e) => e.type === 'stop')).toBe(true);
  }, 120_000);

  // Every shipped preset's demo: each protocol, the optional stages, and the demos that print more than a card.
  it.each(['anti-conformity', 'cluster-vote', 'code-review', 'decompose', 'delphi', 'devils-advocate', 'oxford', 'parallel', 'tension-map', 'tournament'])(
    'prints nothing but event lines on stdout in the %s demo, ending with the end line',
    async (preset) => {
      const r = await runCli(['demo', '--preset', preset, '--events', '--db', join(dir, `${preset}.db`), '--token-ms', '0'], dir);
      expect(r.code).toBe(0);
      const events = linesOf(r.stdout);
      expect(events.filter((e) => e.type === 'end')).toHaveLength(1);
      expect(events.at(-1)).toMatchObject({ type: 'end', status: 'completed', exitCode: 0 });
    },
    120_000,
  );

  it('prints a new synthesis of a stored debate: its call streaming, the synthesis, and the end', async () => {
    const db = join(dir, 'demo.db');
    const { preset } = loadPreset('tech-decision', dir);
    const sim = await startSimulator({ port: 0, models: simModelsFor([preset]), respond: demoResponder(preset), tokenMs: 4 });
    try {
      const listed = await runCli(['list', '--json', '--db', db], dir);
      const id = (JSON.parse(listed.stdout) as { id: string }[])[0]!.id;
      const r = await runCli(['synthesize', id, '--events', '--host', sim.url, '--db', db], dir);
      expect(r.code).toBe(0);
      const events = linesOf(r.stdout);
      expect(events.every((e) => e.debateId === id)).toBe(true);
      expect(events.map((e) => e.type).filter((t) => t !== 'call.delta')).toEqual(['call.started', 'call.finished', 'synthesis', 'end']);
      expect(events.some((e) => e.type === 'call.delta' && e.field === 'recommendation' && e.text !== '')).toBe(true);
      expect(events.at(-1)).toMatchObject({ type: 'end', status: 'completed', exitCode: 0 });
    } finally {
      await sim.close();
    }
  }, 120_000);

  it("prints a bench's debates, each line naming its debate, and one end line for the whole run", async () => {
    const bench = await setupBench();
    try {
      writeFileSync(join(dir, 'panel.json'), JSON.stringify(bench.preset));
      writeFileSync(join(dir, 'suite.jsonl'), `${items.slice(0, 2).map((i) => JSON.stringify(i)).join('\n')}\n`);
      const r = await runCli(['bench', '--suite', 'suite.jsonl', '--preset', 'panel.json', '--host', bench.sim.url, '--db', join(dir, 'bench.db'), '--events', '--concurrency', '2'], dir);
      expect(r.code).toBe(0);
      const events = linesOf(r.stdout);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const plans = events.filter((e) => e.type === 'plan');
      expect(plans).toHaveLength(2);
      const ids = new Set(plans.map((e) => e.debateId));
      // Every line but the last belongs to one of the item debates.
      expect(events.slice(0, -1).every((e) => ids.has(e.debateId))).toBe(true);
      expect(events.at(-1)).toMatchObject({ type: 'end', debateId: null, status: 'completed', exitCode: 0 });
    } finally {
      await bench.close();
    }
  }, 120_000);

  it('is refused with --json', async () => {
    const r = await runCli(['demo', '--events', '--json', '--db', join(dir, 'both.db')], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/events.*json|json.*events/);
    expect(r.stdout).toBe('');
  });

  it.each([
    ['an unknown preset', ['--preset', 'no-such-preset']],
    ['a token budget below the minimum', ['--token-budget', '50']],
    ['a missing attachment', ['--attach', 'no-such-file.txt']],
  ])('ends the demo with the end line and the exit code when it is refused for %s', async (_, extra) => {
    const r = await runCli(['demo', '--events', '--db', join(dir, 'refused.db'), ...extra], dir);
    expect(r.code).toBe(2);
    const events = linesOf(r.stdout);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'end', status: 'failed', exitCode: 2, debateId: null });
  });

  it('ends with the end line and the exit code when the command line itself is refused', async () => {
    const r = await runCli(['run', 'Which?', '--events', '--db', join(dir, 'none.db')], dir);
    expect(r.code).toBe(2);
    const events = linesOf(r.stdout);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'end', status: 'failed', exitCode: 2, debateId: null });
    expect(r.stderr).toMatch(/Missing required argument: preset/);
  });

  it('ends with the end line and the exit code when the run cannot start', async () => {
    const r = await runCli(['run', 'Which?', '--preset', 'no-such-preset', '--events', '--db', join(dir, 'none.db')], dir);
    expect(r.code).not.toBe(0);
    const events = linesOf(r.stdout);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'end', status: 'failed', exitCode: r.code, debateId: null });
  });
});
