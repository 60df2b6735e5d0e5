import { afterEach, describe, expect, it } from 'vitest';
import type { PresetInput } from '../../src/config/preset-schema.js';
import { presetSchema } from '../../src/config/preset-schema.js';
import type { DebateEvent } from '../../src/engine/events.js';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { InterruptedError } from '../../src/errors.js';
import { REVIEW_CLOSE, REVIEW_OPEN } from '../../src/protocol/vote-prompts.js';
import { renderCard } from '../../src/render/card.js';
import { debateDocument } from '../../src/render/document.js';
import { liveRenderer } from '../../src/render/live.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import { storedEvents } from '../../src/render/replay.js';
import { type SimHandle, type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { agentOf, reply, roundOf, scriptedResponder, simModels, stageOf } from '../helpers/panel.js';

// Two clusters of three. Round 0 converges at once, so the final positions are the openings.
const PRO = ['p1', 'p2', 'p3'];
const CON = ['k1', 'k2', 'k3'];
const TEXT: Record<string, string> = {
  p1: 'Adopt it in stages, measured at each step.',
  p2: 'Adopt it fully this quarter.',
  p3: 'Adopt it everywhere today without review.',
  k1: 'Keep the current system and build an escape hatch first.',
  k2: 'Keep the current system until the numbers justify a change.',
  k3: 'Ban the change for good.',
};
/** Who says YES to whose position; everyone else says NO. */
const APPROVE: Record<string, string[]> = {
  p1: ['p2', 'k1', 'k2'], // pro 1/2, con 2/3: Consensus, an accelerator
  k1: ['p1', 'p2', 'k2'], // pro 2/3, con 1/2: Consensus, a mitigator
  p2: ['p1', 'p3'], // pro only: Polar
  k2: ['k1', 'k3', 'p1'], // con only (pro 1/3): Polar
  p3: [], // Reject
  k3: [], // Reject
};

let sim: SimHandle | null = null;
let store: Store | null = null;

afterEach(async () => {
  store?.close();
  store = null;
  await sim?.close();
  sim = null;
});

function votingPreset(voting: Record<string, unknown> = {}, overrides: Partial<PresetInput> = {}) {
  return presetSchema.parse({
    name: 'vote-panel',
    agents: [...PRO, ...CON].map((id, i) => ({
      id,
      cluster: PRO.includes(id) ? 'pro' : 'con',
      model: `model-${i % 3}:1b`,
      persona: `You are agent ${id}.`,
    })),
    judge: { model: 'judge:1b' },
    synthesizer: { model: 'synth:1b' },
    protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 10 },
    voting: { advocateCluster: 'pro', ...voting },
    ...overrides,
  });
}

const isVote = (req: SimRequest): boolean => 'vote' in ((req.format as { properties?: object } | null)?.properties ?? {});
const isRefine = (req: SimRequest): boolean => 'refinedPosition' in ((req.format as { properties?: object } | null)?.properties ?? {});
const underReview = (req: SimRequest): string => {
  // The first user message: a repair request appends more after it.
  const text = req.messages.find((m) => m.content.includes(REVIEW_OPEN))!.content;
  return text.slice(text.indexOf(REVIEW_OPEN) + REVIEW_OPEN.length, text.indexOf(REVIEW_CLOSE)).trim();
};
/** The author of a position, from its text (refined text is `<original> (refined)`). */
const authorOfText = (text: string): string => Object.keys(TEXT).find((id) => text.startsWith(TEXT[id]!))!;
const voteReply = (yes: boolean): string => JSON.stringify({ reason: yes ? 'holds up' : 'does not hold up', vote: yes ? 'YES' : 'NO' });

