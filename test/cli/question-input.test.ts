import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIO } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { capture, runCli } from '../helpers/cli.js';
import { scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

let dir = '';
let sim: SimHandle | null = null;
let presetFile = '';
const script = scriptedResponder([0.2]);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-question-'));
  const preset = testPreset(['a', 'b'], { protocol: { maxRounds: 0, convergenceThreshold: 0.99, callTimeoutSeconds: 10 } } as never);
  presetFile = join(dir, 'panel.json');
  writeFileSync(presetFile, JSON.stringify(preset));
  sim = await startSimulator({ models: simModels(preset).map((m) => ({ ...m, contextLength: 8192 })), respond: script.respond });
});

afterAll(async () => {
  await sim?.close();
});

async function withStdin(args: string[], input: string | Buffer) {
  const stdout = capture();
  const stderr = capture();
  const io: CliIO = { stdout, stderr, env: {}, cwd: dir, stdin: Readable.from([Buffer.from(input)]) };
  const code = await main(args, io);
  return { code, stdout: stdout.text, stderr: stderr.text };
}

const openingPrompts = (from: number) => script.seen.slice(from).filter((r) => stageOf(r) === 'opening').map((r) => r.messages.map((m) => m.content).join('\n'));

describe('the question from standard input or a file', () => {
  it('reads the question of `run -` from standard input and asks the panel that question', async () => {
    const before = script.seen.length;
    const r = await withStdin(['run', '-', '--preset', presetFile, '--host', sim!.url, '--db', join(dir, 'stdin.db'), '--quiet'], 'Should the ledger move to PostgreSQL?\n');
    expect(r.code).toBe(0);
    const prompts = openingPrompts(before);
    expect(prompts).toHaveLength(2);
    for (const p of prompts) expect(p).toContain('Should the ledger move to PostgreSQL?');
  });

  it('says on a terminal that `run -` reads the question from standard input and how to end it, and says nothing when it is piped', async () => {
    const typed = Object.assign(Readable.from([Buffer.from('Should we typeset in Garamond?\n')]), { isTTY: true });
    const stdout = capture();
    const stderr = capture();
    const code = await main(['run', '-', '--preset', presetFile, '--host', sim!.url, '--db', join(dir, 'tty.db'), '--quiet'], { stdout, stderr, env: {}, cwd: dir, stdin: typed });
    expect(code).toBe(0);
    expect(stderr.text).toContain('Reading the question from standard input');
    expect(stderr.text).toMatch(/Ctrl-D on a new line|Ctrl-Z then Enter/);
    const piped = await withStdin(['run', '-', '--preset', presetFile, '--host', sim!.url, '--db', join(dir, 'tty.db'), '--quiet'], 'Should we typeset in Garamond?\n');
    expect(piped.stderr).not.toContain('Reading the question');
  });

  it('reads the question of --question-file from the file', async () => {
    const file = join(dir, 'question.md');
    writeFileSync(file, 'Which queue fits the billing events?\n');
    const before = script.seen.length;
    const r = await runCli(['run', '--question-file', 'question.md', '--preset', presetFile, '--host', sim!.url, '--db', join(dir, 'file.db'), '--quiet'], dir);
    expect(r.code).toBe(0);
    for (const p of openingPrompts(before)) expect(p).toContain('Which queue fits the billing events?');
  });

  it('refuses a blank, binary or missing question source, or two of them, before anything runs', async () => {
    const binary = join(dir, 'q.bin');
    writeFileSync(binary, Buffer.from([0x51, 0x00, 0x3f]));
    const before = script.seen.length;
    const db = join(dir, 'refused.db');
    const blank = await withStdin(['run', '-', '--preset', presetFile, '--host', sim!.url, '--db', db], '  \n');
    expect(blank.code).toBe(2);
    expect(blank.stderr).toContain('The question on standard input is empty');
    const nul = await runCli(['run', '--question-file', binary, '--preset', presetFile, '--host', sim!.url, '--db', db], dir);
    expect(nul.code).toBe(2);
    expect(nul.stderr).toMatch(/Question file .*q\.bin is not a text file: it contains NUL bytes/);
    const missing = await runCli(['run', '--question-file', 'absent.md', '--preset', presetFile, '--host', sim!.url, '--db', db], dir);
    expect(missing.stderr).toMatch(/Question file .*absent\.md does not exist/);
    const both = await runCli(['run', 'Q?', '--question-file', binary, '--preset', presetFile, '--host', sim!.url, '--db', db], dir);
    expect(both.stderr).toContain('Both a question and --question-file were given');
    const none = await runCli(['run', '--preset', presetFile, '--host', sim!.url, '--db', db], dir);
    expect(none.stderr).toContain('No question was given');
    for (const r of [blank, nul, missing, both, none]) expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(db)).toBe(false);
    expect(script.seen.length).toBe(before);
  });

  it('refuses a question larger than every panel model context before a single chat request, naming its size, the limit and --attach', async () => {
    const file = join(dir, 'huge.md');
    writeFileSync(file, 'Why does the nightly batch stall? '.repeat(3000));
    const before = script.seen.length;
    const r = await runCli(['run', '--question-file', file, '--preset', presetFile, '--host', sim!.url, '--db', join(dir, 'huge.db')], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/The question is about [\d,]+ tokens; the largest context of the panel's models holds 8,192/);
    expect(r.stderr).toContain('--attach FILE');
    expect(script.seen.length).toBe(before);
  });
});
