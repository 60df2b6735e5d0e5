import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  classifyArtifacts,
  contextualSuperposition,
  tierOf,
  type Artifact,
  type Ballot,
  type Cluster,
  type Tier,
  type Vote,
  type VotingInput,
} from '../../src/protocol/voting.js';

/** Random panels: 1–5 clusters of 1–4 agents, up to 2 agents outside any cluster, 1–6 artifacts. */
const panel = fc
  .record({
    clusterSizes: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 5 }),
    outsiders: fc.integer({ min: 0, max: 2 }),
    artifactCount: fc.integer({ min: 1, max: 6 }),
  })
  .chain(({ clusterSizes, outsiders, artifactCount }) => {
    const clusters: Cluster[] = clusterSizes.map((size, c) => ({
      id: `k${c}`,
      members: Array.from({ length: size }, (_, j) => `k${c}-m${j}`),
    }));
    const agents = [...clusters.flatMap((c) => c.members), ...Array.from({ length: outsiders }, (_, j) => `out${j}`)];
    const cells = artifactCount * agents.length;
    return fc
      .record({
        authors: fc.array(fc.constantFrom(...agents), { minLength: artifactCount, maxLength: artifactCount }),
        // null: the agent cast no ballot. Authors get ballots too; the protocol must ignore them.
        cells: fc.array(fc.constantFrom<Vote | null>('yes', 'no', 'abstain', null), {
          minLength: cells,
          maxLength: cells,
        }),
      })
      .map(({ authors, cells: grid }): VotingInput => {
        const artifacts: Artifact[] = authors.map((authorId, i) => ({ id: `w${i}`, authorId }));
        const ballots: Ballot[] = [];
        artifacts.forEach((artifact, i) =>
          agents.forEach((voterId, j) => {
            const vote = grid[i * agents.length + j];
            if (vote) ballots.push({ artifactId: artifact.id, voterId, vote });
          }),
        );
        return { clusters, artifacts, ballots };
      });
  });

const threshold = fc.integer({ min: 1, max: 100 }).map((x) => x / 100);
const consensusThreshold = fc.integer({ min: 51, max: 100 }).map((x) => x / 100);
const weightsFor = (input: VotingInput) =>
  fc
    .array(fc.double({ min: 0.01, max: 10, noNaN: true }), {
      minLength: input.clusters.length,
      maxLength: input.clusters.length,
    })
    .map((ws) => Object.fromEntries(input.clusters.map((c, i) => [c.id, ws[i] ?? 1])));

const withWeights = panel.chain((input) =>
  fc.record({ input: fc.constant(input), weights: fc.option(weightsFor(input), { nil: undefined }) }),
);

const rank: Record<Tier, number> = { consensus: 0, polar: 1, reject: 2 };

