import { describe, expect, it } from 'vitest';
import { checkDestinations, presetHostsFor } from '../../src/config/trust.js';

const embedded = { url: 'embedded:/srv/models', api: 'embedded' as const, models: '/srv/models' };

describe("a preset's own embedded host", () => {
  it('is refused without consent: a preset never chooses the model files this process loads', () => {
    const check = (trustPresetHosts: boolean) => () =>
      checkDestinations({ destinations: { hosts: [embedded], chosenBy: 'preset' }, presetSource: 'team.yaml', foreignFiles: [], trustPresetHosts, env: {}, consent: '--trust-preset-hosts' });
    expect(check(false)).toThrow(/team\.yaml names its own embedded host, the models folder \/srv\/models/);
    expect(check(true)).not.toThrow();
    expect(() => presetHostsFor([embedded], false)).toThrow(/names its own embedded host/);
    expect(presetHostsFor([embedded], true)).toEqual([embedded]);
  });

  it('is the user\'s own choice when named with --embedded or a hosts file', () => {
    expect(() => checkDestinations({ destinations: { hosts: [embedded], chosenBy: 'user' }, presetSource: 'team.yaml', foreignFiles: [], trustPresetHosts: false, env: {}, consent: '--trust-preset-hosts' })).not.toThrow();
  });
});
