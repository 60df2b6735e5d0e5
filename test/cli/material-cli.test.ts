import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { runCli } from '../helpers/cli.js';
import { migrationPlan } from '../helpers/material.js';
import { scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

let dir = '';
let sim: SimHandle | null = null;
let presetFile = '';
const script = scriptedResponder([0.2]);
const cli = (args: string[]) => runCli(args, dir);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-material-cli-'));
  const preset = testPreset(['a', 'b'], { protocol: { maxRounds: 1, convergenceThreshold: 0.99, callTimeoutSeconds: 10 } } as never);
  presetFile = join(dir, 'panel.json');
  writeFileSync(presetFile, JSON.stringify(preset));
  sim = await startSimulator({ models: simModels(preset), respond: script.respond });
});

afterAll(async () => {
  await sim?.close();
});

describe('run --attach', () => {
  it('refuses a binary, an oversized, an empty or a missing file before anything runs, naming the file and the fix', async () => {
    const binary = join(dir, 'image.png');
    writeFileSync(binary, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x0d]));
    const latin1 = join(dir, 'latin1.txt');
    writeFileSync(latin1, Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    const large = join(dir, 'large.md');
    writeFileSync(large, 'x'.repeat(1024 * 1024 + 1));
    const blank = join(dir, 'blank.md');
    writeFileSync(blank, '\n  \n');
    const cases = [
      { file: blank, message: /Attachment .*blank\.md is empty: there is nothing in it for the panel to read/, hint: /leave out --attach/ },
      { file: binary, message: /Attachment .*image\.png is not a text file: it contains NUL bytes/, hint: /convert a PDF/ },
      { file: latin1, message: /Attachment .*latin1\.txt is not a text file: it is not valid UTF-8/, hint: /UTF-8 text/ },
      { file: large, message: /Attachment .*large\.md is 1,048,577 bytes; the limit is 1,048,576 bytes \(1 MiB\)/, hint: /split it/ },
      { file: join(dir, 'absent.md'), message: /Attachment .*absent\.md does not exist/, hint: /Check the path/ },
    ];
    const before = script.seen.length;
    for (const c of cases) {
      const db = join(dir, 'refused.db');
      const r = await cli(['run', 'Q?', '--preset', presetFile, '--host', sim!.url, '--db', db, '--attach', c.file]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(c.message);
      expect(r.stderr).toMatch(c.hint);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(existsSync(db)).toBe(false);
    }
    expect(script.seen.length).toBe(before);
  });

  it('records the attachment, shows it, seals it (an edit breaks verify) and keeps it through a bundle', async () => {
    const plan = join(dir, 'plan.md');
    writeFileSync(plan, migrationPlan(12));
    const db = join(dir, 'material.db');
    const run = await cli(['run', 'Should we migrate?', '--preset', presetFile, '--host', sim!.url, '--db', db, '--attach', 'plan.md', '--token-budget', '60000', '--constraint', 'No downtime over 30 minutes.']);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/attached: plan\.md \(8\.0 KiB, sha256 [0-9a-f]{12}…\)/);
    expect(run.stdout).toContain('ATTACHED MATERIAL');
    expect(run.stdout).toMatch(/TOKEN BUDGET: [\d,]+ of 60,000 tokens/);
    // The user's constraint, in the run header, on the card and in `show`.
    expect(run.stderr).toContain('constraint: No downtime over 30 minutes.');
    expect(run.stdout).toContain('constraint: No downtime over 30 minutes.');
    const id = /Stored as (\S+)/.exec(run.stderr)![1]!;
    expect((await cli(['show', id, '--db', db])).stdout).toContain('- Constraint: No downtime over 30 minutes.');
    const openings = script.seen.filter((r) => stageOf(r) === 'opening').slice(-2);
    for (const req of openings) {
      const prompt = req.messages.map((m) => m.content).join('\n');
      expect(prompt).toContain('[Excerpt of plan.md: sections');
      expect(prompt).toContain('- No downtime over 30 minutes.');
    }

    const show = await cli(['show', id, '--db', db]);
    expect(show.stdout).toContain('## Attached material');
    expect(show.stdout).toMatch(/- opening round 0, a: plan\.md excerpt, sections [\d, ]+ \([\d,]+ of 8,186 chars\)/);
    const doc = JSON.parse((await cli(['show', id, '--db', db, '--json'])).stdout) as { attachments: { name: string; content: string; bytes: number }[]; budget: { limit: number; used: number } };
    expect(doc.attachments[0]).toMatchObject({ name: 'plan.md', bytes: 8186, content: migrationPlan(12) });
    expect(doc.budget.limit).toBe(60000);
    expect(doc.budget.used).toBeGreaterThan(0);
    const replay = await cli(['replay', id, '--db', db]);
    expect(replay.stdout).toContain('attached: plan.md');

    expect((await cli(['verify', id, '--db', db])).code).toBe(0);
    const bundle = join(dir, 'material.bundle');
    expect((await cli(['export', id, '--db', db, '--format', 'bundle', '--out', bundle])).code).toBe(0);
    const other = join(dir, 'imported.db');
    expect((await cli(['import', bundle, '--db', other])).code).toBe(0);
    const imported = JSON.parse((await cli(['show', id, '--db', other, '--json'])).stdout) as typeof doc;
    expect(imported.attachments).toEqual(doc.attachments);

    const s = new Database(db);
    s.prepare("update attachments set content = replace(content, 'Sunday', 'Monday') where debate_id = ?").run(id);
    s.close();
    const broken = await cli(['verify', id, '--db', db]);
    expect(broken.code).toBe(6);
    expect(broken.stdout).toContain('a `attachments` row (0) was edited');
  });

  it('reads a preset\'s `attach:` list relative to the preset file', async () => {
    const sub = join(dir, 'presets');
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, 'brief.md'), 'The brief says: keep invoices ten years. Marker KESTREL.');
    const preset = { ...testPreset(['a', 'b'], { protocol: { kind: 'parallel' } } as never), attach: ['brief.md'] };
    writeFileSync(join(sub, 'with-attach.json'), JSON.stringify(preset));
    const r = await cli(['run', 'Q?', '--preset', join(sub, 'with-attach.json'), '--host', sim!.url, '--db', join(dir, 'preset-attach.db')]);
    expect(r.code).toBe(0);
    const opening = script.seen.filter((q) => stageOf(q) === 'opening').at(-1)!;
    expect(opening.messages.map((m) => m.content).join('\n')).toContain('Marker KESTREL');
  });

  it('shows a run cut short by the budget live and on the card, and still prints a result', async () => {
    writeFileSync(join(dir, 'plan.md'), migrationPlan(12));
    const tight = join(dir, 'tight.json');
    writeFileSync(tight, JSON.stringify(testPreset(['a', 'b'], { protocol: { maxRounds: 3, convergenceThreshold: 0.99, callTimeoutSeconds: 10 } } as never)));
    const r = await cli(['run', 'Should we migrate?', '--preset', tight, '--host', sim!.url, '--db', join(dir, 'tight.db'), '--attach', 'plan.md', '--token-budget', '5000']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('token budget: 5,000');
    expect(r.stderr).toMatch(/budget: [\d,]+ of 5,000 tokens counted \(\d+%\)/);
    expect(r.stderr).toContain('Stopped: the token budget was spent');
    expect(r.stdout).toContain('RECOMMENDATION');
    expect(r.stdout).toMatch(/Cut short by the budget: the token budget \(5,000 tokens\) was spent after round \d/);
    expect(r.stdout).toContain('the token budget was spent)');
    // Replayed, each budget line comes where it happened: the cuts of a round inside that round.
    const id = /Stored as (\S+)/.exec(r.stderr)![1]!;
    const replay = (await cli(['replay', id, '--db', join(dir, 'tight.db')])).stdout;
    const live = r.stderr.split('\n').filter((l) => /^\s*(Round \d|budget|Stopped)/.test(l)).map((l) => l.trim());
    const replayed = replay.split('\n').filter((l) => /^\s*(Round \d|budget|Stopped)/.test(l)).map((l) => l.trim());
    expect(replayed).toEqual(live);
  });

  it('fails a run whose budget cannot cover two answers, and says which flag to raise', async () => {
    const low = join(dir, 'low.json');
    writeFileSync(low, JSON.stringify(testPreset(['a', 'b'], { agents: ['a', 'b'].map((id, i) => ({ id, model: `model-${i}:1b`, persona: `You are agent ${id}.`, priority: 'low' })) } as never)));
    const r = await cli(['run', 'Q?', '--preset', low, '--host', sim!.url, '--db', join(dir, 'low.db'), '--attach', 'plan.md', '--token-budget', '1000']);
    expect(r.code).toBe(5);
    expect(r.stderr).toContain('skipped by the token budget');
    expect(r.stderr).toContain('raise --token-budget');
  });

  it('refuses a token budget that is not a whole number from 1000 up', async () => {
    const r = await cli(['run', 'Q?', '--preset', presetFile, '--host', sim!.url, '--db', join(dir, 'x.db'), '--token-budget', '50']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--token-budget must be a whole number of tokens from 1000 up; got 50.');
    const word = await cli(['run', 'Q?', '--preset', presetFile, '--host', sim!.url, '--db', join(dir, 'x.db'), '--token-budget', 'abc']);
    expect(word.code).toBe(2);
    expect(word.stderr).toContain('got something that is not a number.');
    expect(word.stderr).not.toContain('NaN');
  });

  it('checks a demo\'s flags and attachments before it starts the simulator', async () => {
    for (const bad of [['--token-budget', 'abc'], ['--attach', 'no-such-file.md']]) {
      const r = await cli(['demo', '--db', join(dir, 'never.db'), ...bad]);
      expect(r.code).toBe(2);
      expect(r.stderr).not.toContain('Simulated Ollama');
    }
    expect(existsSync(join(dir, 'never.db'))).toBe(false);
  });

  it('lets `demo` review an attached file under a budget, with no Ollama', async () => {
    const plan = join(dir, 'demo-plan.md');
    writeFileSync(plan, migrationPlan(12));
    const db = join(dir, 'demo.db');
    const r = await cli(['demo', 'Review this change', '--preset', 'code-review', '--token-ms', '0', '--db', db, '--attach', plan, '--token-budget', '5000', '--constraint', 'No downtime over 30 minutes.']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/ATTACHED MATERIAL\n  demo-plan\.md \(8\.0 KiB, sha256 [0-9a-f]{12}…\)/);
    expect(r.stdout).toMatch(/TOKEN BUDGET: [\d,]+ of 5,000 tokens/);
    const doc = JSON.parse((await cli(['show', /Stored as (\S+)/.exec(r.stderr)![1]!, '--db', db, '--json'])).stdout) as { preset: { constraints?: string[] } };
    expect(doc.preset.constraints).toEqual(['No downtime over 30 minutes.']);
  });
});
