import { setMaxListeners } from 'node:events';
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import pLimit from 'p-limit';
import type { Preset } from '../config/preset-schema.js';
import type { CallRecord, DebateEvent, DebateListener } from '../engine/events.js';
import { recorder } from '../engine/recorder.js';
import { presetModels, runDebate } from '../engine/run-debate.js';
import type { ExtraStage } from '../engine/stage.js';
import { DebateFailedError, HostError, InputError, InterruptedError, errorMessage } from '../errors.js';
import { stallMsOf } from '../backend/call-control.js';
import { connect } from '../backend/connect.js';
import type { ModelServer } from '../backend/types.js';
import type { HostEntry } from '../config/preset-schema.js';
import { normalizeHost } from '../ollama/host.js';
import { gatherHostFacts, sameModel } from '../schedule/facts.js';
import { SlotPool } from '../schedule/pool.js';
import { onPool } from '../schedule/failover.js';
import { isProcessAlive } from '../store/open.js';
import {
  type BenchPresetSnapshot,
  type BenchRunRecord,
  claimBenchRun,
  createBenchRun,
  doneTrialKeys,
  finishBenchRun,
  finishTrial,
  getBenchItems,
  getBenchRun,
  recordBenchCall,
  setTrialDebate,
  startTrial,
  trialKey,
} from '../store/bench.js';
import { canonicalJson } from '../store/store.js';
import type { Store } from '../store/store.js';
import { ENGINE_VERSION } from '../version.js';
import { answerCall } from './answer-call.js';
import { type ParallelCapture, parallelSynthesis } from './parallel-call.js';
import { type BaselineAnswer, type Condition, agentTurnCount, scoreTrial } from './conditions.js';
import { benchQuestion } from './prompts.js';
import type { SuiteItem } from './suite.js';
import { captureVote } from './vote-capture.js';
import { selfCorrection } from './self-correction.js';
import type { ChatMessage } from '../engine/events.js';

export interface NewBenchOptions {
  store: Store;
  /** The suite as the user named it (a built-in name or a path). */
  suite: string;
  items: SuiteItem[];
  presets: { preset: Preset; source: string }[];
  host: string;
  /** A pool of hosts (Ollama and OpenAI-compatible) instead of the one `host`: each model is called where it is served. */
  hosts?: HostEntry[];
  /** Seeds the bootstrap intervals of the report; default 0. */
  seed?: number;
  /** Use only the first N items of the suite. */
  limit?: number;
  /** Items (item × preset) in flight at once; default 1. */
  concurrency?: number;
  /** Calls in flight per model (OLLAMA_NUM_PARALLEL); default 1. */
  numParallel?: number;
  now?: () => number;
  id?: string;
}

export interface BenchProgress {
  /** Trials finished so far, this session and earlier ones. */
  done: number;
  total: number;
  /** Trials finished before this session started (a resume). */
  resumedFrom: number;
  itemId: string;
  preset: string;
  /** Whether each headline condition got the item right. */
  correct: Partial<Record<Condition, boolean>>;
  /** This item's answers that came back (calls that failed outright not counted), and how many of them could not be read. */
  answers: number;
  unparsed: number;
}

export interface ExecuteBenchOptions {
  store: Store;
  runId: string;
  /** Overrides the host stored with the run (e.g. on a resume from another machine). */
  host?: string;
  /** Overrides the hosts stored with the run. */
  hosts?: HostEntry[];
  /** Where API keys are read from; default process.env. */
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  onProgress?: (progress: BenchProgress) => void;
  /** Listeners of each item's debate, made afresh per debate (the CLI's --events). */
  listenersFor?: () => DebateListener[];
  /** Optional debate stages; defaults to the built-in ones. */
  stages?: ExtraStage[];
  now?: () => number;
  /** Told once when a host of the pool leaves mid-run (its calls go to the other hosts of their models), and when it is back. */
  notice?: (message: string) => void;
}

export interface BenchOutcome {
  runId: string;
  trialsDone: number;
  trialsTotal: number;
}

export function newBenchRunId(now: number): string {
  const d = new Date(now);
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `b${String(d.getUTCFullYear()).slice(2)}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}-${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}-${randomBytes(2).toString('hex')}`;
}

/** sha256 of the items as stored, so two runs can tell whether they used the same suite. */
export function suiteHash(items: readonly SuiteItem[]): string {
  return createHash('sha256').update(canonicalJson(items)).digest('hex');
}

