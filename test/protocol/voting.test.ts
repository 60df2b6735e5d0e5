import { describe, expect, it } from 'vitest';
import {
  classifyArtifacts,
  contextualSuperposition,
  hasPolarBand,
  resolveVotingConfig,
  tierOf,
  type Artifact,
  type ArtifactVerdict,
  type Ballot,
  type Cluster,
  type Vote,
  type VotingOptions,
} from '../../src/protocol/voting.js';

const advocates: Cluster = { id: 'advocates', members: ['a1', 'a2', 'a3'] };
const critics: Cluster = { id: 'critics', members: ['c1', 'c2', 'c3'] };

function ballots(artifactId: string, votes: Record<string, Vote>): Ballot[] {
  return Object.entries(votes).map(([voterId, vote]) => ({ artifactId, voterId, vote }));
}

/** Every listed member votes `vote` on the artifact. */
function all(artifactId: string, members: readonly string[], vote: Vote): Ballot[] {
  return members.map((voterId) => ({ artifactId, voterId, vote }));
}

function byId<A extends Artifact>(verdicts: readonly ArtifactVerdict<A>[], id: string): ArtifactVerdict<A> {
  const found = verdicts.find((v) => v.artifact.id === id);
  if (found === undefined) throw new Error(`no verdict for ${id}`);
  return found;
}

function tally(verdict: ArtifactVerdict, clusterId: string) {
  const found = verdict.clusters.find((t) => t.clusterId === clusterId);
  if (found === undefined) throw new Error(`no tally for ${clusterId}`);
  return found;
}

describe('the paper’s binary case (two clusters, τ = 0.6)', () => {
  // A fifth agent outside both clusters writes every artifact, so each cluster's three members all vote.
  const clusters = [advocates, critics];
  const artifacts = ['both', 'advocatesOnly', 'criticsOnly', 'neither'].map((id) => ({ id, authorId: 'writer' }));
  const input = {
    clusters,
    artifacts,
    ballots: [
      ...all('both', [...advocates.members, ...critics.members], 'yes'),
      ...all('advocatesOnly', advocates.members, 'yes'),
      ...all('advocatesOnly', critics.members, 'no'),
      ...all('criticsOnly', advocates.members, 'no'),
      ...all('criticsOnly', critics.members, 'yes'),
      ...all('neither', [...advocates.members, ...critics.members], 'no'),
    ],
  };
  const verdicts = classifyArtifacts(input, { tau: 0.6 });

  it('classifies approval by both clusters as Consensus with ρ = 1 and full consensus', () => {
    const v = byId(verdicts, 'both');
    expect(v.approvalSet).toEqual(['advocates', 'critics']);
    expect(v.agreementRatio).toBe(1);
    expect(v.tier).toBe('consensus');
    expect(v.fullConsensus).toBe(true);
  });

  it('classifies approval by only the advocates as Polar with ρ = 0.5', () => {
    const v = byId(verdicts, 'advocatesOnly');
    expect(v.approvalSet).toEqual(['advocates']);
    expect(v.agreementRatio).toBe(0.5);
    expect(v.tier).toBe('polar');
    expect(v.fullConsensus).toBe(false);
  });

  it('classifies approval by only the critics as Polar with ρ = 0.5', () => {
    const v = byId(verdicts, 'criticsOnly');
    expect(v.approvalSet).toEqual(['critics']);
    expect(v.agreementRatio).toBe(0.5);
    expect(v.tier).toBe('polar');
  });

  it('classifies approval by neither cluster as Reject with ρ = 0', () => {
    const v = byId(verdicts, 'neither');
    expect(v.approvalSet).toEqual([]);
    expect(v.agreementRatio).toBe(0);
    expect(v.tier).toBe('reject');
  });

  it('ranks Consensus, then Polar by score, then Reject, breaking the Polar tie by id', () => {
    expect(verdicts.map((v) => v.artifact.id)).toEqual(['both', 'advocatesOnly', 'criticsOnly', 'neither']);
  });

  it('hands the synthesizer Consensus to ground on, Polar with its approving cluster, and drops Reject', () => {
    const view = contextualSuperposition(verdicts);
    expect(view.ground.map((e) => [e.artifact.id, e.action])).toEqual([['both', 'ground']]);
    expect(view.contextualize.map((e) => [e.artifact.id, e.attribution])).toEqual([
      ['advocatesOnly', ['advocates']],
      ['criticsOnly', ['critics']],
    ]);
    expect(view.excluded).toEqual(['neither']);
  });
});

