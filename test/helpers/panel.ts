import type { PresetInput } from '../../src/config/preset-schema.js';
import { presetSchema } from '../../src/config/preset-schema.js';
import { synthesizerCandidates } from '../../src/config/synthesizer.js';
import type { SimReply, SimRequest } from '../../src/sim/index.js';

/** Which stage a simulated request belongs to, read from the requested JSON schema. */
export type SimStage = 'opening' | 'critique' | 'judge' | 'synthesis' | 'verdict' | 'split' | 'subanswer' | 'plan' | 'observe' | 'review' | 'filter' | 'other';

export function stageOf(req: SimRequest): SimStage {
  const props = (req.format as { properties?: Record<string, unknown> } | null)?.properties ?? {};
  if ('winner' in props) return 'verdict';
  if ('findings' in props || 'document' in props) return 'filter';
  if ('observations' in props) {
    // The first prompt, not a repair request that follows it.
    const text = req.messages.find((m) => m.role === 'user')?.content ?? '';
    return text.includes('You lead this review') ? 'plan' : text.includes('You are an analyst') ? 'observe' : 'review';
  }
  if ('subQuestions' in props) return 'split';
  if ('position' in props && /Yours is sub-question \d+/.test(req.messages.at(-1)?.content ?? '')) return 'subanswer';
  if ('position' in props) return 'opening';
  if ('updatedPosition' in props) return 'critique';
  if ('caveats' in props) return 'judge';
  if ('triggersToRevisit' in props) return 'synthesis';
  return 'other';
}

/** The agent id behind a request: test personas are `You are agent <id>.` */
export function agentOf(req: SimRequest): string | null {
  const system = req.messages.find((m) => m.role === 'system')?.content ?? '';
  return /^You are agent (\S+)\.$/.exec(system)?.[1] ?? null;
}

/** The two players a verdict may name: the enum of the requested schema's winner. */
export function playersOf(req: SimRequest): string[] {
  return (req.format as { properties?: { winner?: { enum?: string[] } } } | null)?.properties?.winner?.enum ?? [];
}

export function subQuestionOf(req: SimRequest): number {
  return Number(/Yours is sub-question (\d+)/.exec(req.messages.at(-1)?.content ?? '')?.[1] ?? 0);
}

/** A quality retry: the simplified request, which says the previous reply was too thin. */
export function isRetry(req: SimRequest): boolean {
  return /previous reply to this was too thin/.test(req.messages.at(-1)?.content ?? '');
}

export function roundOf(req: SimRequest): number {
  return Number(/critique round (\d+)/.exec(req.messages.at(-1)?.content ?? '')?.[1] ?? 0);
}

/** The agent ids a judge request shows positions of, in order. */
export function judgedIdsOf(req: SimRequest): string[] {
  return [...(req.messages.at(-1)?.content ?? '').matchAll(/^\[([^\]\s]+)\]/gm)].map((m) => m[1]!);
}

/** `{stances}` grouping every agent the judge was shown into one stance, when the request asks for stances. */
export function oneStance(req: SimRequest): { stances?: { id: string; summary: string; agents: string[] }[] } {
  const asks = 'stances' in ((req.format as { properties?: object } | undefined)?.properties ?? {});
  return asks ? { stances: [{ id: 'S1', summary: 'they agree', agents: judgedIdsOf(req) }] } : {};
}

/** The round a judge request scores, from its prompt. */
export function judgedRoundOf(req: SimRequest): number {
  return Number(/Positions after round (\d+)/.exec(req.messages.at(-1)?.content ?? '')?.[1] ?? 0);
}

export function testPreset(agentIds: string[], overrides: Partial<PresetInput> = {}) {
  return presetSchema.parse({
    name: 'test-panel',
    agents: agentIds.map((id, i) => ({ id, model: `model-${i}:1b`, persona: `You are agent ${id}.` })),
    judge: { model: 'judge:1b' },
    synthesizer: { model: 'synth:1b' },
    protocol: { maxRounds: 3, convergenceThreshold: 0.85, callTimeoutSeconds: 10 },
    ...overrides,
  });
}

export function simModels(preset: ReturnType<typeof testPreset>) {
  const names = new Set([...preset.agents.map((a) => a.model), preset.judge.model, ...synthesizerCandidates(preset)]);
  return [...names].map((name) => ({ name, contextLength: 32768 }));
}

