import { describe, expect, it } from 'vitest';
import { estimateRun } from '../../src/engine/dry-run.js';
import { testPreset } from '../helpers/panel.js';

describe('the dry run of a debate with a targeted exchange', () => {
  it('counts the exchange at the panel model that weighs most, since which two agents clash worst is not known yet', () => {
    const preset = testPreset(['a', 'b', 'c'], { tensions: {} });
    expect(preset.tensions?.round2.enabled).toBe(true);
    const sizes: Record<string, number> = { 'model-0:1b': 1, 'model-1:1b': 9, 'model-2:1b': 4 };
    const estimate = estimateRun(preset, 'Should we do A?', (m) => sizes[m] ?? null);
    const exchange = estimate.groups.find((g) => g.what.startsWith('targeted exchange'))!;
    expect(exchange).toMatchObject({ what: 'targeted exchange: the two agents of the worst clash', model: 'model-1:1b', calls: 2 });
  });
});