describe('the summary’s example: who agrees matters as much as how many', () => {
  // Eleven agents; the author a0 sits with the advocates, so 4 advocates and 6 critics vote.
  const clusters: Cluster[] = [
    { id: 'advocates', members: ['a0', 'a1', 'a2', 'a3', 'a4'] },
    { id: 'critics', members: ['c0', 'c1', 'c2', 'c3', 'c4', 'c5'] },
  ];
  const verdicts = classifyArtifacts({
    clusters,
    artifacts: [
      { id: 'spread', authorId: 'a0' },
      { id: 'concentrated', authorId: 'a0' },
    ],
    ballots: [
      ...ballots('spread', { a1: 'yes', a2: 'yes', a3: 'no', a4: 'no' }),
      ...ballots('spread', { c0: 'yes', c1: 'yes', c2: 'yes', c3: 'yes', c4: 'no', c5: 'no' }),
      ...ballots('concentrated', { a1: 'yes', a2: 'yes', a3: 'yes', a4: 'yes' }),
      ...ballots('concentrated', { c0: 'yes', c1: 'yes', c2: 'no', c3: 'no', c4: 'no', c5: 'no' }),
    ],
  });

  it('calls 60% approval spread across both clusters Consensus', () => {
    const v = byId(verdicts, 'spread');
    expect(v.score).toBe(0.6);
    expect(tally(v, 'advocates').rate).toBe(0.5);
    expect(tally(v, 'critics').rate).toBeCloseTo(4 / 6);
    expect(v.tier).toBe('consensus');
  });

  it('calls the same 60% concentrated in one cluster Polar', () => {
    const v = byId(verdicts, 'concentrated');
    expect(v.score).toBe(0.6);
    expect(v.approvalSet).toEqual(['advocates']);
    expect(v.tier).toBe('polar');
  });
});

describe('cluster approval (equation 1)', () => {
  it('approves when the rate equals θ exactly, because the paper’s rule is r ≥ θ', () => {
    const [v] = classifyArtifacts({
      clusters: [{ id: 'pair', members: ['p1', 'p2'] }],
      artifacts: [{ id: 'w', authorId: 'x' }],
      ballots: ballots('w', { p1: 'yes', p2: 'no' }),
    });
    expect(v?.clusters[0]?.rate).toBe(0.5);
    expect(v?.approvalSet).toEqual(['pair']);
  });

  it('needs both members of a two-member cluster only when θ is above 0.5', () => {
    const input = {
      clusters: [{ id: 'pair', members: ['p1', 'p2'] }],
      artifacts: [{ id: 'w', authorId: 'x' }],
      ballots: ballots('w', { p1: 'yes', p2: 'no' }),
    };
    expect(classifyArtifacts(input, { theta: 1 })[0]?.approvalSet).toEqual([]);
    expect(classifyArtifacts(input, { theta: 0.51 })[0]?.approvalSet).toEqual([]);
  });

  it('leaves abstentions out of the rate but counts them', () => {
    const [v] = classifyArtifacts({
      clusters: [critics],
      artifacts: [{ id: 'w', authorId: 'x' }],
      ballots: ballots('w', { c1: 'yes', c2: 'abstain', c3: 'abstain' }),
    });
    expect(v?.clusters[0]).toMatchObject({ yes: 1, no: 0, abstain: 2, rate: 1, approves: true });
    expect(v?.abstentions).toBe(2);
  });

  it('counts members who cast no ballot apart from abstentions', () => {
    const [v] = classifyArtifacts({
      clusters: [critics],
      artifacts: [{ id: 'w', authorId: 'x' }],
      ballots: ballots('w', { c1: 'no' }),
    });
    expect(v?.clusters[0]).toMatchObject({ no: 1, abstain: 0, notVoted: 2, rate: 0 });
    expect(v?.abstentions).toBe(0);
  });
});

