import { randomBytes } from 'node:crypto';
import type { AgentSpec, HostEntry, ModelOptions, Preset } from '../config/preset-schema.js';
import { DebateFailedError, HostError, InterruptedError, StoreError, errorMessage } from '../errors.js';
import type { TagModel } from '../ollama/gateway.js';
import { estimateMessagesTokens, estimateTokens, fitPeers, stageBudgets } from '../protocol/context.js';
import { convergenceOf, exitDecision } from '../protocol/convergence.js';
import {
  type PeerView,
  type TranscriptRound,
  critiqueMessages,
  judgeMessages,
  openingMessages,
} from '../protocol/prompts.js';
import { critiqueSchemaFor, judgeSchema, openingSchema } from '../protocol/schemas.js';
import type { SlotPool } from '../schedule/pool.js';
import { DebateScheduler, type Strategy, sameModel } from '../schedule/scheduler.js';
import { VERSION } from '../version.js';
import type {
  AgentInfo,
  CallRecord,
  DebateEvent,
  DebateListener,
  DebateStatus,
  ExitReason,
  RoundJudgement,
  Stage,
  SynthesisRecord,
  TurnRecord,
} from './events.js';
import type { ExtraStage, StageContext } from './stage.js';
import { builtinStages } from './stages.js';
import { type StructuredOutcome, structuredCall } from './structured-call.js';
import { failedAgentsOf, fitSynthesisPrompt, synthesisRecordOf, synthesisSchemaOf } from './synthesis.js';

export interface RunDebateOptions {
  question: string;
  preset: Preset;
  /** Normalised Ollama base URL; ignored when `hosts` or the preset's `hosts` list a pool. */
  host: string;
  /** Several Ollama servers to spread the panel over, with their GPU memory and parallel slots. */
  hosts?: HostEntry[];
  /** GPU memory of `host` in GiB, when known (else nvidia-smi for a local host, else an assumption). */
  vramGiB?: number;
  /** Listeners that must not fail silently (the recorder): an error here stops the debate. */
  recorder?: DebateListener;
  /** Best-effort listeners (renderers): an error is reported once and ignored. */
  listeners?: DebateListener[];
  signal?: AbortSignal;
  /** Warnings gathered before the run (e.g. from preset validation), shown and stored with it. */
  warnings?: string[];
  /** Parallel slots per model on the server (OLLAMA_NUM_PARALLEL); default 1. */
  numParallel?: number;
  now?: () => number;
  id?: string;
  /** Optional stages between the last round and synthesis; defaults to the built-in ones. */
  stages?: ExtraStage[];
  /** How calls are dispatched; `planned` unless benchmarking the baselines. */
  strategy?: Strategy;
  /** Call slots shared with other work on the same hosts (debates run side by side); default: the debate's own. */
  pool?: SlotPool;
}

export interface DebateResult {
  id: string;
  status: DebateStatus;
  exitReason: ExitReason;
  exitDetail: string;
  rounds: TranscriptRound[];
  synthesis: SynthesisRecord | null;
  numCtx: Record<string, number>;
  error: string | null;
  /** The scheduler that ran it: its plan, and peak calls in flight per model. */
  scheduler: DebateScheduler;
}

export function newDebateId(now: number): string {
  const d = new Date(now);
  const pad = (n: number): string => String(n).padStart(2, '0');
  const stamp = `${String(d.getUTCFullYear()).slice(2)}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}-${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`;
  return `${stamp}-${randomBytes(2).toString('hex')}`;
}

export function presetModels(preset: Preset, stages: ExtraStage[] = builtinStages()): string[] {
  const extra = stages.filter((s) => s.enabled(preset)).flatMap((s) => s.models?.(preset) ?? []);
  return [...new Set([...preset.agents.map((a) => a.model), preset.judge.model, preset.synthesizer.model, ...extra])];
}

export function missingModels(preset: Preset, tags: TagModel[], stages?: ExtraStage[]): string[] {
  return presetModels(preset, stages).filter((m) => !tags.some((t) => sameModel(t.name, m)));
}