/** The table above, unless `override` answers first. */
function panelResponder(override?: (req: SimRequest) => SimReply | undefined) {
  return scriptedResponder([0.95], (req) => {
    const custom = override?.(req);
    if (custom !== undefined) return custom;
    const agent = agentOf(req)!;
    if (stageOf(req) === 'opening') return reply.opening(agent, TEXT[agent]);
    if (isVote(req)) return voteReply(APPROVE[authorOfText(underReview(req))]!.includes(agent));
    if (isRefine(req)) return JSON.stringify({ refinedPosition: `${TEXT[agent]} (refined)`, confidence: 80 });
    return undefined;
  });
}

async function run(preset: ReturnType<typeof votingPreset>, override?: (req: SimRequest) => SimReply | undefined) {
  const script = panelResponder(override);
  sim = await startSimulator({ models: simModels(preset), respond: script.respond });
  store = openStore(':memory:');
  const events: DebateEvent[] = [];
  const result = await runDebate({ question: 'Should we adopt it?', preset, host: sim.url, recorder: recorder(store), listeners: [(e) => events.push(e)] });
  return { result, seen: script.seen, events, stored: store.getDebate(result.id) };
}

function replayText(events: DebateEvent[]): string {
  let text = '';
  const out = { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream;
  const render = liveRenderer(out, { color: false, live: false, columns: 120 });
  for (const event of events) render(event);
  render.close();
  return text;
}

describe('the cluster vote stage', () => {
  it("puts an agent's own last position to the vote, never the orchestrator's fallback in its seat", async () => {
    const preset = votingPreset();
    // k3's host fails its round-2 critique on every resend: the synthesizer's model fills the seat.
    const script = panelResponder((req) => {
      // The judge never sees convergence, so both critique rounds run.
      if (stageOf(req) === 'judge') return reply.judge(0.3, req);
      if (stageOf(req) !== 'critique' || agentOf(req) !== 'k3' || roundOf(req) !== 2) return undefined;
      if (req.model === 'synth:1b') return reply.critique('k3', 'ORCHESTRATOR FALLBACK TEXT');
      return { error: 'llama runner process has terminated: exit status 2', status: 500 };
    });
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    store = openStore(':memory:');
    const events: DebateEvent[] = [];
    const result = await runDebate({ question: 'Should we adopt it?', preset, host: sim.url, recorder: recorder(store), listeners: [(e) => events.push(e)], retryDelaysMs: [5, 5] });
    const stored = store.getDebate(result.id);
    expect(stored.calls.some((c) => c.stage === 'fallback' && c.agentId === 'k3' && c.round === 2 && c.status === 'ok')).toBe(true);
    const artifacts = events.flatMap((e) => (e.type === 'vote.artifacts' && e.iteration === 0 ? e.artifacts : []));
    expect(artifacts.find((a) => a.authorId === 'k3')).toMatchObject({ sourceRound: 1 });
    for (const req of script.seen.filter(isVote)) expect(underReview(req)).not.toContain('ORCHESTRATOR FALLBACK TEXT');
  });

  it('has every agent vote once on every other final position, without learning who wrote it', async () => {
    const { seen } = await run(votingPreset());
    const votes = seen.filter(isVote);
    expect(votes).toHaveLength(30);
    const pairs = votes.map((req) => `${agentOf(req)}>${authorOfText(underReview(req))}`);
    expect(new Set(pairs).size).toBe(30);
    for (const req of votes) {
      const author = authorOfText(underReview(req));
      expect(author).not.toBe(agentOf(req));
      expect(req.messages.at(-1)!.content).not.toContain(author);
      expect(req.messages[0]!.content).toBe(`You are agent ${agentOf(req)}.`);
    }
  });

  it('stores every vote with its cluster, raw reply, parse status and a link to its call, and the tiers', async () => {
    const { stored } = await run(votingPreset());
    const [iteration] = stored.voting!.iterations;
    expect(stored.voting!.iterations).toHaveLength(1);
    expect(iteration!.artifacts.map((a) => [a.artifactId, a.origin, a.sourceRound, a.text])).toEqual(
      [...PRO, ...CON].map((id) => [id, 'final', 0, TEXT[id]]),
    );
    expect(iteration!.ballots).toHaveLength(30);
    for (const b of iteration!.ballots) {
      expect(b.vote).toBe(APPROVE[b.artifactId]!.includes(b.voterId) ? 'yes' : 'no');
      expect(b.voterCluster).toBe(PRO.includes(b.voterId) ? 'pro' : 'con');
      expect(b.parseStatus).toBe('ok');
      expect(JSON.parse(b.raw)).toMatchObject({ vote: b.vote.toUpperCase() });
      const call = stored.calls.find((c) => c.id === b.callId)!;
      expect(call).toMatchObject({ stage: 'vote', agentId: b.voterId, raw: b.raw });
      expect(call.messages.at(-1)!.content).toContain(TEXT[b.artifactId]);
    }
    expect(iteration!.tiers.map((t) => [t.artifactId, t.tier, t.action])).toEqual([
      ['k1', 'consensus', 'emphasize'],
      ['p1', 'consensus', 'emphasize'],
      ['k2', 'polar', 'contextualize'],
      ['p2', 'polar', 'contextualize'],
      ['k3', 'reject', 'exclude'],
      ['p3', 'reject', 'exclude'],
    ]);
    const byId = new Map(iteration!.tiers.map((t) => [t.artifactId, t]));
    expect(byId.get('p1')).toMatchObject({ approvalSet: ['pro', 'con'], persuasionKind: 'accelerator', persuadedClusters: ['con'], score: 0.6, fullConsensus: true });
    expect(byId.get('k1')).toMatchObject({ persuasionKind: 'mitigator', persuadedClusters: ['pro'] });
    expect(byId.get('k2')).toMatchObject({ approvalSet: ['con'], agreementRatio: 0.5, persuasive: false });
    expect(byId.get('p3')).toMatchObject({ approvalSet: [], agreementRatio: 0, score: 0 });
  });

  it('shows the tiers and approval sets on the card, and the vote matrix in show --json, show and replay', async () => {
    const { stored, events } = await run(votingPreset());
    const card = renderCard(stored);
    expect(card).toContain('CLUSTER VOTE');
    expect(card).toMatch(/CONSENSUS\n {4}★ k1 \(con\) · approved by pro, con/);
    expect(card).toContain('★ p1 (pro) · approved by pro, con');
    expect(card).toMatch(/POLAR\n {4}- k2 \(con\) · approved by con/);
    expect(card).toMatch(/REJECT\n {4}- k3 \(con\) · approved by no cluster/);
    expect(card.indexOf('CONSENSUS')).toBeLessThan(card.indexOf('POLAR'));
    expect(card.indexOf('POLAR')).toBeLessThan(card.indexOf('REJECT'));

    const doc = JSON.parse(JSON.stringify(debateDocument(stored))) as {
      voting: {
        clusters: { id: string; members: string[] }[];
        iterations: { matrix: { voters: string[]; artifacts: string[]; votes: (string | null)[][] }; tiers: { tier: string }[]; abstentions: number }[];
        superposition: { ground: { artifact: { artifactId: string } }[]; contextualize: unknown[]; excluded: string[] };
      };
    };
    expect(doc.voting.clusters).toEqual([
      { id: 'pro', members: PRO },
      { id: 'con', members: CON },
    ]);
    const matrix = doc.voting.iterations[0]!.matrix;
    expect(matrix.voters).toEqual([...PRO, ...CON]);
    expect(matrix.artifacts).toEqual([...PRO, ...CON]);
    matrix.voters.forEach((voter, r) =>
      matrix.artifacts.forEach((artifact, c) =>
        expect(matrix.votes[r]![c]).toBe(voter === artifact ? null : APPROVE[artifact]!.includes(voter) ? 'yes' : 'no'),
      ),
    );
    expect(doc.voting.superposition.ground.map((g) => g.artifact.artifactId)).toEqual(['k1', 'p1']);
    expect(doc.voting.superposition.excluded).toEqual(['k3', 'p3']);

    const markdown = renderMarkdown(stored);
    expect(markdown).toContain('## Cluster vote');
    expect(markdown).toMatch(/\np1 \(pro\) +· +Y +N +Y +Y +N\n/);
    expect(markdown).toMatch(/1\. \*\*CONSENSUS\*\* \(emphasize\) · k1 \(con\)/);

    const live = replayText(events);
    const replay = replayText(storedEvents(stored));
    for (const text of [live, replay]) {
      expect(text).toContain('Cluster vote on the final positions · 6 positions, 30 votes');
      expect(text).toMatch(/p1 \(pro\) +· +Y +N +Y +Y +N/);
      expect(text).toMatch(/REJECT +p3 \(pro\) · approved by no cluster/);
    }
    expect(storedEvents(stored).filter((e) => e.type === 'vote.cast')).toHaveLength(30);
    const order = storedEvents(stored).map((e) => e.type);
    expect(order.indexOf('debate.exit')).toBeLessThan(order.indexOf('vote.artifacts'));
    expect(order.lastIndexOf('vote.tiers')).toBeLessThan(order.indexOf('synthesis.finished'));
  });

  it('gives the synthesizer Consensus to ground on, Polar with its approving cluster, and leaves Reject out', async () => {
    const { seen } = await run(votingPreset());
    const prompt = seen.find((r) => stageOf(r) === 'synthesis')!.messages.at(-1)!.content;
    const section = prompt.slice(prompt.indexOf('Cluster vote on the final positions.'));
    expect(section).toContain('pro (p1, p2, p3); con (k1, k2, k3)');
    expect(section).toContain(`[by k1; approved by pro and con; EMPHASISE] ${TEXT.k1}`);
    expect(section).toContain(`[by p1; approved by pro and con; EMPHASISE] ${TEXT.p1}`);
    expect(section).toContain(`[by p2; approved by pro] ${TEXT.p2}`);
    expect(section).toContain(`[by k2; approved by con] ${TEXT.k2}`);
    expect(section).toContain('EXCLUDED: the final positions of k3, p3 were rejected');
    expect(section).not.toContain(TEXT.k3);
    expect(section).not.toContain(TEXT.p3);
    expect(section.indexOf('GROUND')).toBeLessThan(section.indexOf('POLAR'));
  });

  it('counts an unusable reply after the repair and a failed call as abstentions, left out of the rates', async () => {
    let k2First = true;
    const { stored, events, seen } = await run(votingPreset(), (req) => {
      if (!isVote(req)) return undefined;
      const author = authorOfText(underReview(req));
      if (agentOf(req) === 'k3') return 'I would rather not say.';
      if (agentOf(req) === 'p3' && author === 'p1') return { error: 'model runner has unexpectedly stopped', status: 500 };
      if (agentOf(req) === 'k2' && author === 'p2' && k2First) {
        k2First = false;
        return JSON.stringify({ vote: 'Maybe' });
      }
      return undefined;
    });
    const ballots = stored.voting!.iterations[0]!.ballots;
    const k3 = ballots.filter((b) => b.voterId === 'k3');
    expect(k3).toHaveLength(5);
    for (const b of k3) {
      expect(b).toMatchObject({ vote: 'abstain', parseStatus: 'invalid', raw: 'I would rather not say.', attempts: 2, reason: null });
      expect(b.error).toContain('invalid after one repair');
      expect(b.firstCallId).not.toBeNull();
    }
    expect(seen.filter((r) => isVote(r) && agentOf(r) === 'k3')).toHaveLength(10);
    const failed = ballots.find((b) => b.voterId === 'p3' && b.artifactId === 'p1')!;
    // The crashed runner was sent the ballot three times (one send, two resends), each recorded.
    expect(failed).toMatchObject({ vote: 'abstain', parseStatus: 'failed', raw: '', attempts: 3 });
    expect(failed.error).toContain('unexpectedly stopped');
    expect(stored.calls.find((c) => c.id === failed.callId)!.status).toBe('error');
    const repaired = ballots.find((b) => b.voterId === 'k2' && b.artifactId === 'p2')!;
    expect(repaired).toMatchObject({ vote: 'no', parseStatus: 'ok', attempts: 2 });
    expect(stored.calls.find((c) => c.id === repaired.firstCallId)!.status).toBe('invalid');

    const tiers = stored.voting!.iterations[0]!.tiers;
    const p1 = tiers.find((t) => t.artifactId === 'p1')!;
    // Without the abstentions p1 has pro 1/1 (p2) and con 2/2 (k1, k2); counted as NO they would be 1/2 and 2/3.
    expect(p1.clusters).toEqual([
      expect.objectContaining({ clusterId: 'pro', yes: 1, no: 0, abstain: 1, rate: 1 }),
      expect.objectContaining({ clusterId: 'con', yes: 2, no: 0, abstain: 1, rate: 1 }),
    ]);
    expect(p1).toMatchObject({ abstentions: 2, score: 1 });
    expect(tiers.reduce((n, t) => n + t.abstentions, 0)).toBe(6);

    const doc = debateDocument(stored) as { voting: { iterations: { abstentions: number }[] } };
    expect(doc.voting.iterations[0]!.abstentions).toBe(6);
    expect(renderCard(stored)).toContain('30 votes, 6 abstentions');
    expect(replayText(events)).toContain('! k3 abstains on p1\'s position (invalid');
    expect(replayText(storedEvents(stored))).toContain('6 abstentions: counted, left out of the rates');
    expect(renderMarkdown(stored)).toMatch(/- p3 on p1: failed \(.*model runner has unexpectedly stopped\)/);
  });

  it('counts a cluster whose every vote call failed in ρ as abstaining, and every view says so', async () => {
    const { stored, events } = await run(votingPreset(), (req) =>
      isVote(req) && CON.includes(agentOf(req)!) ? { error: 'model runner has unexpectedly stopped', status: 500 } : undefined,
    );
    const tiers = stored.voting!.iterations[0]!.tiers;
    const p1 = tiers.find((t) => t.artifactId === 'p1')!;
    // pro approves p1 (p2 says yes, p3 no: 1/2 ≥ θ); con cast nothing usable, so ρ = 1/2, not 1.
    expect(p1).toMatchObject({ approvalSet: ['pro'], agreementRatio: 0.5, tier: 'polar', unratedClusters: ['con'] });
    for (const t of tiers) expect(t.agreementRatio).toBeLessThanOrEqual(0.5);
    expect(tiers.filter((t) => t.tier === 'consensus')).toEqual([]);
    const said = 'con abstained (counted in ρ, not approving)';
    expect(renderCard(stored).replace(/\s+/g, ' ')).toContain(said);
    expect(renderMarkdown(stored)).toContain(said);
    expect(replayText(events)).toContain(said);
    expect(replayText(storedEvents(stored))).toContain(said);
    const doc = debateDocument(stored) as { voting: { iterations: { tiers: { abstainingClusters: string[] }[] }[] } };
    for (const t of doc.voting.iterations[0]!.tiers) expect(t.abstainingClusters).toEqual(['con']);
  });

  it('refines with the Consensus positions as common ground and votes again, up to the round limit', async () => {
    const { stored, seen } = await run(votingPreset({ iterate: true, maxIterations: 2 }));
    const refines = seen.filter(isRefine);
    expect(refines).toHaveLength(12);
    for (const req of refines) {
      const content = req.messages.at(-1)!.content;
      const prompt = content.slice(content.indexOf('survived scrutiny'));
      expect(prompt).toContain(TEXT.k1);
      expect(prompt).toContain(TEXT.p1);
      expect(prompt).not.toContain(TEXT.p3);
    }
    const iterations = stored.voting!.iterations;
    expect(iterations.map((i) => i.iteration)).toEqual([0, 1, 2]);
    expect(iterations[2]!.artifacts.every((a) => a.origin === 'refined' && a.sourceRound === null && a.text.endsWith('(refined)'))).toBe(true);
    expect(iterations[2]!.ballots).toHaveLength(30);
    expect(iterations[2]!.tiers.map((t) => t.tier)).toEqual(['consensus', 'consensus', 'polar', 'polar', 'reject', 'reject']);
    expect(stored.calls.filter((c) => c.stage === 'refine')).toHaveLength(12);
    expect(renderCard(stored)).toContain('CLUSTER VOTE (after 2 refinements)');
    const synthesis = seen.find((r) => stageOf(r) === 'synthesis')!.messages.at(-1)!.content;
    expect(synthesis).toContain(`${TEXT.p1} (refined)`);
  });

  it('stops refining once every position is Consensus, and keeps the old text when a refinement fails', async () => {
    const { stored } = await run(votingPreset({ iterate: true, maxIterations: 3 }), (req) => {
      if (isRefine(req) && agentOf(req) === 'p3') return 'no JSON here';
      // The re-vote (every prompt now holds refined text): approve everything, p3's kept text included.
      if (isVote(req) && req.messages.at(-1)!.content.includes('(refined)')) return voteReply(true);
      return undefined;
    });
    const iterations = stored.voting!.iterations;
    expect(iterations).toHaveLength(2);
    const p3 = iterations[1]!.artifacts.find((a) => a.authorId === 'p3')!;
    expect(p3).toMatchObject({ origin: 'kept', text: TEXT.p3, sourceRound: 0 });
    expect(iterations[1]!.tiers.every((t) => t.tier === 'consensus')).toBe(true);
  });

  it('does not refine when nothing won Consensus, and says why', async () => {
    const { stored, events, seen } = await run(votingPreset({ iterate: true, maxIterations: 2 }), (req) => (isVote(req) ? voteReply(false) : undefined));
    expect(seen.filter(isRefine)).toHaveLength(0);
    expect(stored.voting!.iterations).toHaveLength(1);
    expect(events.some((e) => e.type === 'warning' && e.message.includes('no position won Consensus'))).toBe(true);
    const synthesis = seen.find((r) => stageOf(r) === 'synthesis')!.messages.at(-1)!.content;
    expect(synthesis).toContain('No position won approval across clusters');
  });

  it('records no abstention for votes cut short by Ctrl-C, and marks the debate interrupted', async () => {
    const controller = new AbortController();
    const preset = votingPreset();
    const script = panelResponder((req) => {
      if (!isVote(req)) return undefined;
      setTimeout(() => controller.abort(), 30);
      return { content: voteReply(true), delayMs: 3000 };
    });
    sim = await startSimulator({ models: simModels(preset), respond: script.respond });
    store = openStore(':memory:');
    const error = await runDebate({ question: 'Q?', preset, host: sim.url, recorder: recorder(store), signal: controller.signal }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InterruptedError);
    const [row] = store.listDebates();
    const stored = store.getDebate(row!.id);
    expect(stored.status).toBe('interrupted');
    expect(stored.calls.some((c) => c.stage === 'vote' && c.status === 'aborted')).toBe(true);
    const [iteration] = stored.voting!.iterations;
    expect(iteration!.ballots.filter((b) => b.vote === 'abstain')).toEqual([]);
    expect(iteration!.tiers).toEqual([]);
    expect(renderCard(stored)).toContain('The vote was not classified');
  });

  it('holds no vote for a preset without a voting block, or with it switched off', async () => {
    const { voting: _v, ...withoutVoting } = votingPreset();
    for (const preset of [presetSchema.parse(withoutVoting), votingPreset({ enabled: false })]) {
      const { seen, stored } = await run(preset);
      expect(seen.filter(isVote)).toHaveLength(0);
      expect(stored.voting).toBeNull();
      expect((debateDocument(stored) as { voting: unknown }).voting).toBeNull();
      expect(renderCard(stored)).not.toContain('CLUSTER VOTE');
      store?.close();
      store = null;
      await sim?.close();
      sim = null;
    }
  });
});