describe('per-cluster thresholds', () => {
  const safety: Cluster = { id: 'safety', members: ['s1', 's2', 's3', 's4', 's5'] };
  const input = {
    clusters: [advocates, safety],
    artifacts: [{ id: 'w', authorId: 'x' }],
    ballots: [...all('w', advocates.members, 'yes'), ...ballots('w', { s1: 'yes', s2: 'yes', s3: 'yes', s4: 'yes', s5: 'no' })],
  };

  it('lets a near-unanimous θ for a safety cluster veto what a majority of it approves', () => {
    const [v] = classifyArtifacts(input, { clusterThresholds: { safety: 0.9 } });
    expect(tally(v!, 'safety')).toMatchObject({ rate: 0.8, threshold: 0.9, approves: false });
    expect(tally(v!, 'advocates')).toMatchObject({ threshold: 0.5, approves: true });
    expect(v?.tier).toBe('polar');
  });

  it('uses the global θ for every cluster without its own', () => {
    const [v] = classifyArtifacts(input, { theta: 0.8 });
    expect(v?.clusters.map((t) => t.threshold)).toEqual([0.8, 0.8]);
    expect(v?.tier).toBe('consensus');
  });
});

describe('weighted clusters (equation 9)', () => {
  const clusters: Cluster[] = [
    { id: 'experts', members: ['e1', 'e2'] },
    { id: 'general', members: ['g1', 'g2'] },
    { id: 'public', members: ['u1', 'u2'] },
  ];
  const weights = { experts: 2 };
  const input = {
    clusters,
    artifacts: [
      { id: 'expertsAndGeneral', authorId: 'x' },
      { id: 'generalAndPublic', authorId: 'x' },
    ],
    ballots: [
      ...all('expertsAndGeneral', ['e1', 'e2', 'g1', 'g2'], 'yes'),
      ...all('expertsAndGeneral', ['u1', 'u2'], 'no'),
      ...all('generalAndPublic', ['e1', 'e2'], 'no'),
      ...all('generalAndPublic', ['g1', 'g2', 'u1', 'u2'], 'yes'),
    ],
  };

  it('divides the approving weight by the total weight, with unlisted clusters weighing 1', () => {
    const verdicts = classifyArtifacts(input, { weights });
    expect(byId(verdicts, 'expertsAndGeneral').agreementRatio).toBe(0.75);
    expect(byId(verdicts, 'generalAndPublic').agreementRatio).toBe(0.5);
  });

  it('separates two artifacts that the unweighted ratio ties at 2/3', () => {
    const plain = classifyArtifacts(input);
    expect(plain.map((v) => [v.agreementRatio, v.tier])).toEqual([
      [2 / 3, 'consensus'],
      [2 / 3, 'consensus'],
    ]);
    const weighted = classifyArtifacts(input, { weights, tau: 0.7 });
    expect(byId(weighted, 'expertsAndGeneral').tier).toBe('consensus');
    expect(byId(weighted, 'generalAndPublic').tier).toBe('polar');
  });
});