/** Runs one whole debate and returns its outcome. Every call is reported to the recorder as it ends. */
export async function runDebate(opts: RunDebateOptions): Promise<DebateResult> {
  const now = opts.now ?? Date.now;
  const preset = opts.preset;
  const id = opts.id ?? newDebateId(now());
  const listeners = opts.listeners ?? [];
  const brokenListeners = new Set<DebateListener>();

  const emit = (event: DebateEvent): void => {
    opts.recorder?.(event);
    for (const listener of listeners) {
      if (brokenListeners.has(listener)) continue;
      try {
        listener(event);
      } catch (err) {
        brokenListeners.add(listener);
        process.stderr.write(`conclave: a display listener failed and was switched off: ${errorMessage(err)}\n`);
      }
    }
  };

  const stages = (opts.stages ?? builtinStages()).filter((s) => s.enabled(preset));
  const stageModels = stages.flatMap((s) => s.models?.(preset) ?? []);
  const early: string[] = [];
  // An explicit host list wins over the preset's, which wins over the single host.
  const hosts: HostEntry[] = opts.hosts ?? preset.hosts ?? [{ url: opts.host, ...(opts.vramGiB ? { vramGiB: opts.vramGiB } : {}), ...(opts.numParallel ? { numParallel: opts.numParallel } : {}) }];
  const needs = contextNeeds(preset, opts.question, stageModels);
  const scheduler = await DebateScheduler.prepare({
    hosts,
    debaters: preset.agents.map((a) => a.model),
    support: [preset.judge.model, preset.synthesizer.model, ...stageModels],
    contextNeeds: needs.tokens,
    explicitNumCtx: needs.explicit,
    ...(opts.strategy ? { strategy: opts.strategy } : {}),
    ...(opts.pool ? { pool: opts.pool } : {}),
    warn: (m) => early.push(m),
  });
  if (opts.signal?.aborted) throw new InterruptedError('Stopped before the debate started; nothing was recorded.');
  const numCtx = scheduler.numCtx;
  const digestOf = (model: string): string | null => scheduler.digestOf(model);
  const agents: AgentInfo[] = [
    ...preset.agents.map((a) => ({
      id: a.id,
      model: a.model,
      persona: a.persona ?? null,
      cluster: a.cluster ?? null,
      role: 'debater' as const,
      digest: digestOf(a.model),
    })),
    { id: 'judge', model: preset.judge.model, persona: null, cluster: null, role: 'judge', digest: digestOf(preset.judge.model) },
    {
      id: 'synthesizer',
      model: preset.synthesizer.model,
      persona: null,
      cluster: null,
      role: 'synthesizer',
      digest: digestOf(preset.synthesizer.model),
    },
  ];

  const timeoutMs = preset.protocol.callTimeoutSeconds * 1000;
  const rounds: TranscriptRound[] = [];
  let synthesis: SynthesisRecord | null = null;

  emit({
    type: 'debate.started',
    debateId: id,
    question: opts.question,
    preset,
    agents,
    host: scheduler.plan.hosts.map((h) => h.url).join(', '),
    warnings: [...(opts.warnings ?? []), ...early, ...scheduler.plan.warnings],
    plan: scheduler.plan,
    at: now(),
  });

  const callOptions = (model: string, own: ModelOptions | undefined, stage: Stage, defaults: Record<string, unknown> = {}): Record<string, unknown> => {
    const numPredict =
      stage === 'critique' ? preset.protocol.maxAnswerTokens * 1.5 : stage === 'judge' ? 400 : stage === 'synthesis' ? 1500 : preset.protocol.maxAnswerTokens;
    // num_ctx is fixed per model for the whole debate: a change forces Ollama to reload the model.
    return { num_predict: Math.round(numPredict), ...defaults, ...own, num_ctx: numCtx[model] };
  };

  const call = async <T>(
    stage: Stage,
    round: number,
    agentId: string,
    model: string,
    messages: ReturnType<typeof openingMessages>,
    options: Record<string, unknown>,
    schema: import('zod').ZodType<T>,
    normalize?: (value: T) => string[],
    truncation?: string | null,
    onRecord?: (record: CallRecord) => void,
  ): Promise<StructuredOutcome<T>> =>
    scheduler.call(model, (gateway) =>
      structuredCall(
        gateway,
        {
          debateId: id,
          stage,
          round,
          agentId,
          model,
          messages,
          options,
          schema,
          ...(normalize ? { normalize } : {}),
          truncation: truncation ?? null,
          timeoutMs,
          ...(opts.signal ? { signal: opts.signal } : {}),
        },
        {
          now,
          onStart: (attempt) => emit({ type: 'turn.started', stage, round, agentId, model, attempt, at: now() }),
          onProgress: (tokens, delta) => emit({ type: 'turn.progress', stage, round, agentId, tokens, delta }),
          onCall: (record) => {
            emit({ type: 'call.finished', call: record });
            onRecord?.(record);
          },
        },
      ),
    );

  const finish = (status: DebateStatus, exitReason: ExitReason, error: string | null): void => {
    emit({ type: 'debate.finished', debateId: id, status, exitReason, error, at: now() });
  };

  const interrupted = (): boolean => opts.signal?.aborted === true;
  // Models to have loaded when a round's last group finishes: the judge, and the synthesizer when it may be next.
  const upNext = (round: number): string[] =>
    round >= preset.protocol.maxRounds || scheduler.plan.allResident ? [preset.judge.model, preset.synthesizer.model] : [preset.judge.model];

  try {
    // Round 0: every agent answers alone, all at once.
    emit({ type: 'round.started', round: 0, at: now() });
    const openings = await scheduler.round(
      preset.agents.map((agent) => ({
        model: agent.model,
        run: async (): Promise<TurnRecord> => {
          const messages = openingMessages(opts.question, agent.persona);
          const outcome = await call('opening', 0, agent.id, agent.model, messages, callOptions(agent.model, agent.options, 'opening'), openingSchema);
          return turnFrom(agent, 0, outcome, (v) => ({ position: v.position, confidence: v.confidence, opening: v, critique: null }));
        },
      })),
      upNext(0),
    );
    for (const turn of openings) emit({ type: 'turn.finished', turn, at: now() });
    if (interrupted()) return stopInterrupted();

    const usable = openings.filter((t) => t.status === 'ok');
    if (usable.length < 2) {
      const detail = `only ${usable.length} of ${openings.length} agents gave a usable answer in round 0`;
      emit({ type: 'debate.exit', reason: 'too_few_answers', round: 0, detail, at: now() });
      finish('failed', 'too_few_answers', detail);
      const gaps = openings.filter((t) => t.status !== 'ok').map((t) => `${t.agentId}: ${t.error}`);
      throw new DebateFailedError('TOO_FEW_ANSWERS', `The debate ${id} failed: ${detail}.\n${gaps.map((g) => `  - ${g}`).join('\n')}`, {
        hint: 'Check the failures above (model errors, timeouts or invalid JSON); the calls are stored, see `npx conclave show ' + id + '`.',
      });
    }

    let current: TranscriptRound = { round: 0, turns: openings, judgement: null };
    rounds.push(current);
    current.judgement = await judgeRound(0, openings);
    let exit = exitDecision({
      round: 0,
      maxRounds: preset.protocol.maxRounds,
      convergence: current.judgement.convergence,
      threshold: preset.protocol.convergenceThreshold,
    });

    for (let round = 1; !exit && !interrupted(); round++) {
      emit({ type: 'round.started', round, at: now() });
      const previous = current.turns;
      const turns = await scheduler.round(
        preset.agents.map((agent) => ({ model: agent.model, run: () => critiqueTurn(agent, round, previous) })),
        upNext(round),
      );
      for (const turn of turns) emit({ type: 'turn.finished', turn, at: now() });
      if (interrupted()) break;
      current = { round, turns, judgement: null };
      rounds.push(current);
      current.judgement = await judgeRound(round, turns);
      exit = exitDecision({
        round,
        maxRounds: preset.protocol.maxRounds,
        convergence: current.judgement.convergence,
        threshold: preset.protocol.convergenceThreshold,
      });
    }
    if (interrupted() || !exit) return stopInterrupted();
    emit({ type: 'debate.exit', reason: exit.reason, round: current.round, detail: exit.detail, at: now() });

    const extraSections: string[] = [];
    for (const stage of stages) {
      if (interrupted()) break;
      const ctx: StageContext = {
        debateId: id,
        question: opts.question,
        preset,
        rounds,
        now,
        signal: opts.signal,
        emit,
        call: (req) =>
          call(req.stage, req.round, req.agentId, req.model, req.messages, { ...callOptions(req.model, req.options, req.stage), ...(req.maxTokens ? { num_predict: req.maxTokens } : {}) }, req.schema, req.normalize, null, req.onCall),
      };
      try {
        const output = await stage.run(ctx);
        extraSections.push(...(output.synthesisContext ?? []));
      } catch (err) {
        if (interrupted()) break;
        if (isStoreError(err)) throw err;
        emit({ type: 'warning', message: `${stage.name} failed and was skipped: ${errorMessage(err)}`, at: now() });
      }
    }
    if (interrupted()) return stopInterrupted();

    synthesis = await synthesize(extraSections);
    if (interrupted()) return stopInterrupted();
    // A failed synthesis keeps the debate: its rounds stand, and `conclave synthesize` can finish it.
    const status: DebateStatus = synthesis.status === 'ok' ? 'completed' : 'unsynthesized';
    finish(status, exit.reason, synthesis.status === 'ok' ? null : `synthesis failed: ${synthesis.error}`);
    return { id, status, exitReason: exit.reason, exitDetail: exit.detail, rounds, synthesis, numCtx, error: synthesis.error, scheduler };
  } catch (err) {
    // stopInterrupted() has already recorded and announced the stop.
    if (err instanceof DebateFailedError || err instanceof InterruptedError) throw err;
    if (interrupted()) return stopInterrupted();
    // The recorder failing (disk full, lock) lands here: report it without trying to write again.
    throw err;
  }

  function stopInterrupted(): never {
    const round = rounds.at(-1)?.round ?? 0;
    emit({ type: 'debate.exit', reason: 'interrupted', round, detail: 'stopped by the user', at: now() });
    finish('interrupted', 'interrupted', 'stopped by the user');
    throw new InterruptedError(`Debate ${id} was stopped; everything recorded so far is kept and it is marked interrupted.`, {
      hint: `See what it got to with \`npx conclave show ${id}\`.`,
    });
  }

  async function critiqueTurn(agent: AgentSpec, round: number, previous: TurnRecord[]): Promise<TurnRecord> {
    const own = previous.find((t) => t.agentId === agent.id);
    const peers: PeerView[] = previous
      .filter((t) => t.agentId !== agent.id && t.status === 'ok' && t.position)
      .map((t) => ({ agentId: t.agentId, position: peerText(t) }));
    const options = callOptions(agent.model, agent.options, 'critique');
    const ownPosition = own?.status === 'ok' ? own.position : null;
    const fixed = estimateMessagesTokens(critiqueMessages(opts.question, agent.persona, round, ownPosition, []));
    const budget = (numCtx[agent.model] ?? 4096) - Number(options.num_predict ?? 0);
    const fit = fitPeers(fixed, peers, budget);
    if (!fit) {
      const error = `the prompt does not fit num_ctx ${numCtx[agent.model]} for ${agent.model} even with peers' answers shortened`;
      emit({ type: 'warning', message: `${agent.id}, round ${round}: ${error}`, at: now() });
      return { round, agentId: agent.id, model: agent.model, status: 'failed', position: null, confidence: null, opening: null, critique: null, error };
    }
    const truncation = fit.droppedChars > 0 ? `peers' answers shortened by ${fit.droppedChars} characters to fit num_ctx ${numCtx[agent.model]}` : null;
    if (truncation) emit({ type: 'warning', message: `${agent.id}, round ${round}: ${truncation}`, at: now() });
    const messages = critiqueMessages(opts.question, agent.persona, round, ownPosition, fit.peers);
    const schema = critiqueSchemaFor(
      peers.map((p) => p.agentId),
      preset.agents.filter((a) => a.id !== agent.id).map((a) => a.id),
    );
    const outcome = await call('critique', round, agent.id, agent.model, messages, options, schema, undefined, truncation);
    return turnFrom(agent, round, outcome, (v) => ({ position: v.updatedPosition, confidence: v.confidence, opening: null, critique: v }));
  }

  async function judgeRound(round: number, turns: TurnRecord[]): Promise<RoundJudgement> {
    const model = preset.judge.model;
    const options = callOptions(model, preset.judge.options, 'judge', { temperature: 0 });
    let positions: PeerView[] = turns.filter((t) => t.status === 'ok' && t.position).map((t) => ({ agentId: t.agentId, position: t.position! }));
    const fixed = estimateMessagesTokens(judgeMessages(opts.question, round, []));
    const fit = fitPeers(fixed, positions, (numCtx[model] ?? 4096) - Number(options.num_predict ?? 0));
    let judgement: RoundJudgement;
    if (!fit) {
      judgement = { round, status: 'failed', score: null, convergence: null, error: `positions do not fit num_ctx ${numCtx[model]} for the judge` };
    } else {
      positions = fit.peers;
      const truncation = fit.droppedChars > 0 ? `positions shortened by ${fit.droppedChars} characters for the judge` : null;
      const outcome = await call('judge', round, 'judge', model, judgeMessages(opts.question, round, positions), options, judgeSchema, undefined, truncation);
      judgement =
        outcome.status === 'ok'
          ? { round, status: 'ok', score: outcome.value, convergence: convergenceOf(outcome.value), error: null }
          : { round, status: 'failed', score: null, convergence: null, error: outcome.error };
    }
    emit({ type: 'round.judged', judgement, at: now() });
    return judgement;
  }

  async function synthesize(extraSections: string[]): Promise<SynthesisRecord> {
    const model = preset.synthesizer.model;
    const options = callOptions(model, preset.synthesizer.options, 'synthesis', { temperature: 0.2 });
    const last = rounds.at(-1)!;
    const failed = failedAgentsOf(preset, last);
    const budget = (numCtx[model] ?? 4096) - Number(options.num_predict ?? 0);
    const fit = fitSynthesisPrompt(opts.question, rounds, preset.agents.map((a) => a.id), failed, extraSections, budget);
    let result: SynthesisRecord;
    if (!fit.messages) {
      result = { status: 'failed', model, synthesis: null, error: `the transcript does not fit num_ctx ${numCtx[model]} for ${model}` };
    } else {
      const truncation = fit.clippedTo === null ? null : `each turn clipped to ${fit.clippedTo} characters to fit num_ctx ${numCtx[model]}`;
      if (truncation) emit({ type: 'warning', message: `synthesis: ${truncation}`, at: now() });
      const outcome = await call('synthesis', last.round, 'synthesizer', model, fit.messages, options, synthesisSchemaOf(preset, last.round), undefined, truncation);
      result = synthesisRecordOf(outcome, failed, model);
    }
    emit({ type: 'synthesis.finished', result, at: now() });
    return result;
  }
}

