import { describe, expect, it } from 'vitest';
import { loadPreset, parsePreset } from '../../src/config/load-preset.js';
import { errorOf } from '../helpers/errors.js';

function panel(clusters: (string | undefined)[], voting: Record<string, unknown> = {}) {
  return {
    name: 'vote-panel',
    agents: clusters.map((cluster, i) => ({ id: `a${i}`, model: `m${i}:1b`, ...(cluster === undefined ? {} : { cluster }) })),
    judge: { model: 'judge:1b' },
    synthesizer: { model: 'synth:1b' },
    voting,
  };
}

const sixInTwo = ['pro', 'pro', 'pro', 'con', 'con', 'con'];

describe('the voting block of a preset', () => {
  it("fills in the paper's defaults: θ 0.5, τ 0.6, no bonus, one vote", () => {
    const { preset, warnings } = parsePreset(panel(sixInTwo));
    expect(preset.voting).toMatchObject({ enabled: true, theta: 0.5, tau: 0.6, balanceBonus: false, iterate: false, maxIterations: 1, force: false });
    expect(warnings).toEqual([]);
  });

  it('names the agent without a cluster by its field path when voting is on', () => {
    const err = errorOf(() => parsePreset(panel(['pro', 'pro', undefined, 'con', 'con']), 'v.yaml'));
    expect(err.code).toBe('INVALID_PRESET');
    expect(err.message).toContain('v.yaml');
    expect(err.message).toContain('agents.2.cluster: agent `a2` needs a cluster when voting is on');
    expect(err.hint).toContain('docs/voting.md');
  });

  it('does not ask for clusters when there is no voting block, or it is switched off', () => {
    const { voting: _voting, ...plain } = panel([undefined, undefined]);
    expect(() => parsePreset(plain)).not.toThrow();
    expect(() => parsePreset(panel([undefined, undefined], { enabled: false }))).not.toThrow();
  });

  it('refuses a panel that forms a single cluster', () => {
    const err = errorOf(() => parsePreset(panel(['pro', 'pro', 'pro'])));
    expect(err.message).toContain('agents: voting compares clusters, and the agents form only the cluster `pro`');
  });

  it('refuses a one-agent cluster unless forced, and then only warns', () => {
    const err = errorOf(() => parsePreset(panel(['pro', 'pro', 'pro', 'solo'])));
    expect(err.message).toContain('agents: cluster `solo` has 1 agent (`a3`)');
    expect(err.message).toContain('voting.force: true');
    const { warnings } = parsePreset(panel(['pro', 'pro', 'pro', 'solo'], { force: true }));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('Cluster `solo` has 1 agent');
  });

  it('warns about a cluster of two, below the recommended three, and still accepts it', () => {
    const { warnings } = parsePreset(panel(['pro', 'pro', 'pro', 'con', 'con']));
    expect(warnings).toEqual([expect.stringContaining('Cluster `con` has 2 agents (`a3`, `a4`); 3 or more per cluster are recommended')]);
  });

  it('rejects τ, θ and weights outside their ranges with the field path', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ tau: 0.5 }, 'voting.tau: must be greater than 0.5'],
      [{ tau: 1.2 }, 'voting.tau: must be at most 1'],
      [{ theta: 0 }, 'voting.theta: must be greater than 0'],
      [{ theta: 1.01 }, 'voting.theta: must be at most 1'],
      [{ clusterThresholds: { pro: 0 } }, 'voting.clusterThresholds.pro: must be greater than 0'],
      [{ weights: { con: 0 } }, 'voting.weights.con: must be greater than 0'],
      [{ weights: { con: -2 } }, 'voting.weights.con: must be greater than 0'],
      [{ maxIterations: 9 }, 'voting.maxIterations:'],
      [{ quorum: 2 }, 'voting: unknown field `quorum`'],
    ];
    for (const [voting, expected] of cases) {
      expect(errorOf(() => parsePreset(panel(sixInTwo, voting))).message).toContain(expected);
    }
  });

  it('accepts τ = 1 and θ = 1, the inclusive ends of their ranges', () => {
    expect(parsePreset(panel(sixInTwo, { tau: 1, theta: 1 })).preset.voting).toMatchObject({ tau: 1, theta: 1 });
  });

  it('rejects thresholds, weights and an advocate cluster that name no cluster, listing the real ones', () => {
    const err = errorOf(() =>
      parsePreset(panel(sixInTwo, { clusterThresholds: { pros: 0.7 }, weights: { con: 2, critics: 1 }, advocateCluster: 'advocates' })),
    );
    expect(err.message).toContain('voting.clusterThresholds.pros: there is no cluster `pros` (clusters: `pro`, `con`)');
    expect(err.message).toContain('voting.weights.critics: there is no cluster `critics`');
    expect(err.message).not.toContain('voting.weights.con');
    expect(err.message).toContain('voting.advocateCluster: there is no cluster `advocates`');
  });

  it('warns that maxIterations does nothing while iterate is off', () => {
    const { warnings } = parsePreset(panel(sixInTwo, { maxIterations: 3 }));
    expect(warnings).toEqual([expect.stringContaining('voting.iterate is false')]);
  });

  it('ships a cluster-vote preset with two clusters of three and no warnings', () => {
    const { preset, warnings } = loadPreset('cluster-vote');
    expect(warnings).toEqual([]);
    expect(new Set(preset.agents.map((a) => a.cluster))).toEqual(new Set(['advocates', 'critics']));
    expect(preset.voting?.enabled).toBe(true);
  });
});