describe('tier boundaries', () => {
  function withApprovals(clusterCount: number, approving: number, options: VotingOptions) {
    const clusters = Array.from({ length: clusterCount }, (_, i) => ({ id: `k${i}`, members: [`m${i}`] }));
    const [v] = classifyArtifacts(
      {
        clusters,
        artifacts: [{ id: 'w', authorId: 'x' }],
        ballots: clusters.map((c, i) => ({ artifactId: 'w', voterId: `m${i}`, vote: i < approving ? 'yes' : 'no' })),
      },
      options,
    );
    return v!;
  }

  it('has an empty Polar band with three clusters at τ = 0.6: every ratio is Consensus or Reject', () => {
    expect(hasPolarBand(3, 0.6)).toBe(false);
    expect([0, 1, 2, 3].map((k) => withApprovals(3, k, { tau: 0.6 }).tier)).toEqual([
      'reject',
      'reject',
      'consensus',
      'consensus',
    ]);
  });

  it('reports a Polar band where some ratio k/n falls inside it', () => {
    expect(hasPolarBand(2, 0.6)).toBe(true);
    expect(hasPolarBand(3, 0.7)).toBe(true);
    expect(hasPolarBand(1, 1)).toBe(false);
    expect(hasPolarBand(4, 0.6)).toBe(true);
    expect(hasPolarBand(5, 0.6)).toBe(false);
  });

  it('at τ = 1 counts only unanimous approval as Consensus and only none as Reject', () => {
    expect([0, 1, 2, 3].map((k) => withApprovals(3, k, { tau: 1 }).tier)).toEqual([
      'reject',
      'polar',
      'polar',
      'consensus',
    ]);
  });

  it('puts ρ = 1 − τ in Reject even when 1 − τ is not exact in floating point', () => {
    // 1 − 0.8 is 0.19999999999999996, just below 1/5.
    expect(withApprovals(5, 1, { tau: 0.8 }).tier).toBe('reject');
    expect(withApprovals(5, 4, { tau: 0.8 }).tier).toBe('consensus');
    expect(withApprovals(10, 3, { tau: 0.7 }).tier).toBe('reject');
  });

  it('treats τ = 0.5 as binary in tierOf, sending the exact tie to Consensus as Algorithm 1 does', () => {
    expect(tierOf(0.5, 0.5)).toBe('consensus');
    expect(tierOf(0.49, 0.5)).toBe('reject');
    expect(hasPolarBand(2, 0.5)).toBe(false);
  });

  it('keeps the exact tie Polar when τ is just above 0.5', () => {
    expect(tierOf(0.5, 0.5001)).toBe('polar');
    expect(tierOf(0.5, 0.51)).toBe('polar');
  });
});

describe('score and the balance bonus (equations 5 to 7)', () => {
  // p5 writes every artifact, so 4 of P and all 5 of Q vote: 9 voters.
  const clusters: Cluster[] = [
    { id: 'P', members: ['p1', 'p2', 'p3', 'p4', 'p5'] },
    { id: 'Q', members: ['q1', 'q2', 'q3', 'q4', 'q5'] },
  ];
  const p = ['p1', 'p2', 'p3', 'p4'];
  const q = ['q1', 'q2', 'q3', 'q4', 'q5'];
  const yesOf = (id: string, members: string[], yes: number) =>
    members.map((voterId, i) => ({ artifactId: id, voterId, vote: (i < yes ? 'yes' : 'no') as Vote }));
  const consensusInput = {
    clusters,
    artifacts: ['x', 'y', 'z'].map((id) => ({ id, authorId: 'p5' })),
    ballots: [
      ...yesOf('x', p, 4), // r = 1, 0.6 → σ = 0.2
      ...yesOf('x', q, 3),
      ...yesOf('y', p, 2), // r = 0.5, 1 → σ = 0.25
      ...yesOf('y', q, 5),
      ...yesOf('z', p, 3), // r = 0.75, 0.8 → σ = 0.025
      ...yesOf('z', q, 4),
    ],
  };

  it('scores approval among all non-author voters regardless of cluster', () => {
    const verdicts = classifyArtifacts(consensusInput);
    for (const v of verdicts) {
      expect(v.score).toBe(7 / 9);
      expect(v.tier).toBe('consensus');
    }
  });

  it('without the bonus ranks equal scores by artifact id', () => {
    const verdicts = classifyArtifacts(consensusInput);
    expect(verdicts.map((v) => v.artifact.id)).toEqual(['x', 'y', 'z']);
    expect(verdicts.every((v) => v.balancedScore === null)).toBe(true);
  });

  it('with the bonus multiplies the score by 1 − σ and ranks the most balanced first', () => {
    const verdicts = classifyArtifacts(consensusInput, { balanceBonus: true });
    expect(verdicts.map((v) => v.artifact.id)).toEqual(['z', 'x', 'y']);
    const x = byId(verdicts, 'x');
    expect(x.spread).toBeCloseTo(0.2, 12);
    expect(x.balancedScore).toBeCloseTo((7 / 9) * 0.8, 12);
    expect(byId(verdicts, 'y').balancedScore).toBeCloseTo((7 / 9) * 0.75, 12);
    expect(byId(verdicts, 'z').balancedScore).toBeCloseTo((7 / 9) * 0.975, 12);
  });

  it('keeps ranking Polar artifacts by plain score with the bonus on', () => {
    const verdicts = classifyArtifacts(
      {
        clusters,
        artifacts: [
          { id: 'lopsided', authorId: 'p5' },
          { id: 'even', authorId: 'p5' },
        ],
        ballots: [
          ...yesOf('lopsided', p, 4), // score 4/9, σ = 0.5, balanced 2/9
          ...yesOf('lopsided', q, 0),
          ...yesOf('even', p, 2), // score 3/9, σ = 0.15, balanced 0.283
          ...yesOf('even', q, 1),
        ],
      },
      { balanceBonus: true },
    );
    expect(verdicts.map((v) => [v.artifact.id, v.tier])).toEqual([
      ['lopsided', 'polar'],
      ['even', 'polar'],
    ]);
    expect(byId(verdicts, 'even').balancedScore!).toBeGreaterThan(byId(verdicts, 'lopsided').balancedScore!);
    expect(verdicts.map((v) => v.rankScore)).toEqual([4 / 9, 3 / 9]);
  });

  it('takes σ over the clusters that have a rate only', () => {
    const [v] = classifyArtifacts(
      {
        clusters: [advocates, critics],
        artifacts: [{ id: 'w', authorId: 'x' }],
        ballots: [...ballots('w', { a1: 'yes', a2: 'no' }), ...all('w', critics.members, 'abstain')],
      },
      { balanceBonus: true },
    );
    expect(v?.spread).toBe(0);
    expect(v?.balancedScore).toBe(0.5);
  });
});

