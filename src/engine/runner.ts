import type { ModelOptions, Preset, ThinkSetting } from '../config/preset-schema.js';
import { DebateFailedError, HostError, InputError, InterruptedError, errorMessage } from '../errors.js';
import { type CallPriority, defaultPriority, TokenTally } from '../protocol/budget.js';
import { estimateMessagesTokens, estimateTokens } from '../protocol/context.js';
import { type Attachment, standingText } from '../protocol/material.js';
import { openingMessages } from '../protocol/prompts.js';
import type { ClashBoard } from '../protocol/tensions.js';
import type { DebateScheduler } from '../schedule/scheduler.js';
import { CallPath } from './call/path.js';
import { type Prompt, materialReserve } from './call/material.js';
import { type Unreached, outageStop } from './call/outage.js';
import { promptTooLong } from './prompt-fit.js';
import { goOnHint } from './resumable.js';
import type { CallRequest } from './call/request.js';
import { chooseThinking, type ThinkingChoice, thinkingBase, thinkSettingOf } from './call/thinking.js';
import type { BudgetDecision, DebateEvent, DebateListener, DebateStatus, ExitReason, Stage } from './events.js';
import type { ProtocolStep } from './protocol-events.js';
import { panelAgents, prepareSchedule, replyTokens, usedBy } from './run-plan.js';
import type { DebateResult, ProtocolOutcome, RunDebateOptions, RunShape } from './run-types.js';
import type { ExtraStage } from './stage.js';
import type { StructuredOutcome } from './structured-call.js';

/**
 * The run a protocol works in: its preset, question and scheduler, the one emitter every event
 * goes through, the path every call takes, the token budget, and how a run ends (exit,
 * completion, interruption, failure). The primitives the protocols speak (fan-out, critique
 * round, judge, synthesis, optional stages, ...) are functions over it, one per file in
 * src/engine/primitives/; they take the transcript they work on as arguments and keep no hidden
 * state about it, so a protocol can start from stored rounds as well as from nothing.
 */

export type { DebateResult, ProtocolOutcome, RecordedCalls, RunDebateOptions, RunShape } from './run-types.js';
export { type CallRequest, type QualityHook, QUALITY_REJECTED } from './call/request.js';
export { MATERIAL_SHARE_TOKENS, materialReserve } from './call/material.js';
export { critiqueQuality, openingQuality, peerText, turnFrom } from './primitives/turns.js';

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
  /** For a resumed run whose clashes were not mapped to the end: the claims its finished claims calls gave, by agent (`reuseClaims`). */
  recordedClaims: ReadonlyMap<string, readonly string[]> | undefined = undefined;
  readonly attachments: Attachment[];
  /** Tokens counted against `protocol.tokenBudget` (and counted without one): spent (`exhausted()`), protocols start no new round of agent calls; at 90% (`pressure().dropReasoning`), peers' reasoning is left out of prompts. */
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
    scheduler.onPoolChange((message) => {
      this.warn(message);
      opts.notice?.(message);
    });
  }

  /** Plans the schedule (checking hosts and models), then reports the debate as started. */
  static async start(opts: RunDebateOptions, id: string, shape: RunShape): Promise<Runner> {
    const preset = opts.preset;
    const { scheduler, early } = await prepareSchedule(opts, shape);
    const runner = new Runner(opts, id, scheduler, shape.stages);
    runner.checkPersonasFit();
    shape.checkModels?.((model) => scheduler.digestOf(model));
    const agents = panelAgents(preset, scheduler);
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
    this.#display(event);
  }

  /** Reports events that happened at once, in order: the recorder writes them in one transaction. */
  emitTogether(events: readonly DebateEvent[]): void {
    const recorder = this.#recorder;
    if (recorder?.together) recorder.together(events);
    else if (recorder) for (const event of events) recorder(event);
    for (const event of events) this.#display(event);
  }

  #display(event: DebateEvent): void {
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
    const unreached = this.#calls.outages.takeHostDown();
    if (unreached) this.stopHostDown(unreached);
  }

  /** Options for one call: the stage's reply budget, the caller's defaults, the preset's options, and the debate's fixed num_ctx. */
  callOptions(model: string, own: ModelOptions | undefined, stage: Stage, defaults: Record<string, unknown> = {}): Record<string, unknown> {
    const numPredict = replyTokens(stage, this.preset.protocol.maxAnswerTokens);
    // num_ctx is fixed per model for the whole debate: a change forces Ollama to reload the model.
    return { num_predict: Math.round(numPredict), ...defaults, ...own, num_ctx: this.numCtx[model] };
  }

  /**
   * Refuses, before anything is recorded, a panel whose agent's opening prompt (persona, question,
   * constraints and the attachments' reserve) cannot fit its model's num_ctx: the server would drop the start of it unsaid.
   */
  checkPersonasFit(): void {
    const standing = estimateTokens(standingText(this.preset.constraints ?? [], this.preset.protocol.brief));
    const material = materialReserve(this.attachments);
    for (const agent of this.preset.agents) {
      const opening = estimateMessagesTokens(openingMessages(this.question, agent.persona));
      const room = this.promptBudget(agent.model, this.callOptions(agent.model, agent.options, 'opening'));
      if (opening + standing + material <= room) continue;
      throw promptTooLong({ agent, persona: estimateTokens(agent.persona ?? ''), opening, standing, material, room, numCtx: this.numCtx[agent.model] ?? 4096 });
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

  /** What a request would send once its thinking, constraints and material are applied (a resumed run compares a recorded call with it). */
  prepareCall<T>(req: CallRequest<T>): { req: CallRequest<T> & { think?: ThinkSetting }; prompt: Prompt } {
    return this.#calls.prepare(req);
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

  /** The agent's priority under the budget; judges and stage models count as normal. */
  priorityOf(agentId: string): CallPriority {
    const agent = this.preset.agents.find((a) => a.id === agentId);
    return agent ? defaultPriority(agent) : 'normal';
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
      hint: goOnHint(this.preset.protocol.kind, this.id, null),
      debateId: this.id,
    });
  }

  /**
   * Ends the run as interrupted because its host stopped answering: everything recorded so far is kept.
   * In a pool, the message names each host that went and the models no host left in the pool serves.
   */
  stopHostDown(unreached: readonly Unreached[]): never {
    const { detail, fix } = outageStop(this.scheduler.plan.hosts, unreached, usedBy(this.preset));
    this.emit({ type: 'debate.exit', reason: 'interrupted', round: this.#round, detail, at: this.now() });
    this.finish('interrupted', 'interrupted', detail);
    throw new HostError('HOST_UNREACHABLE', `Debate ${this.id} stopped in round ${this.#round}: ${detail}. Everything recorded so far is kept and it is marked interrupted.`, {
      hint: goOnHint(this.preset.protocol.kind, this.id, fix),
    });
  }

  /** Ends the run as failed for a reason of the protocol's own (a split that never came back). */
  fail(code: string, round: number, detail: string, hint: string): never {
    this.emit({ type: 'debate.exit', reason: 'error', round, detail, at: this.now() });
    this.finish('failed', 'error', detail);
    throw new DebateFailedError(code, `The debate ${this.id} failed: ${detail}.`, { hint });
  }
}
