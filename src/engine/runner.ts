import type { AgentSpec, HostEntry, ModelOptions, Preset } from '../config/preset-schema.js';
import { presetHostsFor } from '../config/trust.js';
import { DebateFailedError, HostError, InputError, InterruptedError, StoreError, errorMessage } from '../errors.js';
import { type CallPriority, defaultPriority, TokenTally } from '../protocol/budget.js';
import { estimateMessagesTokens, estimateTokens, fitPeers, stageBudgets } from '../protocol/context.js';
import { type Attachment, standingText } from '../protocol/material.js';
import { convergenceOf } from '../protocol/convergence.js';
import { CallPath } from './call/path.js';
import { reportRating } from './call/quality.js';
import type { CallRequest, QualityHook } from './call/request.js';
import { materialReserve } from './call/material.js';
import { chooseThinking, type ThinkingChoice, thinkingBase, thinkSettingOf, thinkSettings } from './call/thinking.js';
import { type PeerView, type TranscriptRound, critiqueMessages, judgeMessages, openingMessages, retryMessages } from '../protocol/prompts.js';
import { rateResult } from '../protocol/quality.js';
import { type Critique, type Opening, critiqueSchemaFor, judgeSchemaFor, openingSchema, synthesisSchemaFor } from '../protocol/schemas.js';
import { type RoundStances, normaliseStances, roundStancesOf, withStanceSection } from '../protocol/stances.js';
import { type MatchSide, type Verdict, verdictMessages, verdictSchema } from '../protocol/tournament.js';
import type { PlanThinking } from '../schedule/plan.js';
import { agentFamily, oneFamilyWarning } from '../schedule/families.js';
import type { SlotPool } from '../schedule/pool.js';
import type { StoredCall } from '../store/store.js';
import { DebateScheduler, type Strategy } from '../schedule/scheduler.js';
import type {
  AgentInfo,
  BudgetDecision,
  ChatMessage,
  DebateEvent,
  DebateListener,
  DebateStatus,
  ExitReason,
  RoundJudgement,
  Stage,
  SynthesisRecord,
  TurnRecord,
} from './events.js';
import type { ProtocolStep } from './protocol-events.js';
import type { ExtraStage, StageContext } from './stage.js';
import { mapClashes, mapsTensions } from './stages/tensions.js';
import { type ClashBoard, type ClashUpdate, type Tension, type TensionUpdate, agentPairs, batchPairs, openClashesOf, settleClashes } from '../protocol/tensions.js';
import { critiqueClashSection } from '../protocol/tension-prompts.js';
import { type StructuredOutcome, parseReply } from './structured-call.js';
import { fitSynthesisPrompt, synthesisRecordOf } from './synthesis.js';
import { type StatedConstraint, constraintSection, mergeConstraints, statedInRounds } from '../protocol/constraints.js';

/**
 * The runner's primitives: each makes its model calls through the scheduler (slots, plan,
 * warm-ups), validates replies, and reports everything as typed events, so recording,
 * the live view, --json and replays work the same for every protocol. Protocols
 * (src/engine/protocols/) are small programs over these. The primitives take the
 * transcript they work on as arguments and keep no hidden state about it, so a protocol
 * can start from stored rounds as well as from nothing.
 */

export interface RunDebateOptions {
  question: string;
  preset: Preset;
  /** Normalised Ollama base URL; ignored when `hosts` or the preset's `hosts` list a pool. */
  host: string;
  /** Several Ollama servers to spread the panel over, with their GPU memory and parallel slots. */
  hosts?: HostEntry[];
  /** Consent to send a preset's own `hosts:` the API keys they name (`run --trust-preset-hosts`); without it such a preset is refused. */
  trustPresetHosts?: boolean;
  /** Where the hosts' API keys are read from (their apiKeyEnv); default process.env. */
  env?: NodeJS.ProcessEnv;
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
  /**
   * This debate's turn in the synthesizer rotation (`synthesizer.rotate`): the number of
   * debates already recorded with the preset. Ignored for a fixed synthesizer; default 0.
   */
  synthesizerTurn?: number;
  /** Files attached to the question (read with `readAttachments`): inlined or excerpted into every agent's prompt, and recorded. */
  attachments?: Attachment[];
  /** Tokens the debate's recorded calls already spent: a resumed run counts them against its budget. */
  tokensSpent?: number;
  /** Pauses before resending a request that failed for a passing reason; default call/retry.ts's. */
  retryDelaysMs?: readonly number[];
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

/** How a protocol ended, before the runner reports it. */
export interface ProtocolOutcome {
  exitReason: ExitReason;
  exitDetail: string;
  rounds: TranscriptRound[];
  synthesis: SynthesisRecord | null;
}

/** What the runner needs to know of a protocol before its first call. */
export interface RunShape {
  /** Judge, synthesizer and stage models the protocol calls (scheduled as support models). */
  support: string[];
  /** Models that write a synthesis-sized answer (their num_ctx is sized for the whole transcript). */
  synthesisModels: string[];
  /** Whether the judge reads the panel's positions (its num_ctx is sized for them). */
  usesJudge: boolean;
  /** Optional stages the protocol runs; their models are scheduled too. */
  stages: ExtraStage[];
  /** The record of how the synthesizer was chosen, reported first. */
  synthesizer: ProtocolStep | null;
}

export { type CallRequest, type QualityHook, QUALITY_REJECTED } from './call/request.js';
export { MATERIAL_SHARE_TOKENS, materialReserve } from './call/material.js';

/**
 * Calls of one round that finished before an interruption, by agent id: a resumed run reads
 * these agents' turns from them instead of asking again (see `Runner.answerAll`).
 */
export type RecordedCalls = ReadonlyMap<string, StoredCall>;

export class Runner {
  readonly id: string;
  readonly question: string;
  readonly preset: Preset;
  readonly now: () => number;
  readonly signal: AbortSignal | undefined;
  readonly retryDelaysMs: readonly number[] | undefined;
  readonly scheduler: DebateScheduler;
  readonly numCtx: Record<string, number>;
  readonly stages: ExtraStage[];
  /** Clashes mapped on the round-0 answers (`mapClashes`); undefined until mapped, null when mapping failed. */
  clashes: ClashBoard | null | undefined = undefined;
  readonly attachments: Attachment[];
  /** Tokens counted against `protocol.tokenBudget` (and counted without one). */
  readonly tally: TokenTally;
  readonly #recorder: DebateListener | undefined;
  readonly #listeners: DebateListener[];
  readonly #broken = new Set<DebateListener>();
  /** Whether any listener reads `turn.progress`. */
  readonly streamsProgress: boolean;
  /** The path every call takes (call/path.ts). */
  readonly #calls: CallPath;
  /** The last round a protocol opened: where an interruption is reported. */
  #round = 0;
  /** Thinking room reserved per model (the most any role that uses it needs), out of each prompt's share of num_ctx. */
  readonly #thinkingRoom: Record<string, number>;
  readonly #thinkingChoices = new Map<string, ThinkingChoice>();

