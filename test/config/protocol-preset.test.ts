import { describe, expect, it } from 'vitest';
import { builtinPresetNames, loadPreset, parsePreset } from '../../src/config/load-preset.js';
import { pickSynthesizer, synthesizerCandidates } from '../../src/config/synthesizer.js';
import { presetModels } from '../../src/engine/run-debate.js';
import { errorOf } from '../helpers/errors.js';

const valid = {
  name: 'p',
  agents: [
    { id: 'a', model: 'm1' },
    { id: 'b', model: 'm2' },
    { id: 'c', model: 'm1' },
  ],
  judge: { model: 'j' },
  synthesizer: { model: 's' },
};

describe('protocol presets', () => {
  it('defaults to the debate protocol', () => {
    expect(parsePreset(valid).preset.protocol.kind).toBe('debate');
  });

  it('names the path of an unknown protocol kind', () => {
    const err = errorOf(() => parsePreset({ ...valid, protocol: { kind: 'brawl' } }));
    expect(err.message).toContain('protocol.kind');
  });

  it('refuses a decomposer that is not an agent, or set for another protocol', () => {
    expect(errorOf(() => parsePreset({ ...valid, protocol: { kind: 'decompose', decomposer: 'z' } })).message).toContain('protocol.decomposer: `z` is not an agent id');
    expect(errorOf(() => parsePreset({ ...valid, protocol: { kind: 'parallel', decomposer: 'a' } })).message).toContain('protocol.decomposer: only used when protocol.kind is decompose');
  });

  it('refuses optional stages in a tournament', () => {
    const err = errorOf(() => parsePreset({ ...valid, protocol: { kind: 'tournament' }, tensions: {} }));
    expect(err.message).toContain('tensions: the tournament protocol runs no optional stages');
  });

  it('requires a synthesizer model unless it rotates, and a rotation list only with rotate', () => {
    expect(errorOf(() => parsePreset({ ...valid, synthesizer: {} })).message).toContain('synthesizer.model: required unless synthesizer.rotate is true');
    expect(errorOf(() => parsePreset({ ...valid, synthesizer: { model: 's', models: ['x'] } })).message).toContain('synthesizer.models');
    expect(parsePreset({ ...valid, synthesizer: { rotate: true } }).preset.synthesizer.rotate).toBe(true);
  });

  it('rotates over the named models, else over the panel models, in turn', () => {
    const panel = parsePreset({ ...valid, synthesizer: { rotate: true } }).preset;
    expect(synthesizerCandidates(panel)).toEqual(['m1', 'm2']);
    expect([0, 1, 2, 3].map((t) => pickSynthesizer(panel, t).choice.model)).toEqual(['m1', 'm2', 'm1', 'm2']);
    expect(pickSynthesizer(panel, 0).choice.panelAgents).toEqual(['a', 'c']);
    const named = parsePreset({ ...valid, synthesizer: { rotate: true, models: ['x', 'y', 'z'] } }).preset;
    expect(pickSynthesizer(named, 4).preset.synthesizer.model).toBe('y');
    expect(pickSynthesizer(parsePreset(valid).preset, 7).choice).toMatchObject({ model: 's', rotate: false, turn: 0 });
  });

  it('checks only the models a protocol calls', () => {
    const kind = (k: string) => presetModels(parsePreset({ ...valid, protocol: { kind: k } }).preset);
    expect(kind('debate')).toEqual(['m1', 'm2', 'j', 's']);
    expect(kind('parallel')).toEqual(['m1', 'm2', 's']);
    expect(kind('tournament')).toEqual(['m1', 'm2', 'j', 's']);
    expect(kind('decompose')).toEqual(['m1', 'm2']);
    expect(presetModels(parsePreset({ ...valid, synthesizer: { rotate: true, models: ['x', 'y'] } }).preset)).toEqual(['m1', 'm2', 'j', 'x', 'y']);
  });

  it('ships one built-in preset per protocol', () => {
    expect(builtinPresetNames()).toEqual(expect.arrayContaining(['parallel', 'tournament', 'decompose']));
    for (const kind of ['parallel', 'tournament', 'decompose'] as const) expect(loadPreset(kind).preset.protocol.kind).toBe(kind);
  });
});
