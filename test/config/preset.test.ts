import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtinPresetNames, loadPreset, parsePreset, resolvePresetPath } from '../../src/config/load-preset.js';
import { presetJsonSchemaText } from '../../src/config/preset-json-schema.js';
import { packagePath } from '../../src/package-root.js';
import { errorOf } from '../helpers/errors.js';
import { InputError } from '../../src/errors.js';

const valid = {
  name: 'p',
  agents: [
    { id: 'a', model: 'm1' },
    { id: 'b', model: 'm2' },
  ],
  judge: { model: 'j' },
  synthesizer: { model: 's' },
};

describe('presets', () => {
  it('fills protocol defaults: four critique rounds and a 0.85 threshold', () => {
    const { preset } = parsePreset(valid);
    expect(preset.protocol.maxRounds).toBe(4);
    expect(preset.protocol.convergenceThreshold).toBe(0.85);
  });

  it("refuses a devil's advocate on a panel of two, where the judge would score one agent's agreement with itself", () => {
    const err = errorOf(() => parsePreset({ ...valid, protocol: { advocate: true } }, 'adv.yaml'));
    expect(err.message).toContain('protocol.advocate: needs three agents or more (this panel has 2)');
    const three = { ...valid, agents: [...valid.agents, { id: 'c', model: 'm3' }], protocol: { advocate: true } };
    expect(parsePreset(three).preset.protocol.advocate).toBe(true);
  });

  it('rejects an unknown field and names its path', () => {
    const err = errorOf(() => parsePreset({ ...valid, agents: [{ ...valid.agents[0], temprature: 1 }, valid.agents[1]] }, 'x.yaml'));
    expect(err.message).toContain('agents.0: unknown field `temprature`');
    expect(err.message).toContain('x.yaml');
  });

  it('rejects an unknown key under an agent\'s options, naming its path, and keeps every Ollama option', () => {
    const err = errorOf(() => parsePreset({ ...valid, agents: [{ ...valid.agents[0], options: { temprature: 0.2 } }, valid.agents[1]] }, 'x.yaml'));
    expect(err.message).toContain('agents.0.options: unknown field `temprature`');
    const { preset } = parsePreset({ ...valid, judge: { model: 'j', options: { mirostat: 2, num_gpu: 20, use_mmap: false, stop: ['END'] } } });
    expect(preset.judge.options).toEqual({ mirostat: 2, num_gpu: 20, use_mmap: false, stop: ['END'] });
  });

  it('suggests the field meant for a misspelt one, at the top level, in an agent and in its options', () => {
    const { judge: _judge, ...noJudge } = valid;
    const err = errorOf(() => parsePreset({ ...noJudge, jugde: { model: 'j' }, agents: [{ ...valid.agents[0], modle: 'x', options: { temprature: 1 } }, valid.agents[1]] }, 'x.yaml'));
    expect(err.message).toContain('(top level): unknown field `jugde` (did you mean `judge`?)');
    expect(err.message).toContain('  - judge: missing; it is required');
    expect(err.message).toContain('agents.0: unknown field `modle` (did you mean `model`?)');
    expect(err.message).toContain('agents.0.options: unknown field `temprature` (did you mean `temperature`?)');
  });

  it('lists the known fields when an unknown one is near none of them', () => {
    const err = errorOf(() => parsePreset({ ...valid, protocol: { zzzzzz: 1 } }, 'x.yaml'));
    expect(err.message).toMatch(/protocol: unknown field `zzzzzz` \(known fields: kind, .*maxRounds, .*convergenceThreshold/);
  });

  it('names the fix for a threshold written as a percentage, a number in quotes and a misspelt protocol', () => {
    const pct = errorOf(() => parsePreset({ ...valid, protocol: { convergenceThreshold: 85 } }, 'x.yaml'));
    expect(pct.message).toContain('protocol.convergenceThreshold: Too big: expected number to be <=1 (a share from 0 to 1: write 0.85, not 85)');
    const quoted = errorOf(() => parsePreset({ ...valid, protocol: { maxRounds: '3' } }, 'x.yaml'));
    expect(quoted.message).toContain('protocol.maxRounds: Invalid input: expected number, received string (write 3 without quotes)');
    const kind = errorOf(() => parsePreset({ ...valid, protocol: { kind: 'debat' } }, 'x.yaml'));
    expect(kind.message).toMatch(/protocol\.kind: Invalid option: .* \(did you mean `debate`\?\)/);
    const far = errorOf(() => parsePreset({ ...valid, protocol: { kind: 'consensus' } }, 'x.yaml'));
    expect(far.message).not.toContain('did you mean');
  });

  it('names the YAML slips behind a wrong type: a number where text goes, a model name where a mapping goes, a mapping where a list goes', () => {
    const number = errorOf(() => parsePreset({ ...valid, agents: [{ id: 7, model: 'm1' }, valid.agents[1]] }, 'x.yaml'));
    expect(number.message).toContain('agents.0.id: Invalid input: expected string, received number (YAML read it as the number 7: put the value in quotes)');
    const bare = errorOf(() => parsePreset({ ...valid, judge: 'qwen2.5:3b' }, 'x.yaml'));
    expect(bare.message).toContain('judge: Invalid input: expected object, received string (write `{ model: qwen2.5:3b }`)');
    const mapping = errorOf(() => parsePreset({ ...valid, agents: { a: { model: 'm1' }, b: { model: 'm2' } } }, 'x.yaml'));
    expect(mapping.message).toContain('agents: Invalid input: expected array, received object (write a list: each entry on its own line starting with `- `)');
  });

  it('names the preset file meant beside a mistyped path, and a file of yours given as a bare name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-preset-path-'));
    writeFileSync(join(dir, 'team.yaml'), 'name: team\n');
    expect(errorOf(() => resolvePresetPath('./team.yml', dir)).message).toBe(`Preset file ${join(dir, 'team.yml')} does not exist. Did you mean ${join(dir, 'team.yaml')}?`);
    expect(errorOf(() => resolvePresetPath('./taem.yaml', dir)).message).toContain(`Did you mean ${join(dir, 'team.yaml')}?`);
    expect(errorOf(() => resolvePresetPath('./unrelated-name.yaml', dir)).message).not.toContain('Did you mean');
    const bare = errorOf(() => resolvePresetPath('team', dir)) as InputError;
    expect(bare.message).toBe('There is no preset named `team`.');
    expect(bare.hint).toBe('A file of yours is named so: pass it as a path, `--preset ./team.yaml` (a bare name is a built-in preset).');
  });

  it('names the path of a missing model and of an out-of-range threshold', () => {
    const err = errorOf(() => parsePreset({ ...valid, judge: {}, protocol: { convergenceThreshold: 1.5 } }));
    expect(err.message).toContain('judge.model');
    expect(err.message).toContain('protocol.convergenceThreshold');
  });

  it('refuses a panel of one and duplicate agent ids', () => {
    expect(errorOf(() => parsePreset({ ...valid, agents: [valid.agents[0]] })).message).toContain('at least two agents');
    expect(errorOf(() => parsePreset({ ...valid, agents: [valid.agents[0], valid.agents[0]] })).message).toContain('used by two agents');
  });

  it('warns when the synthesizer model also debates', () => {
    const { warnings } = parsePreset({ ...valid, synthesizer: { model: 'm1' } });
    expect(warnings.join()).toContain('synthesizer model `m1` also debates');
    expect(parsePreset(valid).warnings).toEqual([]);
  });

  it('loads YAML and JSON files by path and reports syntax errors with the file name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-preset-'));
    writeFileSync(join(dir, 'a.json'), JSON.stringify(valid));
    writeFileSync(join(dir, 'b.yaml'), 'name: b\nagents: [ {id: a, model: m} \n');
    expect(loadPreset(join(dir, 'a.json')).preset.name).toBe('p');
    const err = errorOf(() => loadPreset(join(dir, 'b.yaml')));
    expect(err.code).toBe('PRESET_SYNTAX');
    expect(err.message).toContain('b.yaml');
  });

  it('names the built-in presets when a name is unknown', () => {
    const err = errorOf(() => loadPreset('no-such-preset'));
    expect(err.code).toBe('UNKNOWN_PRESET');
    expect(err.hint).toContain('tech-decision');
  });

  it('ships built-in presets that all validate, including the three the docs promise', () => {
    const names = builtinPresetNames();
    expect(names).toEqual(expect.arrayContaining(['tech-decision', 'risk-review', 'small-8gb']));
    for (const name of names) expect(loadPreset(name).preset.name).toBe(name);
  });

  it('ships a JSON Schema that matches the zod schema (run `npm run schema:preset` after changing it)', () => {
    expect(readFileSync(packagePath('presets', 'preset.schema.json'), 'utf8')).toBe(presetJsonSchemaText());
  });
});