describe('persuasion (section 6)', () => {
  const three: Cluster[] = [
    { id: 'A', members: ['a1', 'a2', 'a3'] },
    { id: 'B', members: ['b1', 'b2'] },
    { id: 'C', members: ['c1', 'c2'] },
  ];

  it('marks a Consensus artifact approved by other clusters as persuasive, with its reach', () => {
    const [v] = classifyArtifacts({
      clusters: three,
      artifacts: [{ id: 'w', authorId: 'a1' }],
      ballots: all('w', ['a2', 'a3', 'b1', 'b2', 'c1', 'c2'], 'yes'),
    });
    expect(v?.authorCluster).toBe('A');
    expect(v?.persuasion).toEqual({ persuadedClusters: ['B', 'C'], reach: 2, kind: null });
  });

  it('counts reach without the author’s own cluster even when that cluster did not approve', () => {
    const [v] = classifyArtifacts({
      clusters: three,
      artifacts: [{ id: 'w', authorId: 'a1' }],
      ballots: [...all('w', ['a2', 'a3'], 'no'), ...all('w', ['b1', 'b2', 'c1', 'c2'], 'yes')],
    });
    expect(v?.tier).toBe('consensus');
    expect(v?.persuasion?.reach).toBe(2);
  });

  it('does not call a Consensus artifact persuasive when only its author’s cluster approved', () => {
    const [v] = classifyArtifacts({
      clusters: [{ id: 'A', members: ['a1', 'a2', 'a3'] }],
      artifacts: [{ id: 'w', authorId: 'a1' }],
      ballots: all('w', ['a2', 'a3'], 'yes'),
    });
    expect(v?.tier).toBe('consensus');
    expect(v?.persuasion).toBeNull();
  });

  it('does not call a Polar artifact persuasive even when another cluster approved it', () => {
    const [v] = classifyArtifacts({
      clusters: [advocates, critics],
      artifacts: [{ id: 'w', authorId: 'a1' }],
      ballots: [...all('w', ['a2', 'a3'], 'no'), ...all('w', critics.members, 'yes')],
    });
    expect(v?.tier).toBe('polar');
    expect(v?.persuasion).toBeNull();
  });

  it('labels an advocate’s artifact that critics accept an accelerator and the reverse a mitigator', () => {
    const verdicts = classifyArtifacts({
      clusters: [advocates, critics],
      artifacts: [
        { id: 'fromAdvocate', authorId: 'a1' },
        { id: 'fromCritic', authorId: 'c1' },
      ],
      ballots: [
        ...all('fromAdvocate', ['a2', 'a3', ...critics.members], 'yes'),
        ...all('fromCritic', ['c2', 'c3', ...advocates.members], 'yes'),
      ],
    });
    expect(byId(verdicts, 'fromAdvocate').persuasion).toEqual({
      persuadedClusters: ['critics'],
      reach: 1,
      kind: 'accelerator',
    });
    expect(byId(verdicts, 'fromCritic').persuasion?.kind).toBe('mitigator');
  });

  it('takes C⁺ from advocateCluster when given, else from the first cluster listed', () => {
    const input = {
      clusters: [critics, advocates],
      artifacts: [{ id: 'w', authorId: 'a1' }],
      ballots: all('w', ['a2', 'a3', ...critics.members], 'yes'),
    };
    expect(classifyArtifacts(input)[0]?.persuasion?.kind).toBe('mitigator');
    expect(classifyArtifacts(input, { advocateCluster: 'advocates' })[0]?.persuasion?.kind).toBe('accelerator');
  });

  it('emphasises persuasive artifacts in the superposition and notes dissenting clusters', () => {
    const verdicts = classifyArtifacts({
      clusters: three,
      artifacts: [
        { id: 'bridge', authorId: 'a1' },
        { id: 'plain', authorId: 'x' },
      ],
      ballots: [
        ...all('bridge', ['a2', 'a3', 'b1', 'b2'], 'yes'),
        ...all('bridge', ['c1', 'c2'], 'no'),
        ...all('plain', ['a1', 'a2', 'a3', 'b1', 'b2', 'c1', 'c2'], 'yes'),
      ],
    });
    const view = contextualSuperposition(verdicts);
    expect(view.ground.map((e) => [e.artifact.id, e.action, e.isPersuasive, e.fullConsensus])).toEqual([
      ['plain', 'ground', false, true],
      ['bridge', 'emphasize', true, false],
    ]);
    expect(view.ground[1]?.dissentingClusters).toEqual(['C']);
    expect(view.ground[1]?.attribution).toEqual([]);
  });
});