describe('voting over random panels', () => {
  it('keeps every agreement ratio, score and balanced score within [0, 1]', () => {
    fc.assert(
      fc.property(withWeights, consensusThreshold, ({ input, weights }, tau) => {
        for (const v of classifyArtifacts(input, { tau, weights, balanceBonus: true })) {
          expect(v.agreementRatio).toBeGreaterThanOrEqual(0);
          expect(v.agreementRatio).toBeLessThanOrEqual(1);
          expect(v.score).toBeGreaterThanOrEqual(0);
          expect(v.score).toBeLessThanOrEqual(1);
          expect(v.balancedScore!).toBeLessThanOrEqual(v.score);
          expect(v.balancedScore!).toBeGreaterThanOrEqual(v.score / 2);
        }
      }),
    );
  });

  it('puts every artifact in exactly one tier, the one its ratio calls for', () => {
    fc.assert(
      fc.property(withWeights, consensusThreshold, ({ input, weights }, tau) => {
        const verdicts = classifyArtifacts(input, { tau, weights });
        expect(verdicts.map((v) => v.artifact.id).sort()).toEqual(input.artifacts.map((a) => a.id).sort());
        for (const v of verdicts) {
          const consensus = v.agreementRatio >= tau - 1e-9;
          const reject = !consensus && v.agreementRatio <= 1 - tau + 1e-9;
          expect(v.tier).toBe(consensus ? 'consensus' : reject ? 'reject' : 'polar');
        }
        const view = contextualSuperposition(verdicts);
        const seen = [
          ...view.ground.map((e) => e.artifact.id),
          ...view.contextualize.map((e) => e.artifact.id),
          ...view.excluded,
        ];
        expect(seen.sort()).toEqual(input.artifacts.map((a) => a.id).sort());
      }),
    );
  });

  it('ranks by tier, then rank score descending, then artifact id', () => {
    fc.assert(
      fc.property(withWeights, fc.boolean(), ({ input, weights }, balanceBonus) => {
        const verdicts = classifyArtifacts(input, { weights, balanceBonus });
        for (let i = 1; i < verdicts.length; i++) {
          const [a, b] = [verdicts[i - 1]!, verdicts[i]!];
          const key = rank[a.tier] - rank[b.tier] || b.rankScore - a.rankScore;
          expect(key < 0 || (key === 0 && a.artifact.id < b.artifact.id)).toBe(true);
        }
      }),
    );
  });

  it('never adds a cluster to an approval set when θ rises', () => {
    fc.assert(
      fc.property(panel, threshold, threshold, (input, t1, t2) => {
        const [low, high] = t1 <= t2 ? [t1, t2] : [t2, t1];
        const before = classifyArtifacts(input, { theta: low });
        const after = classifyArtifacts(input, { theta: high });
        for (const v of after) {
          const earlier = before.find((b) => b.artifact.id === v.artifact.id)!;
          for (const id of v.approvalSet) expect(earlier.approvalSet).toContain(id);
        }
      }),
    );
  });

  it('never adds a cluster to an approval set when one cluster’s own θ rises', () => {
    fc.assert(
      fc.property(panel, threshold, threshold, (input, t1, t2) => {
        const target = input.clusters[0]!.id;
        const [low, high] = t1 <= t2 ? [t1, t2] : [t2, t1];
        const before = classifyArtifacts(input, { clusterThresholds: { [target]: low } });
        const after = classifyArtifacts(input, { clusterThresholds: { [target]: high } });
        for (const v of after) {
          const earlier = before.find((b) => b.artifact.id === v.artifact.id)!;
          expect(earlier.approvalSet).toEqual(expect.arrayContaining([...v.approvalSet]));
        }
      }),
    );
  });

  it('gives the same verdicts with equal weights as without weights', () => {
    fc.assert(
      fc.property(panel, fc.double({ min: 0.1, max: 10, noNaN: true }), (input, w) => {
        const weights = Object.fromEntries(input.clusters.map((c) => [c.id, w]));
        const plain = classifyArtifacts(input).map((v) => [v.artifact.id, v.tier]);
        const weighted = classifyArtifacts(input, { weights }).map((v) => [v.artifact.id, v.tier]);
        expect(weighted).toEqual(plain);
      }),
    );
  });

  it('does not depend on the order the ballots arrive in', () => {
    fc.assert(
      fc.property(
        panel.chain((input) =>
          fc.record({
            input: fc.constant(input),
            order: fc.shuffledSubarray([...input.ballots], { minLength: input.ballots.length }),
          }),
        ),
        ({ input, order }) => {
          expect(classifyArtifacts({ ...input, ballots: order })).toEqual(classifyArtifacts(input));
        },
      ),
    );
  });

  it('is unmoved by anything authors say about their own artifacts', () => {
    fc.assert(
      fc.property(panel, (input) => {
        const authorOf = new Map(input.artifacts.map((a) => [a.id, a.authorId]));
        const honest = { ...input, ballots: input.ballots.filter((b) => authorOf.get(b.artifactId) !== b.voterId) };
        expect(classifyArtifacts(input)).toEqual(classifyArtifacts(honest));
      }),
    );
  });

  it('finds persuasion only in Consensus, with reach between 1 and n − 1', () => {
    fc.assert(
      fc.property(panel, consensusThreshold, (input, tau) => {
        for (const v of classifyArtifacts(input, { tau })) {
          if (v.persuasion === null) continue;
          expect(v.tier).toBe('consensus');
          expect(v.persuasion.reach).toBeGreaterThanOrEqual(1);
          expect(v.persuasion.reach).toBeLessThanOrEqual(input.clusters.length - 1);
          expect(v.persuasion.persuadedClusters).not.toContain(v.authorCluster);
          expect(v.persuasion.kind !== null).toBe(input.clusters.length === 2);
        }
      }),
    );
  });

  it('calls an artifact full consensus only when every cluster approves, and then it is Consensus', () => {
    fc.assert(
      fc.property(panel, consensusThreshold, (input, tau) => {
        for (const v of classifyArtifacts(input, { tau })) {
          expect(v.fullConsensus).toBe(v.approvalSet.length === input.clusters.length);
          if (v.fullConsensus) expect(v.tier).toBe('consensus');
        }
      }),
    );
  });
});

describe('τ at and near 0.5', () => {
  const ratio = fc
    .integer({ min: 1, max: 12 })
    .chain((n) => fc.record({ n: fc.constant(n), k: fc.integer({ min: 0, max: n }) }));

  it('rejects τ = 0.5 in a preset, as the paper’s range (0.5, 1] requires', () => {
    const input = { clusters: [{ id: 'k', members: ['m'] }], artifacts: [], ballots: [] };
    expect(() => classifyArtifacts(input, { tau: 0.5 })).toThrow(/`tau`/);
  });

  it('leaves nothing Polar in tierOf at τ = 0.5, any ratio going to Consensus from 0.5 up', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, noNaN: true }), (rho) => {
        expect(tierOf(rho, 0.5)).toBe(rho >= 0.5 ? 'consensus' : 'reject');
      }),
    );
  });

  it('as τ → 0.5⁺ narrows Polar to the exact tie k/n = 1/2', () => {
    fc.assert(
      fc.property(ratio, ({ n, k }) => {
        // Any τ closer to 0.5 than 1/(2n) leaves only the exact tie between the bounds.
        const tau = 0.5 + 1 / (4 * n);
        expect(tierOf(k / n, tau) === 'polar').toBe(2 * k === n);
        expect(tierOf(k / n, 0.5)).not.toBe('polar');
      }),
    );
  });
});
