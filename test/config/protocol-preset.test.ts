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

  it('takes a tension map in a tournament, a decomposition and a pipeline, but refuses a vote there', () => {
    expect(parsePreset({ ...valid, protocol: { kind: 'tournament' }, tensions: {} }).preset.tensions?.enabled).toBe(true);
    expect(parsePreset({ ...valid, protocol: { kind: 'decompose' }, tensions: {} }).preset.tensions?.enabled).toBe(true);
    const reviewers = { ...valid, agents: [{ id: 'r1', model: 'm1', role: 'reviewer' }, { id: 'r2', model: 'm1', role: 'reviewer' }], protocol: { kind: 'pipeline' } };
    expect(parsePreset({ ...reviewers, tensions: {} }).preset.tensions?.enabled).toBe(true);
    expect(errorOf(() => parsePreset({ ...valid, protocol: { kind: 'tournament' }, voting: {} })).message).toContain('voting: the tournament protocol runs no vote');
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
    expect(kind('pipeline')).toEqual(['m1', 'm2', 's']);
    expect(presetModels(parsePreset({ ...valid, synthesizer: { rotate: true, models: ['x', 'y'] } }).preset)).toEqual(['m1', 'm2', 'j', 'x', 'y']);
  });

  it('takes pipeline roles: at least one reviewer, one lead and one filter at most, and roles only in a pipeline', () => {
    const roles = (...r: (string | undefined)[]) => ({ ...valid, agents: r.map((role, i) => ({ id: `x${i}`, model: 'm1', ...(role ? { role } : {}) })), protocol: { kind: 'pipeline' } });
    const ok = parsePreset(roles('lead', 'analyst', 'reviewer', undefined, 'filter')).preset;
    expect(ok.agents.map((a) => a.role ?? 'reviewer')).toEqual(['lead', 'analyst', 'reviewer', 'reviewer', 'filter']);
    expect(ok.protocol.filterMode).toBeUndefined();
    expect(errorOf(() => parsePreset(roles('lead', 'analyst', 'filter'))).message).toContain('agents: a pipeline needs at least one reviewer');
    expect(errorOf(() => parsePreset(roles('lead', 'lead', 'reviewer'))).message).toContain('agents: a pipeline takes one lead at most (x0, x1 are all lead)');
    expect(errorOf(() => parsePreset(roles('filter', 'reviewer', 'filter'))).message).toContain('agents: a pipeline takes one filter at most');
    expect(errorOf(() => parsePreset({ ...roles('boss', 'reviewer') })).message).toContain('agents.0.role');
    expect(errorOf(() => parsePreset({ ...valid, agents: [{ id: 'a', model: 'm1', role: 'lead' }, { id: 'b', model: 'm2' }] })).message).toContain(
      'agents.0.role: roles are only used when protocol.kind is pipeline (it is debate)',
    );
    expect(errorOf(() => parsePreset({ ...valid, protocol: { kind: 'parallel', filterMode: 'list' } })).message).toContain('protocol.filterMode: only used when protocol.kind is pipeline');
    expect(errorOf(() => parsePreset({ ...roles('reviewer', 'reviewer'), protocol: { kind: 'pipeline', filterMode: 'essay' } })).message).toContain('protocol.filterMode');
    expect(errorOf(() => parsePreset({ ...roles('reviewer', 'reviewer'), voting: {} })).message).toContain('voting: the pipeline protocol runs no vote');
  });

  it('does not warn that the synthesizer debates when a pipeline has its own filter', () => {
    const base = { ...valid, synthesizer: { model: 'm1' }, protocol: { kind: 'pipeline' } };
    expect(parsePreset({ ...base, agents: [{ id: 'a', model: 'm1', role: 'filter' }, { id: 'b', model: 'm2' }] }).warnings).toEqual([]);
    expect(parsePreset(base).warnings.join('\n')).toContain('also debates');
  });

  it('ships one built-in preset per protocol', () => {
    expect(loadPreset('code-review').preset.protocol.kind).toBe('pipeline');
    expect(builtinPresetNames()).toEqual(expect.arrayContaining(['parallel', 'tournament', 'decompose']));
    for (const kind of ['parallel', 'tournament', 'decompose'] as const) expect(loadPreset(kind).preset.protocol.kind).toBe(kind);
  });
});