/** Records a new bench run (its items and frozen presets) and returns its id; nothing runs yet. */
export function createRun(opts: NewBenchOptions): string {
  const now = opts.now ?? Date.now;
  const seed = opts.seed ?? 0;
  const concurrency = opts.concurrency ?? 1;
  const numParallel = opts.numParallel ?? 1;
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new InputError('BAD_FLAG', `--seed must be a whole number from 0 to 4294967295; got ${seed}.`);
  }
  for (const [flag, value] of [['concurrency', concurrency], ['num-parallel', numParallel]] as const) {
    if (!Number.isInteger(value) || value < 1) throw new InputError('BAD_FLAG', `--${flag} must be a whole number from 1 up; got ${value}.`);
  }
  if (opts.limit !== undefined && (!Number.isInteger(opts.limit) || opts.limit < 1)) {
    throw new InputError('BAD_FLAG', `--limit must be a whole number from 1 up; got ${opts.limit}.`);
  }
  if (opts.presets.length === 0) throw new InputError('BENCH_NO_PRESET', 'A bench needs at least one preset.', { hint: 'Pass --preset NAME, once per preset to compare.' });
  const names = new Set<string>();
  for (const { preset, source } of opts.presets) {
    if (names.has(preset.name)) {
      throw new InputError('BENCH_DUPLICATE_PRESET', `Two presets are named \`${preset.name}\` (the second from ${source}).`, {
        hint: 'Each preset of a bench needs its own `name`: results are filed under it.',
      });
    }
    names.add(preset.name);
  }
  const items = opts.limit === undefined ? opts.items : opts.items.slice(0, opts.limit);
  const id = opts.id ?? newBenchRunId(now());
  const presets: BenchPresetSnapshot[] = opts.presets.map(({ preset, source }) => ({ name: preset.name, source, preset }));
  createBenchRun(opts.store, {
    id,
    suite: opts.suite,
    suiteHash: suiteHash(items),
    items,
    presets,
    seed,
    itemLimit: opts.limit ?? null,
    host: opts.hosts ? opts.hosts.map((h) => h.url).join(', ') : opts.host,
    ...(opts.hosts ? { hosts: opts.hosts } : {}),
    concurrency,
    numParallel,
    engineVersion: ENGINE_VERSION,
    createdAt: now(),
  });
  return id;
}

/** Checks that a run may be resumed: it exists, is not finished, and no live process is running it. */
export function checkResumable(run: BenchRunRecord, trialsDone: number): void {
  const total = run.itemCount * run.presets.length;
  if (run.status === 'completed') {
    throw new InputError('BENCH_FINISHED', `Bench run \`${run.id}\` has already finished (${trialsDone} of ${total} items done); there is nothing to resume.`, {
      hint: `See its results with \`conclave bench report ${run.id}\`.`,
    });
  }
  if (run.status === 'running' && run.pid !== process.pid && run.hostname === hostname() && isProcessAlive(run.pid)) {
    throw new InputError('BENCH_RUNNING', `Bench run \`${run.id}\` is still being run by process ${run.pid} on this machine.`, {
      hint: 'Wait for it to finish, or stop that process first (Ctrl-C keeps every finished item), then resume.',
    });
  }
}


/**
 * Runs every trial (item × preset) of a run that is not done yet. Each trial
 * is written, whole, as soon as it ends; an interrupted run loses only the
 * trials in flight and resumes from there.
 */
