import type { PreparedRun } from '../cli/run-debate-cli.js';
import { ConclaveError, isConclaveError, StoreError } from '../errors.js';
import type { DebateEvent, DebateListener, DebateStatus, Stage } from '../engine/events.js';
import { lockWaitFromEnv, recorder } from '../engine/recorder.js';
import { newDebateId, runDebate } from '../engine/run-debate.js';
import type { Store } from '../store/store.js';
import { StreamTracker } from '../events/stream-text.js';

/** Where a run stands: what `conclave_wait` reports while it goes on. */
export interface RunProgress {
  /** Grows with every call, round and verdict: the `progress` of MCP's progress notifications. */
  step: number;
  round: number | null;
  stage: Stage | null;
  callsDone: number;
  /** The mean of the judge's axes in the last round judged. */
  lastJudgeScore: number | null;
  lastJudgedRound: number | null;
  /** The call streaming most recently, and the first words of what it is writing (model text: untrusted). */
  writing: { agentId: string; stage: Stage; words: string } | null;
}

/** How many words of a streamed answer a progress notification carries. */
export const FIRST_WORDS = 12;

/** How a run of this process ended: its status, and the error that ended it, if one did. */
export interface RunEnd {
  status: DebateStatus;
  error: ConclaveError | null;
}

/** A debate this server started and runs in its own process. */
export interface Run {
  id: string;
  progress: RunProgress;
  /** Set once the run has ended and everything of it is written. */
  end: RunEnd | null;
  /** Called after every change of `progress` and once at the end. */
  readonly watchers: Set<() => void>;
  readonly settled: Promise<void>;
}

/**
 * The debates started by this server: each runs in this process, outliving the request that
 * started it, and is recorded as it goes exactly as `conclave run` records it.
 */
export class RunRegistry {
  readonly #runs = new Map<string, Run & { controller: AbortController }>();
  readonly #store: Store;
  readonly #env: NodeJS.ProcessEnv;
  readonly #log: (line: string) => void;

  constructor(store: Store, env: NodeJS.ProcessEnv, log: (line: string) => void) {
    this.#store = store;
    this.#env = env;
    this.#log = log;
  }

  get(id: string): Run | undefined {
    return this.#runs.get(id);
  }