  private constructor(opts: RunDebateOptions, id: string, scheduler: DebateScheduler, stages: ExtraStage[]) {
    this.id = id;
    this.question = opts.question;
    this.preset = opts.preset;
    this.now = opts.now ?? Date.now;
    this.signal = opts.signal;
    this.retryDelaysMs = opts.retryDelaysMs;
    this.scheduler = scheduler;
    this.numCtx = scheduler.numCtx;
    this.stages = stages;
    this.attachments = opts.attachments ?? [];
    this.tally = new TokenTally(opts.preset.protocol.tokenBudget ?? null);
    this.tally.add(opts.tokensSpent ?? 0);
    this.#recorder = opts.recorder;
    this.#listeners = opts.listeners ?? [];
    this.streamsProgress = [opts.recorder, ...this.#listeners].some((l) => l !== undefined && l.progress !== false);
    this.#thinkingRoom = Object.fromEntries((scheduler.plan.thinking ?? []).map((t) => [t.model, 0]));
    for (const t of scheduler.plan.thinking ?? []) this.#thinkingRoom[t.model] = Math.max(this.#thinkingRoom[t.model]!, t.room);
    this.#calls = new CallPath(this);
  }

  /** Plans the schedule (checking hosts and models), then reports the debate as started. */
  static async start(opts: RunDebateOptions, id: string, shape: RunShape): Promise<Runner> {
    const preset = opts.preset;
    const stageModels = shape.stages.flatMap((s) => s.models?.(preset) ?? []);
    const early: string[] = [];
    // An explicit host list wins over the preset's, which wins over the single host.
    const hosts: HostEntry[] = opts.hosts ?? presetHostsFor(preset.hosts, opts.trustPresetHosts === true) ?? [{ url: opts.host, ...(opts.vramGiB ? { vramGiB: opts.vramGiB } : {}), ...(opts.numParallel ? { numParallel: opts.numParallel } : {}) }];
    const needs = contextNeeds(preset, opts.question, shape, stageModels, materialReserve(opts.attachments ?? []));
    const scheduler = await DebateScheduler.prepare({
      hosts,
      debaters: preset.agents.map((a) => a.model),
      support: [...new Set([...shape.support, ...stageModels])],
      contextNeeds: needs.tokens,
      explicitNumCtx: needs.explicit,
      ...(opts.strategy ? { strategy: opts.strategy } : {}),
      ...(opts.pool ? { pool: opts.pool } : {}),
      warn: (m) => early.push(m),
      questionTokens: estimateTokens(opts.question),
      thinkingRoom: (capabilities) => roomPerModel(thinkingRoles(preset, shape), preset, capabilities),
      ...(opts.env ? { env: opts.env } : {}),
    });
    if (opts.signal?.aborted) throw new InterruptedError('Stopped before the debate started; nothing was recorded.');
    const capabilities = (model: string): readonly string[] | null => scheduler.capabilitiesOf(model);
    for (const s of thinkSettings(preset)) {
      const caps = capabilities(s.model);
      if (s.think !== false && caps !== null && !caps.includes('thinking')) scheduler.plan.warnings.push(`${s.role} sets think: ${String(s.think)}, but ${s.model} has no thinking capability: think is not sent to it`);
    }
    scheduler.plan.thinking = planThinking(thinkingRoles(preset, shape), preset, capabilities);
    scheduler.plan.families = preset.agents.map((a) => {
      const { details, tag } = scheduler.reportOf(a.model);
      return agentFamily(a, details, tag);
    });
    const oneFamily = oneFamilyWarning(scheduler.plan.families);
    if (oneFamily) scheduler.plan.warnings.push(oneFamily);
    const runner = new Runner(opts, id, scheduler, shape.stages);
    runner.checkPersonasFit();
    const digest = (model: string): string | null => scheduler.digestOf(model);
    const agents: AgentInfo[] = [
      ...preset.agents.map((a) => ({ id: a.id, model: a.model, persona: a.persona ?? null, cluster: a.cluster ?? null, role: 'debater' as const, digest: digest(a.model) })),
      { id: 'judge', model: preset.judge.model, persona: null, cluster: null, role: 'judge', digest: digest(preset.judge.model) },
      { id: 'synthesizer', model: preset.synthesizer.model ?? '', persona: null, cluster: null, role: 'synthesizer', digest: digest(preset.synthesizer.model ?? '') },
    ];
    runner.emit({
      type: 'debate.started',
      debateId: id,
      question: opts.question,
      preset,
      agents,
      host: scheduler.plan.hosts.map((h) => h.url).join(', '),
      warnings: [...(opts.warnings ?? []), ...early, ...scheduler.plan.warnings],
      plan: scheduler.plan,
      ...(runner.attachments.length ? { attachments: runner.attachments } : {}),
      at: runner.now(),
    });
    if (shape.synthesizer) runner.step(shape.synthesizer);
    return runner;
  }

  /** Reports an event to the recorder (whose errors stop the run) and to every display listener. */
  emit(event: DebateEvent): void {
    this.#recorder?.(event);
    for (const listener of this.#listeners) {
      if (this.#broken.has(listener)) continue;
      try {
        listener(event);
      } catch (err) {
        this.#broken.add(listener);
        process.stderr.write(`conclave: a display listener failed and was switched off: ${errorMessage(err)}\n`);
      }
    }
  }

  warn(message: string): void {
    this.emit({ type: 'warning', message, at: this.now() });
  }

  step(step: ProtocolStep): void {
    this.emit({ type: 'protocol.step', step, at: this.now() });
  }

  startRound(round: number): void {
    this.#round = round;
    this.emit({ type: 'round.started', round, at: this.now() });
  }

  interrupted(): boolean {
    return this.signal?.aborted === true;
  }

  /**
   * Stops the run here if the user interrupted it, or if a call since the last checkpoint
   * never reached its host, even after its resends: that is an outage, not an answer of the
   * model, so the debate is kept `interrupted` (no verdict drawn from the gap), and `resume`
   * asks that call again once the host is back.
   */
  checkpoint(): void {
    if (this.interrupted()) this.stopInterrupted();
    if (this.#calls.outages.takeHostDown()) this.stopHostDown();
  }

  /** Options for one call: the stage's reply budget, the caller's defaults, the preset's options, and the debate's fixed num_ctx. */
  callOptions(model: string, own: ModelOptions | undefined, stage: Stage, defaults: Record<string, unknown> = {}): Record<string, unknown> {
    const answer = this.preset.protocol.maxAnswerTokens;
    const numPredict =
      stage === 'critique'
        ? answer * 1.5
        : stage === 'judge' || stage === 'verdict'
          ? 400
          : stage === 'synthesis' || stage === 'reassembly' || stage === 'filter'
            ? 1500
            : stage === 'split'
              ? 800
              : stage === 'plan' || stage === 'observe' || stage === 'review'
                ? answer * 2
                : answer;
    // num_ctx is fixed per model for the whole debate: a change forces Ollama to reload the model.
    return { num_predict: Math.round(numPredict), ...defaults, ...own, num_ctx: this.numCtx[model] };
  }

  /**
   * Refuses, before anything is recorded, a panel whose agent's opening prompt (persona and
   * question) cannot fit its model's num_ctx: the server would drop the start of it unsaid.
   */
  checkPersonasFit(): void {
    for (const agent of this.preset.agents) {
      const need = estimateMessagesTokens(openingMessages(this.question, agent.persona));
      const room = this.agentPromptBudget(agent.model, this.callOptions(agent.model, agent.options, 'opening'));
      if (need <= room) continue;
      const persona = estimateTokens(agent.persona ?? '');
      throw new InputError(
        'PROMPT_TOO_LONG',
        `Agent ${agent.id}'s opening prompt needs about ${need.toLocaleString('en-US')} tokens (its persona ${persona.toLocaleString('en-US')}), but ${agent.model} has room for ${Math.max(0, room).toLocaleString('en-US')} at num_ctx ${this.numCtx[agent.model] ?? 4096}: the server would silently drop the start of it.`,
        { hint: persona > need / 2 ? `Shorten the persona of ${agent.id} to a few paragraphs, or give ${agent.model} a larger num_ctx (options.num_ctx) if the model supports it.` : 'Shorten the question and attach long text with --attach, or give the model a larger num_ctx (options.num_ctx).' },
      );
    }
  }

  /** Tokens left for the prompt of a call with these options. */
  promptBudget(model: string, options: Record<string, unknown>): number {
    return (this.numCtx[model] ?? 4096) - Number(options.num_predict ?? 0) - (this.#thinkingRoom[model] ?? 0);
  }

  /** How a role's calls to a model think: decided once from the preset and the model's capabilities. */
  thinkingOf(agentId: string, model: string): ThinkingChoice {
    const key = `${agentId}\u0000${model}`;
    let choice = this.#thinkingChoices.get(key);
    if (!choice) {
      choice = chooseThinking(thinkSettingOf(this.preset, agentId), this.scheduler.capabilitiesOf(model), thinkingBase(this.preset));
      this.#thinkingChoices.set(key, choice);
    }
    return choice;
  }

  /**
   * One structured call, through the path every call takes (call/path.ts): rated and retried when
   * it is an agent's result, with its thinking, material and constraints, admitted by the budget,
   * scheduled, sent, resent on a passing failure, repaired once, recorded.
   */
  call<T>(req: CallRequest<T>): Promise<StructuredOutcome<T>> {
    return this.#calls.call(req);
  }

  /** Tokens left for the rest of an agent's prompt once its share of material and the constraints are set aside. */
  agentPromptBudget(model: string, options: Record<string, unknown>): number {
    return this.promptBudget(model, options) - materialReserve(this.attachments) - estimateTokens(standingText(this.preset.constraints ?? [], this.preset.protocol.brief));
  }

  /** Reports a decision of the token budget (recorded, shown live and on the card). */
  budgetDecision(decision: Omit<BudgetDecision, 'used' | 'limit'>): void {
    if (this.tally.limit === null) return;
    this.emit({ type: 'budget.decision', decision: { ...decision, used: this.tally.used, limit: this.tally.limit }, at: this.now() });
  }

  /** Whether the token budget is spent: protocols start no new round of agent calls then. */
  budgetSpent(): boolean {
    return this.tally.exhausted();
  }

  /** Whether peers' reasoning is left out of prompts now (budget at 90% or more). */
  dropPeerReasoning(): boolean {
    return this.tally.pressure().dropReasoning;
  }

  /** The agent's priority under the budget; judges and stage models count as normal. */
  priorityOf(agentId: string): CallPriority {
    const agent = this.preset.agents.find((a) => a.id === agentId);
    return agent ? defaultPriority(agent) : 'normal';
  }

  /**
   * Fan-out: every given agent answers the question alone, all at once within the slots.
   * An agent with a call in `recorded` (a resumed round) that asked exactly this is not asked again.
   */
  async answerAll(agents: AgentSpec[], round: number, upNext: string[], recorded?: RecordedCalls): Promise<TurnRecord[]> {
    const request = (agent: AgentSpec): CallRequest<Opening> => ({
      stage: 'opening',
      round,
      agentId: agent.id,
      model: agent.model,
      messages: openingMessages(this.question, agent.persona),
      options: this.callOptions(agent.model, agent.options, 'opening'),
      schema: openingSchema,
      material: { focus: agent.persona ?? '' },
      // The retry is built from the question and persona alone, whatever else the first prompt carried.
      quality: openingQuality(retryMessages(openingMessages(this.question, agent.persona))),
    });
    const fields = (v: Opening): Pick<TurnRecord, 'position' | 'confidence' | 'opening' | 'critique'> => ({ position: v.position, confidence: v.confidence, opening: v, critique: null });
    const reused = new Map<string, TurnRecord>();
    for (const agent of agents) {
      const call = recorded?.get(agent.id);
      const outcome = call ? this.#reread(request(agent), call) : null;
      if (outcome) reused.set(agent.id, turnFrom(agent, round, outcome, fields));
    }
    const asked = await this.scheduler.round(
      agents
        .filter((agent) => !reused.has(agent.id))
        .map((agent) => ({ model: agent.model, run: async (): Promise<TurnRecord> => turnFrom(agent, round, await this.call(request(agent)), fields) })),
      upNext,
    );
    const turns = agents.map((agent) => reused.get(agent.id) ?? asked.shift()!);
    for (const turn of turns) this.emit({ type: 'turn.finished', turn, at: this.now() });
    this.#settleClashes(round, turns);
    return turns;
  }

  /**
   * The outcome of `req` read again from a call recorded before an interruption, reported as a
   * reused turn; null (ask it) unless that call ended ok, with this model, asking exactly this.
   */
  #reread<T>(req: CallRequest<T>, call: StoredCall | undefined): StructuredOutcome<T> | null {
    if (!call || call.status !== 'ok' || call.model !== req.model || call.round !== req.round || call.agentId !== req.agentId || call.stage !== req.stage) return null;
    // What it would send: the request with its material inserted. A repaired call was sent the same messages followed by the repair request.
    const sent = this.#calls.prepare(req).prompt.messages;
    if (JSON.stringify(call.messages.slice(0, sent.length)) !== JSON.stringify(sent)) return null;
    const parsed = parseReply(call.raw, req.schema, req.normalize);
    if (!parsed.ok) return null;
    if (req.quality) {
      // Rated again as when it came in; one that asked for a retry or was rejected is asked again whole.
      const rating = rateResult(req.quality.facts(parsed.value), {
        repaired: call.attempt % 2 === 1,
        cutAtLimit: call.metrics.doneReason === 'length',
        truncatedPrompt: Boolean(call.truncation),
        normalized: parsed.notes?.length ?? 0,
      });
      if (rating.action === 'RETRY' || rating.action === 'REJECT') return null;
      reportRating(this, req, 0, rating);
    }
    this.emit({ type: 'turn.reused', round: req.round, agentId: req.agentId, callNumber: call.id, at: this.now() });
    return { status: 'ok', value: parsed.value };
  }

  /** Ends the run as failed unless at least two of `turns` are usable. */
  requireAnswers(turns: TurnRecord[], round: number): TurnRecord[] {
    const usable = turns.filter((t) => t.status === 'ok');
    if (usable.length >= 2) return usable;
    const detail = `only ${usable.length} of ${turns.length} agents gave a usable answer in round ${round}`;
    this.emit({ type: 'debate.exit', reason: 'too_few_answers', round, detail, at: this.now() });
    this.finish('failed', 'too_few_answers', detail);
    const gaps = turns.filter((t) => t.status !== 'ok').map((t) => `${t.agentId}: ${t.error}`);
    const budget = turns.some((t) => t.error?.startsWith('skipped by the token budget'));
    throw new DebateFailedError('TOO_FEW_ANSWERS', `The debate ${this.id} failed: ${detail}.\n${gaps.map((g) => `  - ${g}`).join('\n')}`, {
      hint: budget
        ? `The token budget (${this.tally.limit?.toLocaleString("en-US")} tokens) does not cover two answers: raise --token-budget (or protocol.tokenBudget), or give agents priority: high.`
        : 'Check the failures above (model errors, timeouts or invalid JSON); the calls are stored, see `conclave show ' + this.id + '`.',
    });
  }

  /**
   * A critique round: each agent reads the usable turns of its peers (as given) and updates
   * its position. `peersOf` says whom each agent reads; the calls run together within the slots.
   */
  async critiqueRound(
    round: number,
    agents: AgentSpec[],
    previous: TurnRecord[],
    peersOf: (agent: AgentSpec) => TurnRecord[],
    upNext: string[],
    recorded?: RecordedCalls,
  ): Promise<TurnRecord[]> {
    const own = (agent: AgentSpec): TurnRecord | undefined => previous.find((t) => t.agentId === agent.id);
    // Agents whose call of this round finished before an interruption: read again, or asked with the request built here.
    const reused = new Map<string, TurnRecord>();
    const prepared = new Map<string, TurnRecord | CallRequest<Critique>>();
    for (const agent of agents) {
      const call = recorded?.get(agent.id);
      if (!call) continue;
      const req = this.critiqueRequest(agent, round, own(agent), peersOf(agent));
      const outcome = 'schema' in req ? this.#reread(req, call) : null;
      if (outcome) reused.set(agent.id, critiqueTurnFrom(agent, round, outcome));
      else prepared.set(agent.id, req);
    }
    const asked = await this.scheduler.round(
      agents
        .filter((agent) => !reused.has(agent.id))
        .map((agent) => ({ model: agent.model, run: () => this.critiqueTurn(agent, round, own(agent), peersOf(agent), prepared.get(agent.id)) })),
      upNext,
    );
    const turns = agents.map((agent) => reused.get(agent.id) ?? asked.shift()!);
    for (const turn of turns) this.emit({ type: 'turn.finished', turn, at: this.now() });
    this.#settleClashes(round, turns);
    return turns;
  }

  /** One agent's critique of the given peers' turns, with its own last turn; peers' text is fitted to num_ctx. */
  async critiqueTurn(
    agent: AgentSpec,
    round: number,
    own: TurnRecord | undefined,
    peerTurns: TurnRecord[],
    prepared: TurnRecord | CallRequest<Critique> = this.critiqueRequest(agent, round, own, peerTurns),
  ): Promise<TurnRecord> {
    return 'schema' in prepared ? critiqueTurnFrom(agent, round, await this.call(prepared)) : prepared;
  }

  /** The call an agent's critique makes, or its failed turn when the prompt cannot fit num_ctx. */
  critiqueRequest(agent: AgentSpec, round: number, own: TurnRecord | undefined, peerTurns: TurnRecord[]): TurnRecord | CallRequest<Critique> {
    const usable = peerTurns.filter((t) => t.agentId !== agent.id && t.status === 'ok' && t.position);
    // Under budget pressure peers' reasoning goes before their positions do.
    const lean = this.dropPeerReasoning() && usable.some((t) => t.opening);
    const peers: PeerView[] = usable.map((t) => ({ agentId: t.agentId, position: lean ? (t.position ?? '') : peerText(t) }));
    const options = this.callOptions(agent.model, agent.options, 'critique');
    const ownPosition = own?.status === 'ok' ? own.position : null;
    const budget = this.agentPromptBudget(agent.model, options);
    // The open clashes this agent is a party to go in first; when they leave no room for the peers, they are left out.
    let clashes: Tension[] = this.clashes ? openClashesOf(this.clashes.tensions, agent.id) : [];
    let clashText = critiqueClashSection(agent.id, clashes);
    let fit = fitPeers(estimateMessagesTokens(critiqueMessages(this.question, agent.persona, round, ownPosition, [], clashText)), peers, budget);
    if (!fit && clashes.length) {
      this.warn(`${agent.id}, round ${round}: its open clashes (${clashes.map((t) => t.id).join(', ')}) left out to fit num_ctx ${this.numCtx[agent.model]}`);
      clashes = [];
      clashText = '';
      fit = fitPeers(estimateMessagesTokens(critiqueMessages(this.question, agent.persona, round, ownPosition, [])), peers, budget);
    }
    if (!fit) {
      const error = `the prompt does not fit num_ctx ${this.numCtx[agent.model]} for ${agent.model} even with peers' answers shortened`;
      this.warn(`${agent.id}, round ${round}: ${error}`);
      return { round, agentId: agent.id, model: agent.model, status: 'failed', position: null, confidence: null, opening: null, critique: null, error };
    }
    const truncation = fit.droppedChars > 0 ? `peers' answers shortened by ${fit.droppedChars} characters to fit num_ctx ${this.numCtx[agent.model]}` : null;
    if (truncation) this.warn(`${agent.id}, round ${round}: ${truncation}`);
    return {
      stage: 'critique',
      round,
      agentId: agent.id,
      model: agent.model,
      messages: critiqueMessages(this.question, agent.persona, round, ownPosition, fit.peers, clashText),
      options,
      schema: critiqueSchemaFor(
        peers.map((p) => p.agentId),
        this.preset.agents.filter((a) => a.id !== agent.id).map((a) => a.id),
        clashes.map((t) => t.id),
      ),
      truncation,
      material: { focus: `${agent.persona ?? ''}\n${ownPosition ?? ''}` },
      ...(lean ? { budgetCuts: [`peers' reasoning left out at ${Math.round(this.tally.pressure().share * 100)}% of the budget`] } : {}),
      quality: critiqueQuality(retryMessages(openingMessages(this.question, agent.persona)), fit.peers.length),
    };
  }

  /**
   * The judge scores how close the usable positions are and groups the agents by stance, in one
   * call; reported as the round's judgement, and the stances (normalised, with each agent's move
   * since `previous`, the last round's stances) as a `stances` step.
   */
  async judgeConvergence(round: number, turns: TurnRecord[], previous: RoundStances | null = null): Promise<RoundJudgement> {
    const model = this.preset.judge.model;
    const options = this.callOptions(model, this.preset.judge.options, 'judge', { temperature: 0 });
    const positions: PeerView[] = turns.filter((t) => t.status === 'ok' && t.position).map((t) => ({ agentId: t.agentId, position: t.position! }));
    const ids = positions.map((p) => p.agentId);
    const messages = (peers: PeerView[]) => withStanceSection(judgeMessages(this.question, round, peers), ids, previous?.stances ?? null);
    const fixed = estimateMessagesTokens(messages([]));
    const fit = fitPeers(fixed, positions, this.promptBudget(model, options));
    let judgement: RoundJudgement;
    if (!fit) {
      judgement = { round, status: 'failed', score: null, convergence: null, error: `positions do not fit num_ctx ${this.numCtx[model]} for the judge` };
    } else {
      const truncation = fit.droppedChars > 0 ? `positions shortened by ${fit.droppedChars} characters for the judge` : null;
      const outcome = await this.call({ stage: 'judge', round, agentId: 'judge', model, messages: messages(fit.peers), options, schema: judgeSchemaFor(ids), truncation });
      if (outcome.status === 'ok') {
        const { stances: reply, ...score } = outcome.value;
        const normal = normaliseStances(reply, ids);
        const stances = roundStancesOf({ round, ...normal, panel: this.preset.agents.map((a) => a.id), previous, turns });
        judgement = { round, status: 'ok', score, convergence: convergenceOf(score), error: null, stances };
      } else judgement = { round, status: 'failed', score: null, convergence: null, error: outcome.error };
    }
    this.emit({ type: 'round.judged', judgement, at: this.now() });
    if (judgement.stances) this.step({ kind: 'stances', ...judgement.stances });
    return judgement;
  }

  /** The judge's verdict on one match: the winner (one of the two ids, by the schema) and its reasons. */
  async judgeMatch(round: number, sides: [MatchSide, MatchSide]): Promise<StructuredOutcome<Verdict>> {
    const model = this.preset.judge.model;
    const options = this.callOptions(model, this.preset.judge.options, 'verdict', { temperature: 0 });
    const asPeers: PeerView[] = sides.map((s) => ({ agentId: s.agentId, position: `${s.position}\n${s.critique}` }));
    const fixed = estimateMessagesTokens(verdictMessages(this.question, round, [{ ...sides[0], position: '', critique: '' }, { ...sides[1], position: '', critique: '' }]));
    const fit = fitPeers(fixed, asPeers, this.promptBudget(model, options));
    if (!fit) return { status: 'failed', error: `the match does not fit num_ctx ${this.numCtx[model]} for the judge`, code: 'CONTEXT' };
    // Shortening is applied to each side's answer and critique alike, in proportion.
    const fitted = sides.map((s, i) => {
      const p = fit.peers[i]!;
      if (!p.shortened) return s;
      const keep = p.position.length / (s.position.length + s.critique.length + 1);
      return { ...s, position: clipTo(s.position, keep), critique: clipTo(s.critique, keep), shortened: true };
    }) as [MatchSide, MatchSide];
    const truncation = fit.droppedChars > 0 ? `match sides shortened by ${fit.droppedChars} characters for the judge` : null;
    return this.call({
      stage: 'verdict',
      round,
      agentId: 'judge',
      model,
      messages: verdictMessages(this.question, round, fitted),
      options,
      schema: verdictSchema(sides[0].agentId, sides[1].agentId),
      truncation,
    });
  }

  /** What an optional stage is given: the rounds so far, and a call road that schedules, records and validates. */
  #stageContext(rounds: readonly TranscriptRound[]): StageContext {
    return {
      debateId: this.id,
      question: this.question,
      preset: this.preset,
      rounds,
      now: this.now,
      signal: this.signal,
      ...(this.clashes === undefined ? {} : { clashes: this.clashes }),
      emit: (e) => this.emit(e),
      call: (req) =>
        this.call({
          stage: req.stage,
          round: req.round,
          agentId: req.agentId,
          model: req.model,
          messages: req.messages,
          options: { ...this.callOptions(req.model, req.options, req.stage), ...(req.maxTokens ? { num_predict: req.maxTokens } : {}) },
          schema: req.schema,
          ...(req.format ? { format: req.format } : {}),
          ...(req.normalize ? { normalize: req.normalize } : {}),
          ...(req.check ? { check: req.check } : {}),
          ...(req.priority ? { priority: req.priority } : {}),
          ...(req.onCall ? { onRecord: req.onCall } : {}),
        }),
    };
  }

  /**
   * Maps the clashes on the answers of the last given round (a debate: round 0, before the first
   * critique round) when the preset maps tensions. Each critique round then shows every agent the
   * open clashes it is a party to, and settles those it concedes. Critique rounds already recorded
   * (a resumed run) are settled again from their stored replies, on the board read back from the
   * record when the run before the interruption had mapped it. A failure leaves no board.
   */
  async mapClashes(rounds: readonly TranscriptRound[]): Promise<void> {
    if (!mapsTensions(this.preset) || this.interrupted()) return;
    try {
      if (this.clashes === undefined) this.clashes = await mapClashes(this.#stageContext(rounds.slice(0, 1)));
    } catch (err) {
      if (err instanceof StoreError) throw err;
      this.clashes = null;
      this.warn(`mapping the clashes failed: ${errorMessage(err)}`);
    }
    for (const r of rounds.slice(1)) this.#settleClashes(r.round, r.turns);
  }

  /**
   * Takes the clash board a resumed debate had mapped before its interruption, so its claim and
   * clash calls are not sent again, and records its claims and clashes anew (a resumption clears
   * the stage rows, which the reused rounds then settle again).
   */
  reuseClashes(board: ClashBoard): void {
    this.clashes = board;
    const clashCalls = batchPairs(agentPairs(board.agents), this.preset.tensions?.pairsPerCall ?? 1).length;
    const claimGaps = board.gaps.filter((g) => g.startsWith('no claims from'));
    const update = (u: TensionUpdate): void => this.emit({ type: 'tensions.update', update: u, at: this.now() });
    update({ step: 'claims', agents: board.agents, claims: board.claims, gaps: claimGaps, answerTokens: board.answerTokens, pairs: board.pairsTotal, clashCalls, round: board.round });
    update({ step: 'clashes', tensions: board.tensions, gaps: [...board.gaps], decision: null, round: board.round });
  }

  /** After a critique round: the clashes a party conceded in it are resolved in that round. */
  #settleClashes(round: number, turns: readonly TurnRecord[]): void {
    const board = this.clashes;
    if (!board || !board.tensions.some((t) => t.resolution === 'open')) return;
    const updates = turns
      .filter((t) => t.status === 'ok' && t.critique?.clashUpdates?.length)
      .map((t) => ({ agentId: t.agentId, updates: t.critique!.clashUpdates as ClashUpdate[] }));
    const settled = settleClashes(board.tensions, round, updates);
    board.tensions = settled.tensions;
    const open = board.tensions.filter((t) => t.resolution === 'open').map((t) => t.id);
    this.emit({ type: 'tensions.update', update: { step: 'settled', round, resolved: settled.resolved, open }, at: this.now() });
  }

  /** The optional stages (tension map, votes) over the given rounds; returns sections for the synthesizer. A failed stage is skipped with a warning. */
  async runStages(rounds: readonly TranscriptRound[]): Promise<string[]> {
    const sections: string[] = [];
    for (const stage of this.stages) {
      if (this.interrupted()) break;
      const ctx = this.#stageContext(rounds);
      try {
        const output = await stage.run(ctx);
        sections.push(...(output.synthesisContext ?? []));
      } catch (err) {
        if (this.interrupted()) break;
        if (err instanceof StoreError) throw err;
        this.warn(`${stage.name} failed and was skipped: ${errorMessage(err)}`);
      }
    }
    return sections;
  }

  /**
   * The synthesizer reads the given rounds (clipping each turn harder until they fit) and
   * `extraSections`, and writes the attributed answer that keeps dissent. Of `panel` (default:
   * every agent), those without a usable turn in the last round are listed as failed.
   */
  async synthesize(rounds: readonly TranscriptRound[], extraSections: string[] = [], panel: string[] = this.preset.agents.map((a) => a.id)): Promise<SynthesisRecord> {
    const model = this.preset.synthesizer.model ?? '';
    const options = this.callOptions(model, this.preset.synthesizer.options, 'synthesis', { temperature: 0.2 });
    const last = rounds.at(-1)!;
    const failed = panel
      .filter((id) => last.turns.find((t) => t.agentId === id)?.status !== 'ok')
      .map((id) => ({ agent: id, reason: last.turns.find((t) => t.agentId === id)?.error ?? 'no answer' }));
    const budget = this.promptBudget(model, options);
    const merge = this.mergeStated('synthesis', statedInRounds(rounds, panel));
    const brief = this.preset.protocol.brief ? [`How this question was framed before the panel started:\n${this.preset.protocol.brief}`] : [];
    const sections = [...brief, ...extraSections, ...(merge?.section ? [merge.section] : [])];
    const fit = fitSynthesisPrompt(this.question, [...rounds], panel, failed, sections, budget);
    if (!fit.messages) {
      const result: SynthesisRecord = { status: 'failed', model, synthesis: null, error: `the transcript does not fit num_ctx ${this.numCtx[model]} for ${model}` };
      this.emit({ type: 'synthesis.finished', result, at: this.now() });
      return result;
    }
    const cuts = [
      ...(fit.reasoningTo === null ? [] : [fit.reasoningTo === 0 ? "round 0's reasoning left out" : `round 0's reasoning clipped to ${fit.reasoningTo} characters`]),
      ...(fit.clippedTo === null ? [] : [`each turn clipped to ${fit.clippedTo} characters`]),
    ];
    const truncation = cuts.length ? `${cuts.join(', ')} to fit num_ctx ${this.numCtx[model]}` : null;
    return this.writeSynthesis('synthesis', last.round, 'synthesizer', model, fit.messages, options, budget, truncation, failed, merge?.collisionIds);
  }

  /**
   * Merges what the agents stated (typed constraints and trade-offs) with the user's constraints,
   * records the merge as a step, and returns the prompt section and the collision ids the
   * synthesis must resolve; null when neither the user nor any agent stated anything. The
   * user's constraints reach the synthesizer even when no agent restated them.
   */
  mergeStated(
    stage: 'synthesis' | 'reassembly',
    stated: { constraints: { author: string; constraint: StatedConstraint }[]; tradeOffs: { agentId: string; tradeOff: string }[] },
  ): { section: string | null; collisionIds: string[] } | null {
    if (stated.constraints.length === 0 && stated.tradeOffs.length === 0 && (this.preset.constraints ?? []).length === 0) return null;
    const merge = mergeConstraints(stated.constraints, this.preset.constraints ?? []);
    this.step({ kind: 'constraints', stage, constraints: merge.constraints, collisions: merge.collisions, tradeOffs: stated.tradeOffs });
    return { section: constraintSection(merge), collisionIds: merge.collisions.map((c) => c.id) };
  }

  /**
   * A synthesis-shaped answer written by `agentId` from prepared messages (the synthesizer's,
   * or a decomposer's reassembly); reported as the run's synthesis.
   */
  async writeSynthesis(
    stage: Stage,
    round: number,
    agentId: string,
    model: string,
    messages: ChatMessage[],
    options: Record<string, unknown>,
    budget: number,
    truncation: string | null,
    failed: { agent: string; reason: string }[],
    collisionIds: string[] = [],
  ): Promise<SynthesisRecord> {
    let result: SynthesisRecord;
    if (estimateMessagesTokens(messages) > budget) {
      result = { status: 'failed', model, synthesis: null, error: `the transcript does not fit num_ctx ${this.numCtx[model]} for ${model}` };
    } else {
      if (truncation) this.warn(`${stage}: ${truncation}`);
      const schema = synthesisSchemaFor(
        this.preset.agents.map((a) => a.id),
        round,
        collisionIds,
      );
      const outcome = await this.call({ stage, round, agentId, model, messages, options, schema, truncation, priority: 'essential' });
      result = synthesisRecordOf(outcome, failed, model);
    }
    this.emit({ type: 'synthesis.finished', result, at: this.now() });
    return result;
  }

  /** Reports why the protocol stopped. */
  exit(reason: ExitReason, round: number, detail: string): void {
    this.emit({ type: 'debate.exit', reason, round, detail, at: this.now() });
  }

  finish(status: DebateStatus, exitReason: ExitReason, error: string | null): void {
    this.emit({ type: 'debate.finished', debateId: this.id, status, exitReason, error, at: this.now() });
  }

  /** Reports the protocol's outcome and ends the run: completed when its synthesis succeeded. */
  complete(outcome: ProtocolOutcome): DebateResult {
    const synthesis = outcome.synthesis;
    const ok = synthesis?.status === 'ok';
    // A failed synthesis keeps the run: its rounds stand, and `conclave synthesize` can finish it.
    const status: DebateStatus = ok ? 'completed' : 'unsynthesized';
    const error = ok ? null : `synthesis failed: ${synthesis?.error ?? 'no synthesis'}`;
    this.finish(status, outcome.exitReason, error);
    return {
      id: this.id,
      status,
      exitReason: outcome.exitReason,
      exitDetail: outcome.exitDetail,
      rounds: outcome.rounds,
      synthesis,
      numCtx: this.numCtx,
      error: ok ? null : (synthesis?.error ?? 'no synthesis'),
      scheduler: this.scheduler,
    };
  }

  /** Ends the run as interrupted: everything recorded so far is kept. */
  stopInterrupted(): never {
    // Whoever aborted may say why (a record that stayed locked); a bare abort is Ctrl-C.
    const reason = this.signal?.reason;
    const detail = typeof reason === 'string' && reason !== '' ? reason : 'stopped by the user';
    this.emit({ type: 'debate.exit', reason: 'interrupted', round: this.#round, detail, at: this.now() });
    this.finish('interrupted', 'interrupted', detail);
    throw new InterruptedError(`Debate ${this.id} was stopped${detail === 'stopped by the user' ? '' : ` (${detail})`}; everything recorded so far is kept and it is marked interrupted.`, {
      hint: `Go on from where it stopped with \`conclave resume ${this.id}\`; see what it got to with \`conclave show ${this.id}\`.`,
      debateId: this.id,
    });
  }

  /** Ends the run as interrupted because its host stopped answering: everything recorded so far is kept. */
  stopHostDown(): never {
    const detail = 'the Ollama host stopped answering';
    this.emit({ type: 'debate.exit', reason: 'interrupted', round: this.#round, detail, at: this.now() });
    this.finish('interrupted', 'interrupted', detail);
    throw new HostError('HOST_UNREACHABLE', `Debate ${this.id} stopped in round ${this.#round}: ${detail}. Everything recorded so far is kept and it is marked interrupted.`, {
      hint: `Start the server again (\`ollama serve\`), then go on with \`conclave resume ${this.id}\` (add --host URL to go on with another server).`,
    });
  }

  /** Ends the run as failed for a reason of the protocol's own (a split that never came back). */
  fail(code: string, round: number, detail: string, hint: string): never {
    this.emit({ type: 'debate.exit', reason: 'error', round, detail, at: this.now() });
    this.finish('failed', 'error', detail);
    throw new DebateFailedError(code, `The debate ${this.id} failed: ${detail}.`, { hint });
  }
}

/** The quality hook of an answer in the opening's shape (an opening, a sub-answer); `retry` is its simplified request. */
export function openingQuality(retry: ChatMessage[]): QualityHook<Opening> {
  return {
    facts: (v) => ({ position: v.position, reasoning: v.reasoning, confidence: v.confidence, tradeOffs: v.tradeOffs?.length ?? 0, constraints: v.constraints?.length ?? 0 }),
    retry,
    fromRetry: (o) => o,
  };
}

/**
 * The quality hook of a critique that was shown `peers` answers. Its retry is a fresh answer
 * to the question alone, kept as a critique that names no peer.
 */
export function critiqueQuality(retry: ChatMessage[], peers: number): QualityHook<Critique> {
  return {
    facts: (v) => ({ position: v.updatedPosition, confidence: v.confidence, peers, engaged: v.agreements.length + v.disagreements.length, tradeOffs: v.tradeOffs?.length ?? 0, constraints: v.constraints?.length ?? 0 }),
    retry,
    fromRetry: (o) => ({ agreements: [], disagreements: [], updatedPosition: o.position, confidence: o.confidence }),
  };
}

export function turnFrom<T>(
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

function critiqueTurnFrom(agent: AgentSpec, round: number, outcome: StructuredOutcome<Critique>): TurnRecord {
  return turnFrom(agent, round, outcome, (v) => ({ position: v.updatedPosition, confidence: v.confidence, opening: null, critique: v }));
}

/** What peers see of a turn: an opening's position and reasoning, or a critique's updated position. */
export function peerText(turn: TurnRecord): string {
  if (turn.opening) return `${turn.opening.position}\nReasoning: ${turn.opening.reasoning}`;
  return turn.position ?? '';
}

function clipTo(text: string, share: number): string {
  const max = Math.max(40, Math.floor(text.length * share));
  return text.length <= max ? text : `${text.slice(0, max - 1).trimEnd()}…`;
}

/** Tokens each model needs at most (prompt plus reply) in this run, and any num_ctx the preset fixes. */
function contextNeeds(preset: Preset, question: string, shape: RunShape, extraModels: string[], material: number): { tokens: Record<string, number>; explicit: Record<string, number> } {
  const constraints = estimateTokens(standingText(preset.constraints ?? [], preset.protocol.brief));
  const budgets = stageBudgets({
    agentCount: preset.agents.length,
    maxRounds: preset.protocol.maxRounds,
    questionTokens: estimateTokens(question),
    maxPersonaTokens: Math.max(60, ...preset.agents.map((a) => estimateTokens(a.persona ?? ''))),
    maxAnswerTokens: preset.protocol.maxAnswerTokens,
  });
  const tokens: Record<string, number> = {};
  const explicit: Record<string, number> = {};
  const need = (model: string, stage: keyof typeof budgets, own: number | undefined, extra = 0): void => {
    tokens[model] = Math.max(tokens[model] ?? 0, budgets[stage].prompt + budgets[stage].reply + extra);
    if (own) explicit[model] = Math.max(explicit[model] ?? 0, own);
  };
  // Agents' prompts carry the constraints and their share of the material on top of the rest.
  for (const a of preset.agents) {
    need(a.model, 'opening', a.options?.num_ctx, material + constraints);
    need(a.model, 'critique', a.options?.num_ctx, material + constraints);
  }
  if (shape.usesJudge) need(preset.judge.model, 'judge', preset.judge.options?.num_ctx);
  for (const model of shape.synthesisModels) {
    const own = model === preset.synthesizer.model ? preset.synthesizer.options?.num_ctx : preset.agents.find((a) => a.model === model)?.options?.num_ctx;
    need(model, 'synthesis', own);
  }
  // Optional stages read the final positions, like the judge.
  for (const model of extraModels) need(model, 'judge', undefined);
  return { tokens, explicit };
}



/** The roles that make calls in this run, with the model each calls. */
function thinkingRoles(preset: Preset, shape: RunShape): [string, string][] {
  const roles: [string, string][] = preset.agents.map((a) => [a.id, a.model]);
  if (shape.usesJudge) roles.push(['judge', preset.judge.model]);
  for (const model of shape.synthesisModels) roles.push(['synthesizer', model]);
  if (preset.tensions && preset.tensions.enabled !== false) roles.push(['tension-map', preset.tensions.model ?? preset.judge.model]);
  return roles;
}

function roomPerModel(roles: [string, string][], preset: Preset, capabilities: (model: string) => readonly string[] | null): Record<string, number> {
  const room: Record<string, number> = {};
  for (const [role, model] of roles) {
    const choice = chooseThinking(thinkSettingOf(preset, role), capabilities(model), thinkingBase(preset));
    room[model] = Math.max(room[model] ?? 0, choice.room);
  }
  return room;
}

/** The plan's thinking: every role that thinks or sets `think`. */
function planThinking(roles: [string, string][], preset: Preset, capabilities: (model: string) => readonly string[] | null): PlanThinking[] {
  const out: PlanThinking[] = [];
  for (const [role, model] of roles) {
    const setting = thinkSettingOf(preset, role);
    const choice = chooseThinking(setting, capabilities(model), thinkingBase(preset));
    if (!choice.thinks && setting === undefined) continue;
    out.push({ role, model, thinks: choice.thinks, think: choice.send === undefined ? 'default' : (String(choice.send) as PlanThinking['think']), room: choice.room });
  }
  return out;
}