export async function executeBench(opts: ExecuteBenchOptions): Promise<BenchOutcome> {
  const { store, runId } = opts;
  const now = opts.now ?? Date.now;
  const run = getBenchRun(store, runId);
  const done = doneTrialKeys(store, runId);
  checkResumable(run, done.size);
  const host = opts.host ?? run.host;
  const items = getBenchItems(store, runId);
  const total = items.length * run.presets.length;
  const todo: { item: SuiteItem; snapshot: BenchPresetSnapshot }[] = [];
  for (const item of items) {
    for (const snapshot of run.presets) if (!done.has(trialKey(item.id, snapshot.name))) todo.push({ item, snapshot });
  }
  claimBenchRun(store, runId);

  // One failure (host gone, disk full) stops the other trials too; Ctrl-C arrives the same way.
  const controller = new AbortController();
  // Every call in flight listens for the stop: with --concurrency that is more than Node's default warning threshold.
  setMaxListeners(0, controller.signal);
  const onAbort = (): void => controller.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.signal?.aborted) controller.abort();
  // One set of slots for every debate and baseline call, so --concurrency never oversubscribes a model.
  const models = [...new Set(todo.flatMap(({ snapshot }) => presetModels(snapshot.preset, opts.stages)))];
  const hosts = opts.hosts ?? (opts.host === undefined ? run.hosts : null) ?? null;
  const { pool, servers } = hosts ? await poolOf(hosts, models, run.numParallel, opts.env) : singlePool(host, models, run.numParallel);
  pool.notice = opts.notice;
  const resumedFrom = done.size;
  let finished = done.size;
  let failure: unknown = null;

  const limit = pLimit(run.concurrency);
  await Promise.all(
    todo.map(({ item, snapshot }) =>
      limit(async () => {
        if (controller.signal.aborted) return;
        try {
          const trial = await runTrial({ store, runId, item, snapshot, host, ...(hosts ? { hosts } : {}), ...(opts.env ? { env: opts.env } : {}), servers, pool, numParallel: run.numParallel, signal: controller.signal, stages: opts.stages, now, listeners: opts.listenersFor?.() ?? [] });
          finished += 1;
          opts.onProgress?.({ done: finished, total, resumedFrom, itemId: item.id, preset: snapshot.name, ...trial });
        } catch (err) {
          if (failure === null && !(err instanceof InterruptedError && controller.signal.aborted)) failure = err;
          controller.abort();
        }
      }),
    ),
  );
  opts.signal?.removeEventListener('abort', onAbort);

  if (failure !== null || controller.signal.aborted) {
    const reason = failure === null ? 'stopped by the user' : errorMessage(failure);
    finishBenchRun(store, runId, 'interrupted', reason, now());
    if (failure !== null) throw failure;
    throw new InterruptedError(`Bench run ${runId} was stopped after ${finished} of ${total} items; every finished item is kept.`, {
      hint: `Continue it with \`conclave bench --resume ${runId}\`.`,
    });
  }
  finishBenchRun(store, runId, 'completed', null, now());
  return { runId, trialsDone: finished, trialsTotal: total };
}

/** Call failures that say the server, not the model, failed: they stop the bench instead of scoring as wrong. */
const OUTAGE_CODES = new Set(['HOST_UNREACHABLE', 'MODEL_MISSING', 'KEY_REFUSED']);

/**
 * Whether a call that could not reach its host was sent again and reached one: a host that left a
 * pool hands its calls to another host of their model, so its refusal is no outage of the item.
 */
function answeredLater(calls: readonly CallRecord[], index: number): boolean {
  const lost = calls[index]!;
  return calls.slice(index + 1).some((c) => c.stage === lost.stage && c.round === lost.round && c.agentId === lost.agentId && c.status !== 'error' && c.status !== 'aborted');
}

/** An item the server let down: the run stops, and its resume (never the debate's own) runs the item again. */
function itemLost(code: string, item: SuiteItem, runId: string, detail: string, cause?: unknown): HostError {
  return new HostError(code, `Item \`${item.id}\` of bench run ${runId} could not be completed: ${detail}`, {
    hint: `Fix the server (start it, or pull the model), then continue with \`conclave bench --resume ${runId}\`; finished items are kept.`,
    ...(cause === undefined ? {} : { cause }),
  });
}

/** The one Ollama host of a run, with `numParallel` slots per model. */
function singlePool(host: string, models: string[], numParallel: number): { pool: SlotPool; servers: Map<string, ModelServer> } {
  const url = normalizeHost(host);
  return { pool: new SlotPool([{ url, numParallel, models }]), servers: new Map([[url, connect({ url })]]) };
}

/**
 * A pool of hosts: each model gets the slots of every host that serves it (an OpenAI-compatible
 * server's own count, an Ollama host's from its entry or the run's --num-parallel). Hosts that
 * do not answer are left out; a model no host serves stops the run before its first trial.
 */
