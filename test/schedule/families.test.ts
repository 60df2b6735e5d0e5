import { describe, expect, it } from 'vitest';
import { agentFamily, oneFamilyWarning } from '../../src/schedule/families.js';

const tag = (extra: object = {}) => ({ name: 'm:8b', size: 1, digest: 'd', parameterSize: '8B', quantization: 'Q4_K_M', ...extra });

describe('an agent\'s model family', () => {
  it('takes the server\'s report first, then the agent\'s `family:`, then the hosts entry\'s, else unknown', () => {
    const agent = { id: 'a', model: 'm:8b', family: 'mistral' };
    expect(agentFamily(agent, { contextLength: null, capabilities: [], kvBytesPerToken: null, family: 'qwen2', families: ['qwen2'] }, tag())).toMatchObject({ family: 'qwen2', families: ['qwen2'], source: 'server', parameterSize: '8B' });
    expect(agentFamily(agent, undefined, tag({ family: 'llama' }))).toMatchObject({ family: 'llama', source: 'server' });
    expect(agentFamily(agent, undefined, tag({ family: 'gemma', familyFromHost: true }))).toMatchObject({ family: 'mistral', source: 'preset' });
    expect(agentFamily({ id: 'a', model: 'm:8b' }, undefined, tag({ family: 'gemma', familyFromHost: true }))).toMatchObject({ family: 'gemma', source: 'host' });
    expect(agentFamily({ id: 'a', model: 'm:8b' }, undefined, undefined)).toMatchObject({ family: null, source: 'unknown', parameterSize: null });
  });

  it('warns only when every agent is of one known family, counting versions of a family as one', () => {
    const f = (agentId: string, family: string | null) => ({ agentId, model: 'm', family, families: null, parameterSize: null, quantization: null, source: 'server' as const });
    expect(oneFamilyWarning([f('a', 'qwen2'), f('b', 'qwen3')])).toMatch(/All 2 agents are of one model family \(qwen\)/);
    expect(oneFamilyWarning([f('a', 'llama'), f('b', 'qwen2')])).toBeNull();
    expect(oneFamilyWarning([f('a', 'llama'), f('b', null)])).toBeNull();
  });
});