describe('the cases the paper leaves open', () => {
  it('ignores a ballot the author casts on their own artifact', () => {
    const base = {
      clusters: [advocates, critics],
      artifacts: [{ id: 'w', authorId: 'a1' }],
      ballots: [...ballots('w', { a2: 'no', a3: 'no' }), ...all('w', critics.members, 'yes')],
    };
    const withSelfVote = { ...base, ballots: [...base.ballots, { artifactId: 'w', voterId: 'a1', vote: 'yes' as const }] };
    const [plain] = classifyArtifacts(base);
    const [selfVoted] = classifyArtifacts(withSelfVote);
    expect(selfVoted).toEqual(plain);
    expect(tally(selfVoted!, 'advocates')).toMatchObject({ yes: 0, no: 2, rate: 0, isAuthorCluster: true });
    expect(selfVoted?.score).toBe(0.6);
  });

  it('rates the author’s cluster from its other members', () => {
    const [v] = classifyArtifacts({
      clusters: [advocates],
      artifacts: [{ id: 'w', authorId: 'a1' }],
      ballots: ballots('w', { a2: 'yes', a3: 'no' }),
    });
    expect(v?.clusters[0]).toMatchObject({ yes: 1, no: 1, notVoted: 0, rate: 0.5, approves: true });
  });

  it('leaves a cluster whose only member wrote the artifact out of ρ, so the other cluster decides', () => {
    const [v] = classifyArtifacts({
      clusters: [{ id: 'solo', members: ['s1'] }, critics],
      artifacts: [{ id: 'w', authorId: 's1' }],
      ballots: all('w', critics.members, 'yes'),
    });
    expect(v?.unratedClusters).toEqual(['solo']);
    expect(v?.agreementRatio).toBe(1);
    expect(v?.tier).toBe('consensus');
    expect(v?.fullConsensus).toBe(false);
    expect(v?.persuasion).toEqual({ persuadedClusters: ['critics'], reach: 1, kind: 'accelerator' });
  });

  it('counts a cluster whose voters all abstained in ρ as a cluster that does not approve', () => {
    const verdicts = classifyArtifacts({
      clusters: [advocates, critics, { id: 'judges', members: ['j1', 'j2'] }],
      artifacts: [
        { id: 'silent', authorId: 'x' },
        { id: 'noJudges', authorId: 'x' },
      ],
      ballots: [
        ...all('silent', [...advocates.members, ...critics.members], 'yes'),
        ...all('silent', ['j1', 'j2'], 'abstain'),
        ...all('noJudges', advocates.members, 'yes'),
        ...all('noJudges', critics.members, 'no'),
      ],
    });
    const silent = byId(verdicts, 'silent');
    expect(silent).toMatchObject({ agreementRatio: 2 / 3, tier: 'consensus', fullConsensus: false, abstentions: 2 });
    expect(silent.unratedClusters).toEqual(['judges']);
    expect(silent.abstainingClusters).toEqual(['judges']);
    // The judges cast nothing at all here: still one cluster of three, so 1/3 and Reject.
    const noJudges = byId(verdicts, 'noJudges');
    expect(noJudges).toMatchObject({ agreementRatio: 1 / 3, tier: 'reject' });
    expect(noJudges.abstainingClusters).toEqual(['judges']);
  });

  it('leaves out of ρ only a cluster whose sole member is the author', () => {
    const [v] = classifyArtifacts({
      clusters: [advocates, critics, { id: 'solo', members: ['s'] }],
      artifacts: [{ id: 'own', authorId: 's' }],
      ballots: [...all('own', [...advocates.members, ...critics.members], 'yes')],
    });
    expect(v).toMatchObject({ agreementRatio: 1, tier: 'consensus', unratedClusters: ['solo'], abstainingClusters: [] });
  });

  it('weighs a silent cluster in the denominator', () => {
    const [v] = classifyArtifacts(
      {
        clusters: [advocates, critics, { id: 'judges', members: ['j1'] }],
        artifacts: [{ id: 'w', authorId: 'x' }],
        ballots: [...all('w', advocates.members, 'yes'), ...all('w', critics.members, 'no')],
      },
      { weights: { advocates: 1, critics: 3, judges: 100 } },
    );
    expect(v?.agreementRatio).toBe(1 / 104);
  });

  it('rejects an artifact with no ballots at all, with ρ = 0 and score 0', () => {
    const [v] = classifyArtifacts({
      clusters: [advocates, critics],
      artifacts: [{ id: 'w', authorId: 'a1' }],
      ballots: [],
    });
    expect(v).toMatchObject({
      agreementRatio: 0,
      tier: 'reject',
      fullConsensus: false,
      score: 0,
      yes: 0,
      no: 0,
      abstentions: 0,
      spread: null,
      persuasion: null,
    });
    expect(v?.unratedClusters).toEqual(['advocates', 'critics']);
  });

  it('rejects an artifact every voter abstained on, and counts the abstentions', () => {
    const [v] = classifyArtifacts({
      clusters: [advocates, critics],
      artifacts: [{ id: 'w', authorId: 'a1' }],
      ballots: all('w', ['a2', 'a3', ...critics.members], 'abstain'),
    });
    expect(v).toMatchObject({ agreementRatio: 0, tier: 'reject', score: 0, abstentions: 5 });
  });

  it('counts a voter outside every cluster in the score but in no cluster rate', () => {
    const [v] = classifyArtifacts({
      clusters: [critics],
      artifacts: [{ id: 'w', authorId: 'c1' }],
      ballots: ballots('w', { c2: 'yes', c3: 'yes', guest: 'no' }),
    });
    expect(v?.clusters[0]?.rate).toBe(1);
    expect(v?.score).toBeCloseTo(2 / 3);
  });

  it('finds no persuasion for an author outside every cluster', () => {
    const [v] = classifyArtifacts({
      clusters: [advocates, critics],
      artifacts: [{ id: 'w', authorId: 'guest' }],
      ballots: all('w', [...advocates.members, ...critics.members], 'yes'),
    });
    expect(v).toMatchObject({ authorCluster: null, tier: 'consensus', fullConsensus: true, persuasion: null });
  });

  it('lets a later ballot from the same voter replace the earlier one', () => {
    const [v] = classifyArtifacts({
      clusters: [critics],
      artifacts: [{ id: 'w', authorId: 'x' }],
      ballots: [
        { artifactId: 'w', voterId: 'c1', vote: 'no' },
        { artifactId: 'w', voterId: 'c1', vote: 'yes' },
      ],
    });
    expect(v?.clusters[0]).toMatchObject({ yes: 1, no: 0, notVoted: 2 });
  });
});

