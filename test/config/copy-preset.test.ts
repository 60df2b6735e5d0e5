import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { builtinPresetNames, loadPreset } from '../../src/config/load-preset.js';
import { packagePath } from '../../src/package-root.js';
import { runCli } from '../helpers/cli.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'conclave-copy-'));
  dirs.push(d);
  return d;
}

/** The file a preset's `# yaml-language-server: $schema=…` line names, resolved as an editor resolves it: from the preset's folder. */
function schemaOf(presetFile: string): string {
  const line = readFileSync(presetFile, 'utf8').split('\n')[0]!;
  const target = /^# yaml-language-server: \$schema=(\S+)$/.exec(line)?.[1];
  if (!target) throw new Error(`${presetFile} has no schema line: ${line}`);
  return resolve(dirname(presetFile), target);
}

describe('conclave presets --copy', () => {
  it('writes the preset with the schema its editor line names beside it, so the line resolves in the folder it was copied to', async () => {
    const dir = tempDir();
    const r = await runCli(['presets', '--copy', 'tech-decision', '--to', 'mine'], dir);
    expect(r.code, r.stderr).toBe(0);
    const copied = join(dir, 'mine', 'tech-decision.yaml');
    expect(existsSync(schemaOf(copied))).toBe(true);
    expect(readFileSync(schemaOf(copied), 'utf8')).toBe(readFileSync(packagePath('presets', 'preset.schema.json'), 'utf8'));
    expect(r.stdout).toContain('--preset ./mine/tech-decision.yaml');
    expect(loadPreset(copied, dir).preset.name).toBe('tech-decision');
  });

  it('copies the agent files a preset names, so the copy loads where it was written', async () => {
    const dir = tempDir();
    const r = await runCli(['presets', '--copy', 'anti-conformity'], dir);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(dir, 'agents', 'skeptic.md'))).toBe(true);
    expect(loadPreset(join(dir, 'anti-conformity.yaml'), dir).preset.agents.map((a) => a.id)).toEqual(loadPreset('anti-conformity', dir).preset.agents.map((a) => a.id));
  });

  it('keeps a file already there with the same content, and refuses one with other content without writing anything', async () => {
    const dir = tempDir();
    expect((await runCli(['presets', '--copy', 'delphi'], dir)).code).toBe(0);
    const again = await runCli(['presets', '--copy', 'delphi'], dir);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`kept (same content) ${join(dir, 'preset.schema.json')}`);
    writeFileSync(join(dir, 'agents', 'skeptic.md'), 'my own skeptic\n');
    rmSync(join(dir, 'preset.schema.json'));
    const refused = await runCli(['presets', '--copy', 'delphi'], dir);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${join(dir, 'agents', 'skeptic.md')} already exists with other content`);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(join(dir, 'preset.schema.json'))).toBe(false);
  });

  it('names the built-in preset meant for a name that is not one', async () => {
    const r = await runCli(['presets', '--copy', 'tech-decisoin'], tempDir());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('There is no built-in preset named `tech-decisoin` to copy. Did you mean `tech-decision`?');
    const alone = await runCli(['presets', '--to', 'mine'], tempDir());
    expect([alone.code, alone.stderr]).toEqual([2, expect.stringContaining('--to names the folder --copy writes to')]);
  });
});

describe('the shipped presets', () => {
  it('each name in their editor line a schema that exists beside them', () => {
    for (const name of builtinPresetNames()) {
      const file = ['yaml', 'yml', 'json'].map((ext) => packagePath('presets', `${name}.${ext}`)).find(existsSync)!;
      if (file.endsWith('.json')) continue;
      expect(existsSync(schemaOf(file)), name).toBe(true);
    }
  });
});