function isStoreError(err: unknown): boolean {
  return err instanceof StoreError;
}

function turnFrom<T>(
  agent: AgentSpec,
  round: number,
  outcome: StructuredOutcome<T>,
  fields: (value: T) => Pick<TurnRecord, 'position' | 'confidence' | 'opening' | 'critique'>,
): TurnRecord {
  const base = { round, agentId: agent.id, model: agent.model };
  if (outcome.status === 'ok') return { ...base, status: 'ok', ...fields(outcome.value), error: null };
  return {
    ...base,
    status: outcome.status === 'invalid' ? 'invalid' : 'failed',
    position: null,
    confidence: null,
    opening: null,
    critique: null,
    error: outcome.error,
  };
}

/** What peers see of a turn: an opening's position and reasoning, or a critique's updated position. */
function peerText(turn: TurnRecord): string {
  if (turn.opening) return `${turn.opening.position}\nReasoning: ${turn.opening.reasoning}`;
  return turn.position ?? '';
}

/** Tokens each model needs at most (prompt plus reply) in this debate, and any num_ctx the preset fixes. */
function contextNeeds(preset: Preset, question: string, extraModels: string[]): { tokens: Record<string, number>; explicit: Record<string, number> } {
  const budgets = stageBudgets({
    agentCount: preset.agents.length,
    maxRounds: preset.protocol.maxRounds,
    questionTokens: estimateTokens(question),
    maxPersonaTokens: Math.max(60, ...preset.agents.map((a) => estimateTokens(a.persona ?? ''))),
    maxAnswerTokens: preset.protocol.maxAnswerTokens,
  });
  const tokens: Record<string, number> = {};
  const explicit: Record<string, number> = {};
  const need = (model: string, stage: keyof typeof budgets, own: number | undefined): void => {
    tokens[model] = Math.max(tokens[model] ?? 0, budgets[stage].prompt + budgets[stage].reply);
    if (own) explicit[model] = Math.max(explicit[model] ?? 0, own);
  };
  for (const a of preset.agents) {
    need(a.model, 'opening', a.options?.num_ctx);
    need(a.model, 'critique', a.options?.num_ctx);
  }
  need(preset.judge.model, 'judge', preset.judge.options?.num_ctx);
  need(preset.synthesizer.model, 'synthesis', preset.synthesizer.options?.num_ctx);
  // Optional stages read the final positions, like the judge.
  for (const model of extraModels) need(model, 'judge', undefined);
  return { tokens, explicit };
}