  /**
   * Starts a debate and resolves with its id once it is recorded as started. A run that fails
   * before that (an unreachable host, a missing model) rejects with the CLI's error instead.
   */
  /** `cancelled`: the client's cancellation of the call that starts it; before the id goes back, it stops the debate. */
  async start(prepared: PreparedRun, cancelled?: AbortSignal): Promise<string> {
    const id = newDebateId(Date.now(), (taken) => this.#exists(taken));
    const controller = new AbortController();
    const onCancel = (): void => controller.abort('the MCP client cancelled conclave_start before it had the debate id');
    cancelled?.addEventListener('abort', onCancel, { once: true });
    let started!: () => void;
    const recordedStart = new Promise<void>((resolve) => (started = resolve));
    const progress: RunProgress = { step: 0, round: null, stage: null, callsDone: 0, lastJudgeScore: null, lastJudgedRound: null, writing: null };
    const watchers = new Set<() => void>();
    const notify = (): void => {
      for (const w of [...watchers]) w();
    };
    // Streamed text, at most every 100 ms per call; a notification only when the first words change.
    const streams = new StreamTracker((c) => {
      const words = c.text.split(/\s+/).filter(Boolean).slice(0, FIRST_WORDS).join(' ');
      const w = progress.writing;
      if (words === '' || (w && w.agentId === c.agentId && w.stage === c.stage && w.words === words)) return;
      progress.writing = { agentId: c.agentId, stage: c.stage as Stage, words };
      progress.step += 1;
      notify();
    });
    const tracker: DebateListener = Object.assign((e: DebateEvent) => {
      if (e.type === 'debate.started') started();
      if (e.type === 'turn.started') streams.started(e.stage, e.round, e.agentId);
      if (e.type === 'turn.progress') {
        streams.progress(e.stage, e.round, e.agentId, e.tokens, e.delta);
        return;
      }
      if (e.type === 'call.finished') {
        streams.finished(e.call.stage, e.call.round, e.call.agentId);
        if (progress.writing?.agentId === e.call.agentId && progress.writing.stage === e.call.stage) progress.writing = null;
      }
      if (e.type === 'debate.finished') streams.close();
      if (!track(progress, e)) return;
      progress.step += 1;
      notify();
    }, { progress: true });
    let gaveUp: StoreError | null = null;
    const record = recorder(this.#store, {
      lockWaitMs: lockWaitFromEnv(this.#env),
      notice: (line) => this.#log(line),
      onGiveUp: (err) => {
        gaveUp = err;
        controller.abort('the record stayed locked by another process past the lock wait');
      },
    });
    const run: Run & { controller: AbortController } = {
      id,
      progress,
      end: null,
      watchers,
      controller,
      settled: Promise.resolve(),
    };
    const outcome = runDebate({ ...prepared.options(this.#store), id, recorder: record, listeners: [tracker], signal: controller.signal })
      .then((result): RunEnd => ({ status: result.status, error: null }))
      .catch((err: unknown): RunEnd => ({ status: this.#statusOf(id), error: asConclaveError(err) }));
    Object.assign(run, {
      settled: outcome.then(async (end) => {
        await record.drain().catch(() => undefined);
        run.end = gaveUp ? { status: this.#statusOf(id), error: gaveUp } : end;
        this.#log(this.#exists(id) ? `${id} ended: ${run.end.status}${run.end.error ? ` (${run.end.error.message})` : ''}` : `${id} did not start: ${run.end.error?.message ?? 'no reason given'}`);
        started();
        notify();
      }),
    });
    this.#runs.set(id, run);
    // Written before the id goes back (a lock held elsewhere can delay it), so every tool finds it.
    await Promise.race([recordedStart.then(() => record.drain()).catch(() => undefined), run.settled]);
    cancelled?.removeEventListener('abort', onCancel);
    if (cancelled?.aborted) {
      // Stopped above: it ends interrupted, resumable, though nobody asked for its id.
      controller.abort('the MCP client cancelled conclave_start before it had the debate id');
      await run.settled;
    }
    if (run.end && !this.#exists(id)) {
      this.#runs.delete(id);
      throw run.end.error ?? new StoreError('NOT_RECORDED', `Debate ${id} ended before it was recorded.`);
    }
    this.#log(`${id} started`);
    return id;
  }

  /**
   * Stops one running debate as Ctrl-C stops `run`: calls in flight are cancelled, what is recorded
   * stays, and it is marked `interrupted`, resumable. Resolves once written; false when it had ended.
   */
  async stop(id: string, why: string): Promise<boolean> {
    const run = this.#runs.get(id);
    if (!run || run.end !== null) return false;
    run.controller.abort(why);
    await run.settled;
    return true;
  }

  /** Debates still running here. */
  running(): Run[] {
    return [...this.#runs.values()].filter((r) => r.end === null);
  }

  /**
   * Stops every running debate as Ctrl-C stops `run`: calls in flight are cancelled, what is
   * recorded stays, and each debate is marked `interrupted`, resumable. Resolves once written.
   */
  async interruptAll(): Promise<void> {
    const running = [...this.#runs.values()].filter((r) => r.end === null);
    for (const r of running) r.controller.abort();
    await Promise.all(running.map((r) => r.settled));
  }

  #statusOf(id: string): DebateStatus {
    try {
      return this.#store.getDebate(id).status;
    } catch {
      return 'failed';
    }
  }

  #exists(id: string): boolean {
    try {
      this.#store.getDebate(id);
      return true;
    } catch {
      return false;
    }
  }
}

/** Updates `p` from one event; whether anything a waiting client sees changed. */
function track(p: RunProgress, e: DebateEvent): boolean {
  switch (e.type) {
    case 'round.started':
      p.round = e.round;
      return true;
    case 'turn.started':
      if (p.stage === e.stage && p.round === e.round) return false;
      p.stage = e.stage;
      p.round = e.round;
      return true;
    case 'call.finished':
      p.callsDone += 1;
      return true;
    case 'round.judged':
      if (e.judgement.convergence === null) return false;
      p.lastJudgeScore = e.judgement.convergence;
      p.lastJudgedRound = e.judgement.round;
      return true;
    default:
      return false;
  }
}

function asConclaveError(err: unknown): ConclaveError {
  if (isConclaveError(err)) return err;
  const e = err as Error;
  // A bug in Conclave, not something the caller did: said as such, as the CLI says it.
  return new ConclaveError('INTERNAL', `Internal error: ${e?.message ?? String(err)}`, { hint: 'Report it with the server log from standard error.', exitCode: 70 });
}