describe('input and option checks', () => {
  const input = { clusters: [advocates, critics], artifacts: [{ id: 'w', authorId: 'a1' }], ballots: [] };

  it('fills in the paper’s defaults', () => {
    expect(resolveVotingConfig()).toEqual({
      theta: 0.5,
      tau: 0.6,
      clusterThresholds: {},
      weights: null,
      balanceBonus: false,
      advocateCluster: null,
    });
  });

  it.each([
    [{ theta: 0 }, /`theta`.*got 0/],
    [{ theta: 1.01 }, /`theta`/],
    [{ theta: Number.NaN }, /`theta`.*NaN/],
    [{ tau: 0.5 }, /`tau` must be greater than 0.5.*got 0.5/],
    [{ tau: 1.2 }, /`tau`/],
    [{ clusterThresholds: { critics: 0 } }, /`clusterThresholds.critics`/],
    [{ clusterThresholds: { critics: 2 } }, /`clusterThresholds.critics`/],
    [{ weights: { critics: 0 } }, /`weights.critics`/],
    [{ weights: { critics: -1 } }, /`weights.critics`/],
    [{ weights: { critics: Number.POSITIVE_INFINITY } }, /`weights.critics`/],
  ] satisfies [VotingOptions, RegExp][])('rejects %o with an error naming the field', (options, message) => {
    expect(() => resolveVotingConfig(options)).toThrow(message);
    expect(() => classifyArtifacts(input, options)).toThrow(message);
  });

  it('rejects per-cluster settings for clusters that do not exist', () => {
    expect(() => classifyArtifacts(input, { clusterThresholds: { critcs: 0.9 } })).toThrow(/`clusterThresholds.critcs`/);
    expect(() => classifyArtifacts(input, { weights: { judges: 2 } })).toThrow(/`weights.judges`/);
    expect(() => classifyArtifacts(input, { advocateCluster: 'judges' })).toThrow(/`advocateCluster`/);
  });

  it('does not mistake a cluster called `constructor` for a configured one', () => {
    const [v] = classifyArtifacts(
      {
        clusters: [{ id: 'constructor', members: ['k1'] }],
        artifacts: [{ id: 'w', authorId: 'x' }],
        ballots: ballots('w', { k1: 'yes' }),
      },
      { weights: {} },
    );
    expect(v?.clusters[0]).toMatchObject({ threshold: 0.5, weight: 1, approves: true });
  });

  it('rejects overlapping, duplicate or empty clusters', () => {
    expect(() => classifyArtifacts({ ...input, clusters: [advocates, { id: 'b', members: ['a1'] }] })).toThrow(/`a1`/);
    expect(() => classifyArtifacts({ ...input, clusters: [advocates, advocates] })).toThrow(/twice/);
    expect(() => classifyArtifacts({ ...input, clusters: [{ id: 'empty', members: [] }] })).toThrow(/no members/);
    expect(() => classifyArtifacts({ ...input, clusters: [] })).toThrow(/`clusters`/);
  });

  it('rejects duplicate artifacts and ballots that name an unknown artifact or vote', () => {
    expect(() => classifyArtifacts({ ...input, artifacts: [...input.artifacts, ...input.artifacts] })).toThrow(/twice/);
    expect(() => classifyArtifacts({ ...input, ballots: ballots('nope', { c1: 'yes' }) })).toThrow(/`nope`/);
    const odd = [{ artifactId: 'w', voterId: 'c1', vote: 'maybe' as unknown as Vote }];
    expect(() => classifyArtifacts({ ...input, ballots: odd })).toThrow(/`maybe`/);
  });

  it('rejects τ outside [0.5, 1] in tierOf and a non-whole cluster count in hasPolarBand', () => {
    expect(() => tierOf(0.5, 0.49)).toThrow(/`tau`/);
    expect(() => hasPolarBand(0, 0.6)).toThrow(/`clusterCount`/);
  });

  it('carries extra artifact fields through to the verdicts', () => {
    const [v] = classifyArtifacts({ ...input, artifacts: [{ id: 'w', authorId: 'a1', text: 'Ship it.' }] });
    expect(v?.artifact.text).toBe('Ship it.');
  });
});