export const reply = {
  opening: (agent: string, position = `${agent} says A`): string => JSON.stringify({ position, reasoning: `${agent} reasons`, confidence: 60 }),
  critique: (agent: string, position = `${agent} now says A`, agreeWith: string[] = []): string =>
    JSON.stringify({ agreements: agreeWith.map((w) => ({ with: w, on: 'A' })), disagreements: [], updatedPosition: position, confidence: 70 }),
  /**
   * A judge reply scoring every axis `value` on the engine's 0-to-1 scale (written as the integer percent the schema asks for);
   * given the request, with one stance holding every agent it was shown (the judge's stances are required).
   */
  judge: (value: number, req?: SimRequest): string =>
    JSON.stringify({ rationale: 'scored', recommendation: Math.round(value * 100), facts: Math.round(value * 100), caveats: Math.round(value * 100), ...(req ? oneStance(req) : {}) }),
  verdict: (winner: string, reasons = [`${winner} argued better`]): string => JSON.stringify({ winner, reasons }),
  /** An answer the quality check retries: one word, no reasons, almost no confidence (score 35). */
  weak: (): string => JSON.stringify({ position: 'Maybe', reasoning: '', confidence: 10 }),
  /** A critique the quality check retries: one word, naming no peer, almost no confidence (score 45). */
  weakCritique: (): string => JSON.stringify({ agreements: [], disagreements: [], updatedPosition: 'Maybe', confidence: 10 }),
  /**
   * An answer the quality check rejects outright (score 0): one word, no reasons, almost no
   * confidence, cut off at num_predict. `word` marks it, to look for in later prompts.
   */
  rejected: (word: string, stage: 'opening' | 'critique' = 'opening'): SimReply => ({
    content: JSON.stringify(
      stage === 'opening' ? { position: word, reasoning: '', confidence: 5 } : { agreements: [], disagreements: [], updatedPosition: word, confidence: 5 },
    ),
    doneReason: 'length',
  }),
  split: (parts: { question: string; dependsOn: number[] }[]): string => JSON.stringify({ subQuestions: parts }),
  observations: (items: { id: string; text: string; confidence: number; blocking: boolean; evidence?: string }[], summary = 'summary'): string =>
    JSON.stringify({ summary, observations: items.map((o) => ({ evidence: `evidence for ${o.id}`, ...o })) }),
  synthesis: (minority: { agent: string; round: number }[] = [], restsOn: string[] = []): string =>
    JSON.stringify({
      recommendation: 'Do A',
      triggersToRevisit: ['if B happens'],
      confidence: { level: 'medium', converged: 2 },
      restsOn,
      minorityPositions: minority.map((m) => ({ ...m, argument: 'B instead', whyItMatters: 'B could be right' })),
      failedAgents: [],
    }),
};

/**
 * A scripted panel: judge scores per round (convergence = that value), everything
 * else answered sensibly unless `override` returns a reply for the request. Replies
 * follow from the request (stage, round, agent), so a rerun gets the same ones.
 */
export function scriptedResponder(judgeScores: number[], override?: (req: SimRequest) => SimReply | undefined) {
  const seen: SimRequest[] = [];
  const respond = (req: SimRequest): SimReply => {
    seen.push(req);
    const custom = override?.(req);
    if (custom !== undefined) return custom;
    const agent = agentOf(req) ?? 'unknown';
    switch (stageOf(req)) {
      case 'opening':
        return reply.opening(agent);
      case 'critique': {
        // A critique asked about open clashes lists none of them: every clash is left as it stands.
        const asksClashes = 'clashUpdates' in ((req.format as { properties?: object }).properties ?? {});
        return asksClashes ? JSON.stringify({ ...JSON.parse(reply.critique(agent)), clashUpdates: [] }) : reply.critique(agent);
      }
      case 'judge':
        return reply.judge(judgeScores[Math.min(judgedRoundOf(req), judgeScores.length - 1)] ?? 0, req);
      case 'synthesis':
        return reply.synthesis();
      case 'verdict':
        return reply.verdict(playersOf(req)[0] ?? '');
      case 'split':
        return reply.split([{ question: 'part one?', dependsOn: [] }, { question: 'part two?', dependsOn: [1] }]);
      case 'subanswer':
        return reply.opening(agent, `${agent} answers sub-question ${subQuestionOf(req)}`);
      case 'plan':
      case 'observe':
      case 'review':
        return reply.observations([{ id: 'O1', text: `${agent} observes a ${stageOf(req)} point`, confidence: 75, blocking: false }]);
      case 'filter':
        return 'findings' in ((req.format as { properties?: object }).properties ?? {})
          ? JSON.stringify({ summary: 'filtered', findings: [] })
          : JSON.stringify({ title: 'Report', document: 'The document.' });
      default:
        return 'ok';
    }
  };
  return { respond, seen };
}

/** Three agents in two clusters, three critique rounds that never converge, a tension map and a forced vote: every stage of a debate. */
export function contractPanel() {
  return testPreset(['alpha', 'beta', 'gamma'], {
    agents: [
      { id: 'alpha', model: 'model-0:1b', persona: 'You are agent alpha.', cluster: 'left' },
      { id: 'beta', model: 'model-1:1b', persona: 'You are agent beta.', cluster: 'left' },
      { id: 'gamma', model: 'model-2:1b', persona: 'You are agent gamma.', cluster: 'right' },
    ],
    protocol: { maxRounds: 3, convergenceThreshold: 0.99, callTimeoutSeconds: 30 },
    tensions: { enabled: true },
    voting: { force: true },
  } as Parameters<typeof testPreset>[1]);
}

/** A review pipeline with every role: a lead, an analyst, two reviewers (one with no role) and a filter. */
export function pipelineContractPanel(filterMode: 'list' | 'artifact' = 'list') {
  const roles = [
    ['lead', 'lead'],
    ['ana', 'analyst'],
    ['r1', 'reviewer'],
    ['r2', undefined],
    ['filt', 'filter'],
  ] as const;
  return testPreset(
    roles.map(([id]) => id),
    {
      agents: roles.map(([id, role], i) => ({ id, model: `model-${i}:1b`, persona: `You are agent ${id}.`, ...(role ? { role } : {}) })),
      protocol: { kind: 'pipeline', filterMode, callTimeoutSeconds: 30 },
    } as Parameters<typeof testPreset>[1],
  );
}
