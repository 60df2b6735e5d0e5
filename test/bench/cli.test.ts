import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchReport } from '../../src/bench/report.js';
import { type BenchSetup, items, setupBench } from './fixture.js';
import { runCli } from '../helpers/cli.js';

let dir = '';
let db = '';
let bench: BenchSetup;

const cli = (args: string[]) => runCli(args, dir, 120);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-bench-cli-'));
  db = join(dir, 'record.db');
  bench = await setupBench();
  writeFileSync(join(dir, 'panel.json'), JSON.stringify(bench.preset));
  writeFileSync(join(dir, 'suite.jsonl'), `${items.map((i) => JSON.stringify(i)).join('\n')}\n`);
});

afterAll(async () => {
  await bench?.close();
});

describe('conclave bench', () => {
  const runs: string[] = [];

  it('runs a suite, shows plain progress lines on a non-terminal stderr, and prints the accuracy table', async () => {
    const r = await cli(['bench', '--suite', 'suite.jsonl', '--preset', 'panel.json', '--host', bench.sim.url, '--db', db]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/debate \+ majority\s+75\.0%\s+\[25\.0, 100\.0\]\s+3\/4/);
    expect(r.stdout).toMatch(/debate \+ cluster vote\s+unavailable/);
    expect(r.stdout).toMatch(/self-correction \(no peers\)\s+75\.0%\s+\[25\.0, 100\.0\]\s+3\/4\s+6\.0/);
    expect(r.stdout).toMatch(/test-panel: debate \+ majority − self-correction \(no peers\) = 0\.0 pp \(95% CI \[.*\], 4 items\)/);
    expect(r.stderr).toContain('bench: 4/4 (100%)');
    expect(r.stderr).toContain('ETA');
    expect(r.stderr).not.toContain('\u001b[');
    const id = /Bench run (b\d{6}-\d{6}-[0-9a-f]{4})/.exec(r.stderr)?.[1];
    expect(id).toBeDefined();
    // The printed command names this database, so it works as printed.
    expect(r.stderr).toContain(`Full report: \`conclave bench report ${id} --db ${db} --format html --out report.html\``);
    runs.push(id!);
  });

  it('exits 7 with --fail-under when a condition scores below the figure, naming it, and 0 when every gated condition clears it', async () => {
    // A database of its own: the runs below are not the ones the other tests count.
    const gated = (...gate: string[]) => cli(['bench', '--suite', 'suite.jsonl', '--preset', 'panel.json', '--host', bench.sim.url, '--db', join(dir, 'gate.db'), '--quiet', ...gate.flatMap((g) => ['--fail-under', g])]);
    const below = await gated('debate-vote=0.8', 'self-correction=0.8');
    expect(below.code).toBe(7);
    expect(below.stderr).toContain('bench: --fail-under failed (exit 7):');
    expect(below.stderr).toMatch(/test-panel · debate \+ majority: accuracy 75\.0% \(3\/4\) is below 80\.0%\./);
    expect(below.stderr).toMatch(/test-panel · self-correction \(no peers\): accuracy 75\.0% \(3\/4\) is below 80\.0%\./);
    const above = await gated('debate-vote=75%');
    expect([above.code, above.stderr]).toEqual([0, '']);
    // A gated condition the run cannot measure fails the gate rather than passing on nothing.
    const unmeasured = await gated('debate-vote=0.5', 'cluster-vote=0.1');
    expect(unmeasured.code).toBe(7);
    expect(unmeasured.stderr).toMatch(/cluster vote: not measured/);
    expect(unmeasured.stderr).not.toContain('debate + majority');
  });

  it("runs on --host even when a preset names its own hosts, which are never contacted, and says so", async () => {
    let contacted = 0;
    const other = createServer((_req, res) => {
      contacted++;
      res.writeHead(500).end();
    });
    await new Promise<void>((done) => other.listen(0, '127.0.0.1', done));
    try {
      const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
      writeFileSync(join(dir, 'hosted.json'), JSON.stringify({ ...bench.preset, hosts: [{ url }] }));
      const r = await cli(['bench', '--suite', 'suite.jsonl', '--preset', 'hosted.json', '--host', bench.sim.url, '--db', join(dir, 'hosted.db'), '--limit', '1', '--quiet']);
      expect([r.code, r.stderr]).toEqual([0, expect.stringContaining('hosted.json names its own hosts; the bench runs every preset on its own (--host), and those are not contacted.')]);
      expect(r.stdout).toMatch(/debate \+ majority\s+\d/);
      expect(contacted).toBe(0);
    } finally {
      other.close();
    }
  });

  it('stores no run when its host does not answer, and tells a resume whose stored host is down to name another with --host', async () => {
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const down = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((done) => closed.close(() => done()));
    const downDb = join(dir, 'down.db');
    const r = await cli(['bench', '--suite', 'suite.jsonl', '--preset', 'panel.json', '--host', down, '--db', downDb, '--limit', '1', '--quiet']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`Cannot reach Ollama at ${down}`);
    expect((await cli(['bench', 'list', '--db', downDb])).stdout).not.toMatch(/b\d{6}-\d{6}/);
    // A run stored on a server that is down since: OLLAMA_HOST is not read on a resume, so the way on is named.
    const { openStore } = await import('../../src/store/open.js');
    const { createRun } = await import('../../src/bench/runner.js');
    const store = openStore(downDb);
    const runId = createRun({ store, suite: 'fixture', items, presets: [{ preset: bench.preset, source: 'test' }], host: down, limit: 1 });
    store.close();
    const { main } = await import('../../src/cli/main.js');
    const { capture } = await import('../helpers/cli.js');
    const stdout = capture();
    const stderr = capture();
    const code = await main(['bench', '--resume', runId, '--db', downDb, '--quiet'], { stdout, stderr, env: { OLLAMA_HOST: bench.sim.url }, cwd: dir });
    expect(code).toBe(3);
    expect(stderr.text).toContain(`the server bench run ${runId} was stored with`);
    expect(stderr.text).toContain(`conclave bench --resume ${runId} --host URL`);
  });

  it('estimates a bench with --dry-run per preset, calling no model and recording nothing', async () => {
    const before = bench.seen.length;
    const fresh = join(dir, 'dry.db');
    const r = await cli(['bench', '--suite', 'suite.jsonl', '--preset', 'panel.json', '--host', bench.sim.url, '--db', fresh, '--dry-run']);
    expect(r.code).toBe(0);
    expect(existsSync(fresh)).toBe(false);
    expect(r.stdout).toContain(`Dry run of a bench of ${items.length} items: no model was called and nothing was recorded. Every figure below is an estimate`);
    expect(r.stdout).toMatch(/test-panel\s+debate\s+[\d,]+\s+~[\d,]+/);
    const json = JSON.parse((await cli(['bench', '--suite', 'suite.jsonl', '--preset', 'panel.json', '--host', bench.sim.url, '--db', fresh, '--dry-run', '--json', '--limit', '1'])).stdout) as { estimate: boolean; presets: { items: number; calls: number }[] };
    expect(json.estimate).toBe(true);
    expect(json.presets[0]!.items).toBe(1);
    // One item: the debate's calls plus each agent alone, self-consistency, the self-correction revisions (one per critique turn) and a parallel synthesis.
    const n = bench.preset.agents.length;
    const rounds = 1 + bench.preset.protocol.maxRounds;
    expect(json.presets[0]!.calls).toBe(n * rounds + rounds + 1 + n + n * rounds + n * (rounds - 1) + 1);
    expect(existsSync(fresh)).toBe(false);
    expect(bench.seen.length).toBe(before);
  });

  it('refuses a --fail-under it cannot read before any call, with the nearest condition', async () => {
    const typo = await cli(['bench', '--suite', 'suite.jsonl', '--preset', 'panel.json', '--host', 'http://127.0.0.1:9', '--db', join(dir, 'gate.db'), '--fail-under', 'debate-synt=0.8']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('--fail-under names the condition `debate-synt`, which the bench does not have. Did you mean `debate-synth`?');
    const figure = await cli(['bench', '--suite', 'suite.jsonl', '--preset', 'panel.json', '--host', 'http://127.0.0.1:9', '--db', join(dir, 'gate.db'), '--fail-under', 'sc=1.5']);
    expect(figure.code).toBe(2);
    expect(figure.stderr).toContain('--fail-under sc needs an accuracy from 0 to 1 (or 0% to 100%); got `1.5`.');
  });

  it('writes the report as Markdown, JSON and a self-contained HTML page', async () => {
    const md = await cli(['bench', 'report', runs[0]!, '--db', db]);
    expect(md.code).toBe(0);
    expect(md.stdout).toContain('## Accuracy by condition');
    expect(md.stdout).toContain('| test-panel | agents | 5 | 2 | 3 | 2 | +1 |');

    const json = await cli(['bench', 'report', runs[0]!, '--db', db, '--format', 'json']);
    const report = JSON.parse(json.stdout) as BenchReport;
    expect(report.format).toBe('conclave-bench-report');
    expect(report.version).toBe(1);
    expect(report.earlyExit[0]!.wrongExits).toBe(1);

    const html = await cli(['bench', 'report', runs[0]!.slice(0, 12), '--db', db, '--format', 'html', '--out', 'report.html']);
    expect(html.code).toBe(0);
    const page = readFileSync(join(dir, 'report.html'), 'utf8');
    expect(page).toMatch(/^<!doctype html>/);
    // Accuracy by condition, accuracy by round, and the re-scored rules against their tokens.
    expect(page.match(/<svg /g)).toHaveLength(3);
    // Offline: no scripts, no external stylesheets, images or fonts.
    expect(page).not.toMatch(/<script|<link|src=|href=|@import|url\(/i);
    expect(page).toContain('debate + synthesizer');
  });

  it('compares two runs on their shared items', async () => {
    const second = await cli(['bench', '--suite', 'suite.jsonl', '--preset', 'panel.json', '--host', bench.sim.url, '--db', db, '--limit', '2', '--quiet']);
    expect(second.code).toBe(0);
    expect(second.stderr).toBe('');
    const list = await cli(['bench', 'list', '--db', db, '--json']);
    const ids = (JSON.parse(list.stdout) as { id: string; trialsDone: number }[]).map((r) => r.id);
    expect(ids).toHaveLength(2);
    const other = ids.find((id) => id !== runs[0])!;
    const r = await cli(['bench', 'compare', runs[0]!, other, '--db', db]);
    expect(r.code).toBe(0);
    // The same suite at a different --limit: its shared items are compared, and it says so.
    expect(r.stdout).toMatch(/Both ran suite `suite\.jsonl`, A on \d+ items and B on 2 \(a different --limit\)/);
    expect(r.stdout).not.toContain('The suites differ');
    expect(r.stdout).toMatch(/\| test-panel \| debate \+ majority \| 100\.0% \| 100\.0% \| 0\.0 pp \| \[0\.0, 0\.0\] \| 2 \|/);
  });

  it('says a finished run cannot be resumed, and an unknown run does not exist', async () => {
    const done = await cli(['bench', '--resume', runs[0]!, '--db', db]);
    expect(done.code).toBe(2);
    expect(done.stderr).toContain('has already finished (4 of 4 items done)');
    const unknown = await cli(['bench', '--resume', 'b999999-nope', '--db', db]);
    expect(unknown.code).toBe(4);
    expect(unknown.stderr).toContain('There is no bench run `b999999-nope`');
    expect(unknown.stderr).toContain('conclave bench list');
  });

  it('rejects a malformed suite line at load time, naming the file, the line and the field', async () => {
    writeFileSync(join(dir, 'bad.jsonl'), '{"id":"x1","question":"2+2?","answer":"4","kind":"number"}\n\n{"id":"x2","question":"3+3?","answer":"six","kind":"number"}\n');
    const r = await cli(['bench', '--suite', 'bad.jsonl', '--preset', 'panel.json', '--host', bench.sim.url, '--db', db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('bad.jsonl line 3: field `answer`: "six" is not a number');
    writeFileSync(join(dir, 'bad2.jsonl'), '{"id":"x1","question":"2+2?","answer":"4","kind":"number"\n');
    const broken = await cli(['bench', '--suite', 'bad2.jsonl', '--preset', 'panel.json', '--db', db]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('bad2.jsonl line 1: not valid JSON');
    const runsAfter = JSON.parse((await cli(['bench', 'list', '--db', db, '--json'])).stdout) as unknown[];
    expect(runsAfter).toHaveLength(2);
  });

  it('asks for a suite and a preset, and refuses to mix --resume with them', async () => {
    const noPreset = await cli(['bench', '--suite', 'arithmetic', '--db', db]);
    expect(noPreset.code).toBe(2);
    expect(noPreset.stderr).toContain('Name at least one preset with --preset');
    const mixed = await cli(['bench', '--resume', runs[0]!, '--suite', 'arithmetic', '--db', db]);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain('cannot be combined');
  });

  it('imports a GSM8K file into a suite that bench reads', async () => {
    writeFileSync(join(dir, 'gsm.jsonl'), `${JSON.stringify({ question: 'Tom has 3 apples and buys 1,200 more. How many?', answer: 'He has 3+1200=1203\n#### 1,203' })}\n`);
    const r = await cli(['bench', 'import', 'gsm8k', 'gsm.jsonl', '--out', 'gsm-suite.jsonl']);
    expect(r.code).toBe(0);
    const lines = readFileSync(join(dir, 'gsm-suite.jsonl'), 'utf8').trim().split('\n');
    expect(JSON.parse(lines[0]!)).toEqual({ id: 'gsm8k-0001', question: 'Tom has 3 apples and buys 1,200 more. How many?', answer: '1203', kind: 'number' });
  });
});