async function poolOf(hosts: HostEntry[], models: string[], numParallel: number, env?: NodeJS.ProcessEnv): Promise<{ pool: SlotPool; servers: Map<string, ModelServer> }> {
  const facts = await Promise.all(hosts.map((h) => gatherHostFacts(h, models, { version: false, ...(env ? { env } : {}) })));
  const healthy = facts.filter((f) => f.ok);
  const missing = models.filter((m) => !healthy.some((f) => f.models.some((t) => sameModel(t.name, m))));
  if (healthy.length === 0 || missing.length > 0) {
    const down = facts.filter((f) => !f.ok).map((f) => `${f.url} (${f.error})`);
    throw new HostError(healthy.length === 0 ? (facts[0]?.errorCode ?? 'HOST_UNREACHABLE') : 'MODEL_MISSING', healthy.length === 0 ? `None of the bench's hosts answer: ${down.join('; ')}.` : `No host of the bench serves ${missing.map((m) => `\`${m}\``).join(', ')}${down.length ? ` (not answering: ${down.join('; ')})` : ''}.`, {
      hint: 'Check the hosts file with `conclave models --hosts FILE`: it lists what each host serves.',
    });
  }
  const servers = new Map(healthy.map((f) => [f.url, connect(hosts[facts.indexOf(f)]!, env)]));
  const pool = new SlotPool(
    healthy.map((f) => ({
      url: f.url,
      numParallel: f.api === 'openai' || f.numParallelSource === 'config' ? f.numParallel : numParallel,
      models: models.filter((m) => f.models.some((t) => sameModel(t.name, m))),
    })),
  );
  return { pool, servers };
}

interface TrialContext {
  store: Store;
  runId: string;
  item: SuiteItem;
  snapshot: BenchPresetSnapshot;
  host: string;
  hosts?: HostEntry[];
  env?: NodeJS.ProcessEnv;
  /** A client per host URL of the pool. */
  servers: Map<string, ModelServer>;
  pool: SlotPool;
  numParallel: number;
  signal: AbortSignal;
  stages: ExtraStage[] | undefined;
  now: () => number;
  listeners: DebateListener[];
}

async function runTrial(ctx: TrialContext): Promise<Pick<BenchProgress, 'correct' | 'answers' | 'unparsed'>> {
  const { store, item, snapshot, now } = ctx;
  const preset = snapshot.preset;
  const trialId = startTrial(store, { runId: ctx.runId, itemId: item.id, preset: snapshot.name, maxRounds: preset.protocol.maxRounds, startedAt: now() });
  const vote = captureVote(preset);
  let debateId: string | null = null;
  let debateError: string | null = null;
  const onStart = (event: DebateEvent): void => {
    // The recorder has already written the debate row when listeners hear of it.
    if (event.type === 'debate.started') {
      debateId = event.debateId;
      setTrialDebate(store, trialId, event.debateId);
    }
  };
  const record = recorder(store);
  try {
    await runDebate({
      question: benchQuestion(item),
      preset,
      host: ctx.host,
      // The bench's own servers, always: its slot pool holds no other, and a preset's `hosts:` never
      // takes a bench's questions elsewhere (--host and --hosts name them, as for `run`).
      hosts: ctx.hosts ?? [{ url: ctx.host, numParallel: ctx.numParallel }],
      ...(ctx.env ? { env: ctx.env } : {}),
      recorder: record,
      listeners: [onStart, vote.listener, ...ctx.listeners],
      signal: ctx.signal,
      numParallel: ctx.numParallel,
      pool: ctx.pool,
      ...(ctx.stages ? { stages: ctx.stages } : {}),
      now,
    });
  } catch (err) {
    // A server gone or a model missing mid-debate stops the bench; the way on is the run's resume, not the debate's.
    if (err instanceof HostError && OUTAGE_CODES.has(err.code)) throw itemLost(err.code, item, ctx.runId, err.message, err);
    // A debate that failed (too few usable answers) is a result: its conditions score as wrong.
    if (!(err instanceof DebateFailedError) || debateId === null) throw err;
    debateError = err.message;
  }
  await record.drain();
  if (debateId === null) throw new Error('the debate ended without starting');
  const debate = store.getDebate(debateId);

  // The baselines reuse each model's num_ctx from the debate: a different one would reload the model.
  const numCtx = new Map<string, unknown>();
  for (const call of debate.calls) if (!numCtx.has(call.model) && call.options.num_ctx !== undefined) numCtx.set(call.model, call.options.num_ctx);
  // …and think as the debate's calls did, with the same room for it, so compute is matched on every token, thinking included.
  const asked = new Map<string, CallRecord>();
  for (const call of debate.calls) if ((call.stage === 'opening' || call.stage === 'synthesis') && call.attempt === 0 && !asked.has(call.agentId)) asked.set(call.agentId, call);
  const k = agentTurnCount(debate.calls);
  const serverOf = (host: string): ModelServer => ctx.servers.get(host)!;
  const ask = (agentIndex: number, condition: 'single' | 'sc' | 'self-correction', sample: number, revision?: ChatMessage[]): Promise<BaselineAnswer> => {
    const agent = preset.agents[agentIndex]!;
    const ctxSize = numCtx.get(agent.model);
    const opening = asked.get(agent.id);
    const options: Record<string, unknown> = {
      num_predict: preset.protocol.maxAnswerTokens,
      ...agent.options,
      ...(opening?.options.num_predict === undefined ? {} : { num_predict: opening.options.num_predict }),
      ...(ctxSize === undefined ? {} : { num_ctx: ctxSize }),
    };
    // Each sample carries its own seed: samples of one agent differ, and a rerun draws the same ones.
    if (condition === 'sc') options.seed = (typeof agent.options?.seed === 'number' ? agent.options.seed : 0) + 1 + sample;
    const outcome = onPool(ctx.pool, agent.model, serverOf, (server, elsewhere) =>
      answerCall(server, {
        item,
        agentId: agent.id,
        persona: agent.persona,
        model: agent.model,
        options,
        think: opening?.think,
        timeoutMs: preset.protocol.callTimeoutSeconds * 1000,
        stallMs: stallMsOf(preset.protocol),
        signal: ctx.signal,
        now,
        onCall: (call: CallRecord) => recordBenchCall(store, trialId, condition, sample, call),
        ...(revision ? { revision: { round: sample, messages: revision } } : {}),
        elsewhere,
      }),
    );
    return outcome.then((answer) => ({ agentId: agent.id, model: agent.model, outcome: answer }));
  };
  const n = preset.agents.length;
  const [singles, samples, control] = await Promise.all([
    Promise.all(preset.agents.map((_, i) => ask(i, 'single', 0))),
    Promise.all(Array.from({ length: k }, (_, j) => ask(j % n, 'sc', j))),
    selfCorrection({ item, preset, debate, signal: ctx.signal, revise: (i, round, messages) => ask(i, 'self-correction', round, messages).then((b) => b.outcome) }),
  ]);
  // The parallel protocol from the debate's round 0: one more call, a synthesis over the independent answers.
  let parallel: ParallelCapture | null = null;
  // The protocol the debate ran: with `auto`, the advisor's choice for this item.
  const kind = debate.preset.protocol.kind ?? 'debate';
  if ((kind === 'debate' || kind === 'tournament' || kind === 'delphi') && !ctx.signal.aborted) {
    const model = debate.agents.find((a) => a.role === 'synthesizer')?.model ?? preset.synthesizer.model ?? '';
    const ctxSize = numCtx.get(model);
    parallel = await onPool(ctx.pool, model, serverOf, (server, elsewhere) =>
      parallelSynthesis(server, {
        debate,
        question: benchQuestion(item),
        model,
        options: { num_predict: 1500, temperature: 0.2, ...preset.synthesizer.options, ...(asked.get('synthesizer')?.options.num_predict === undefined ? {} : { num_predict: asked.get('synthesizer')!.options.num_predict }), ...(ctxSize === undefined ? {} : { num_ctx: ctxSize }) },
        think: asked.get('synthesizer')?.think,
        timeoutMs: preset.protocol.callTimeoutSeconds * 1000,
        stallMs: stallMsOf(preset.protocol),
        signal: ctx.signal,
        now,
        onCall: (call: CallRecord) => recordBenchCall(store, trialId, 'parallel', 0, call),
        elsewhere,
      }),
    );
  }
  if (ctx.signal.aborted) throw new InterruptedError('stopped');
  // A server that went away or lost a model is not a wrong answer: stop, and let a resume redo this item.
  const outage =
    [...singles, ...samples, ...control.agents.flatMap((a) => a.revisions.map((outcome) => ({ model: a.model, outcome })))].map((b) => (b.outcome.errorCode && OUTAGE_CODES.has(b.outcome.errorCode) ? `${b.model}: ${b.outcome.error}` : null)).find((x) => x !== null) ??
    debate.calls.map((c, i) => (c.error && OUTAGE_CODES.has(c.error.split(':')[0]!) && !answeredLater(debate.calls, i) ? `${c.model}: ${c.error}` : null)).find((x) => x !== null) ??
    null;
  if (outage !== null) throw itemLost('BENCH_HOST_LOST', item, ctx.runId, outage);

  const scored = scoreTrial({ item, preset, debate, singles, samples, vote: vote.result(), parallel, selfCorrection: control });
  finishTrial(
    store,
    trialId,
    {
      debateId,
      debateStatus: debate.status,
      exitReason: debate.exitReason,
      roundsRun: scored.roundsRun,
      agentTurns: scored.agentTurns,
      error: debateError,
      finishedAt: now(),
    },
    scored.results,
    scored.answers,
  );
  const correct: BenchProgress['correct'] = {};
  for (const r of scored.results) if (r.variant === '' && r.available) correct[r.condition as Condition] = r.correct;
  const returned = scored.answers.filter((a) => a.status !== 'error');
  return { correct, answers: returned.length, unparsed: returned.filter((a) => a.status === 'unparsed').length };
}
