import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load-preset.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { runCli } from '../helpers/cli.js';
import { errorOf } from '../helpers/errors.js';
import type { InputError } from '../../src/errors.js';
import { scriptedResponder, simModels, testPreset } from '../helpers/panel.js';

let dir = '';
let sim: SimHandle;
const PERSONA = 'You are a storage engineer who has restored every backup you ever took.';

/** A folder with a preset whose first agent is a Markdown file, and the file as given. */
function presetWith(agentFile: string, fileName = 'agents/storage.md'): string {
  const folder = mkdtempSync(join(dir, 'preset-'));
  mkdirSync(join(folder, 'agents'), { recursive: true });
  writeFileSync(join(folder, fileName), agentFile);
  const preset = {
    name: 'md-panel',
    agents: [fileName, { id: 'b', model: 'model-1:1b', persona: 'You are agent b.' }],
    judge: { model: 'judge:1b' },
    synthesizer: { model: 'synth:1b' },
    protocol: { maxRounds: 1, callTimeoutSeconds: 10 },
  };
  const path = join(folder, 'panel.json');
  writeFileSync(path, JSON.stringify(preset));
  return path;
}

const storage = `---\nid: a\nmodel: model-0:1b\noptions: { temperature: 0.3 }\n---\n\n${PERSONA}\n`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-agent-files-'));
  sim = await startSimulator({ models: simModels(testPreset(['a', 'b'])), respond: scriptedResponder([0.95]).respond });
});

afterAll(async () => {
  await sim?.close();
});

describe('agents defined in Markdown files', () => {
  it('reads the fields from the front matter and the persona from the body', () => {
    const { preset } = loadPreset(presetWith(storage));
    expect(preset.agents[0]).toMatchObject({ id: 'a', model: 'model-0:1b', persona: PERSONA, options: { temperature: 0.3 } });
    expect(preset.agents[1]!.id).toBe('b');
  });

  it('speaks with its persona in a debate from the command line, and the record keeps the persona as run', async () => {
    const db = join(dir, 'run.db');
    const r = await runCli(['run', 'Should we do A?', '--preset', presetWith(storage), '--db', db, '--host', sim.url, '--json', '--quiet'], dir);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as { preset: { agents: { id: string; persona: string }[] }; calls: { agentId: string; stage: string; messages: { role: string; content: string }[] }[] };
    expect(doc.preset.agents[0]).toMatchObject({ id: 'a', persona: PERSONA });
    const opening = doc.calls.find((c) => c.agentId === 'a' && c.stage === 'opening')!;
    expect(opening.messages.find((m) => m.role === 'system')!.content).toContain(PERSONA);
  });

  it('names the file and the field when the front matter is wrong', async () => {
    const path = presetWith('---\nid: a\nmodle: model-0:1b\n---\nA persona.\n');
    const r = await runCli(['run', 'Q?', '--preset', path, '--host', sim.url, '--db', join(dir, 'x.db')], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('storage.md is invalid');
    expect(r.stderr).toContain('unknown field `modle` (did you mean `model`?)');
    expect(r.stderr).toContain('  - model: missing; it is required');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses a file without front matter, a persona given twice, a path outside the folder and a text that is no .md path', () => {
    expect(() => loadPreset(presetWith(`${PERSONA}\n`))).toThrow(/storage\.md is invalid:\n {2}- front matter: the file must start with a line `---`/);
    expect(() => loadPreset(presetWith(`---\nid: a\nmodel: m:1b\npersona: one\n---\ntwo\n`))).toThrow(/persona: given both in the front matter and as the body/);
    const outside = presetWith(storage);
    writeFileSync(outside, JSON.stringify({ name: 'x', agents: ['../elsewhere.md', { id: 'b', model: 'm:1b' }], judge: { model: 'j:1b' }, synthesizer: { model: 's:1b' } }));
    expect(() => loadPreset(outside)).toThrow(/agents\.0 names `\.\.\/elsewhere\.md`, a path that climbs out with `\.\.`/);
    writeFileSync(outside, JSON.stringify({ name: 'x', agents: ['storage', { id: 'b', model: 'm:1b' }], judge: { model: 'j:1b' }, synthesizer: { model: 's:1b' } }));
    expect(() => loadPreset(outside)).toThrow(/either a mapping of its fields or the path of a Markdown \(\.md\) file/);
  });

  it('names the files of two agents that share an id, and a file listed twice', () => {
    const path = presetWith(storage);
    const folder = join(path, '..');
    writeFileSync(join(folder, 'agents', 'other.md'), '---\nid: a\nmodel: model-1:1b\n---\nAnother persona.\n');
    writeFileSync(path, JSON.stringify({ name: 'x', agents: ['agents/storage.md', 'agents/other.md'], judge: { model: 'j:1b' }, synthesizer: { model: 's:1b' } }));
    const clash = errorOf(() => loadPreset(path)) as InputError;
    expect(clash.message).toContain('agents.1.id: `a` is used by two agents, agents.0 (agents/storage.md) and agents.1 (agents/other.md)');
    expect(clash.hint).toBe('Give every agent its own id.');
    writeFileSync(path, JSON.stringify({ name: 'x', agents: ['agents/storage.md', 'agents/storage.md'], judge: { model: 'j:1b' }, synthesizer: { model: 's:1b' } }));
    expect((errorOf(() => loadPreset(path)) as InputError).hint).toBe('The same agent file is listed twice: remove one line.');
  });

  it('names a missing agent file with the reader\'s message', () => {
    const path = presetWith(storage);
    writeFileSync(path, JSON.stringify({ name: 'x', agents: ['agents/missing.md', { id: 'b', model: 'm:1b' }], judge: { model: 'j:1b' }, synthesizer: { model: 's:1b' } }));
    expect(() => loadPreset(path)).toThrow(/missing\.md/);
  });

  it('is how the built-in tech-decision preset defines its panel', () => {
    const { preset } = loadPreset('tech-decision');
    expect(preset.agents.map((a) => a.id)).toEqual(['pragmatist', 'architect', 'skeptic']);
    for (const a of preset.agents) expect(a.persona).toMatch(/^You are /);
  });
});
