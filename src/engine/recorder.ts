import { recordAttachments, recordBudgetDecision } from '../store/material.js';
import { recordProtocolStep } from '../store/protocols.js';
import { recordQuality } from '../store/quality.js';
import type { Store } from '../store/store.js';
import { StoreError } from '../errors.js';
import { sqliteCodeOf } from '../store/reader.js';
import { recordTensionUpdate } from '../store/tensions.js';
import { recordBallot, recordVoteArtifacts, recordVoteTiers } from '../store/voting.js';
import { ENGINE_VERSION } from '../version.js';
import type { CallRecord, DebateEvent, DebateListener } from './events.js';

/** Where a resumed debate goes on from, and what its record already holds. */
export interface ResumePoint {
  /** The last complete round reused; -1 when none was. */
  fromRound: number;
  roundsCompleted: number;
  finalConvergence: number | null;
}

export interface RecorderOptions {
  resume?: ResumePoint;
  /**
   * How long writes wait, in all, for a lock held by another process (a backup, `sqlite3`, a
   * second writer) before the recorder gives up. Default: CONCLAVE_LOCK_WAIT_SECONDS, else 300 s.
   */
  lockWaitMs?: number;
  /** Where the recorder says that it waits for the lock (stderr from the CLI). */
  notice?: (line: string) => void;
  /** Called once if the recorder gives up: the run should stop, interrupted. */
  onGiveUp?: (error: StoreError) => void;
}

/** The recorder: a listener, and a way to wait until every event it was given is written. */
export type Recorder = DebateListener & {
  /**
   * Resolves once every event is written; rejects with a StoreError naming what was not
   * written if the recorder gave up (the lock was held too long, or a write failed).
   */
  drain(): Promise<void>;
  /** Events given to the recorder and not written (after it gave up), in order. */
  unwritten(): DebateEvent[];
};

const RETRY_MS = 250;
const NOTICE_EVERY_MS = 15_000;

/**
 * Writes a debate to the store as it happens: each call as soon as it ends, each event (or
 * events that happened at once, given to `together`: a call and its rating, the turns of a
 * round) in its own transaction with the debate's checkpoint seal. A lock held by another process
 * does not lose anything: events wait in memory, in order, and are written when the lock
 * is released (bounded by `lockWaitMs`). A write that fails otherwise (a full disk) gives up at
 * once, as a lock held too long does: the run stops rather than lose records, and what was not
 * written stays in `unwritten()`.
 */
export function recorder(store: Store, options: RecorderOptions = {}): Recorder {
  const write = recordEvents(store, options);
  const lockWaitMs = options.lockWaitMs ?? lockWaitFromEnv();
  const notice = options.notice ?? ((line: string) => void process.stderr.write(`${line}\n`));
  // In order; a group of events that happened at once is written in one transaction.
  const pending: (DebateEvent | readonly DebateEvent[])[] = [];
  let waitingSince: number | null = null;
  let lastNotice = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let failure: StoreError | null = null;
  const drained: (() => void)[] = [];
  // Writes wait briefly for a lock (the event loop keeps streaming replies meanwhile), then queue.
  store.setBusyTimeout(RETRY_MS);

  const settle = (): void => {
    if (pending.length === 0 || failure) for (const resolve of drained.splice(0)) resolve();
  };
  // `fromEmitter`: called by the listener, inside the runner's emit, rather than by the retry timer.
  const flush = (fromEmitter: boolean): void => {
    timer = null;
    while (pending.length > 0 && !failure) {
      try {
        write(pending[0]!);
        pending.shift();
      } catch (err) {
        if (err instanceof StoreError && err.code === 'STORE_LOCKED') {
          const now = Date.now();
          waitingSince ??= now;
          if (now - waitingSince >= lockWaitMs) {
            // A new debate whose own row never got in has nothing to resume: it is run again.
            const then = newDebateAmong(pending, options.resume !== undefined)
              ? 'nothing of it was written, so run it again once the lock is released'
              : 'everything written before the lock stays, and `conclave resume` goes on from it once the lock is released';
            failure = new StoreError('STORE_LOCKED', `${err.message.replace(/\.$/, '')}, for ${Math.round((now - waitingSince) / 1000)} s: ${describePending(pending)} could not be written.`, {
              hint: `The debate stops here, interrupted; ${then}. ${err.hint ?? ''}`.trim(),
              cause: err,
            });
            options.onGiveUp?.(failure);
            break;
          }
          if (now - lastNotice >= NOTICE_EVERY_MS) {
            lastNotice = now;
            notice(`conclave: ${err.message} Waiting to write (up to ${Math.round(lockWaitMs / 1000)} s); ${describePending(pending)} kept in memory meanwhile.`);
          }
          timer = setTimeout(() => flush(false), RETRY_MS);
          return;
        }
        if (err instanceof StoreError && sqliteCodeOf(err) !== undefined) {
          // SQLite failed to write (a full disk, an I/O error): as when the lock is held too long,
          // the event stays with those after it, for `unwritten()`, and the run stops.
          failure = writeFailure(err, pending, store.path, options.resume !== undefined);
          options.onGiveUp?.(failure);
          settle();
          // The emitter sees it too, so the run stops even for a caller that passed no onGiveUp.
          if (fromEmitter) throw failure;
          break;
        }
        if (fromEmitter) {
          // A refusal rather than a failure of the storage (the record's gate, a debate id taken): the emitter sees it and the run stops.
          pending.shift();
          throw err;
        }
        failure = new StoreError('STORE_FAILED', String(err), { cause: err });
        options.onGiveUp?.(failure);
      }
    }
    if (waitingSince !== null && pending.length === 0) {
      notice(`conclave: the database is free again; everything kept in memory is written (after ${Math.round((Date.now() - waitingSince) / 1000)} s).`);
      waitingSince = null;
    }
    settle();
  };
  const take = (entry: DebateEvent | readonly DebateEvent[]): void => {
    pending.push(entry);
    if (failure) {
      // Given up: what still comes (a call that ended meanwhile) is kept for `unwritten()` too. A
      // caller told by onGiveUp stops the run; for one that was not, the emitter is told, so the
      // run cannot go on unrecorded.
      if (!options.onGiveUp) throw failure;
      return;
    }
    if (timer === null) flush(true);
  };
  const listener = (event: DebateEvent): void => {
    if (WRITING_EVENTS.has(event.type)) take(event);
  };
  const together = (events: readonly DebateEvent[]): void => {
    const written = events.filter((e) => WRITING_EVENTS.has(e.type));
    if (written.length > 0) take(written.length === 1 ? written[0]! : written);
  };
  return Object.assign(listener, {
    progress: false,
    together,
    drain: (): Promise<void> =>
      new Promise<void>((resolve) => {
        drained.push(resolve);
        settle();
      }).then(() => {
        if (failure) throw failure;
      }),
    unwritten: (): DebateEvent[] => pending.flat(),
  });
}

const WRITING_EVENTS = new Set<string>([
  'debate.started', 'budget.decision', 'call.finished', 'turn.finished', 'quality.rated', 'turn.reused', 'round.judged',
  'vote.artifacts', 'vote.cast', 'vote.tiers', 'tensions.update', 'protocol.step', 'synthesis.finished', 'debate.exit', 'debate.finished',
]);

/** A write that failed for a reason other than a lock: what it was, what was not written, and how to go on. */
function writeFailure(err: StoreError, pending: readonly (DebateEvent | readonly DebateEvent[])[], file: string, resuming: boolean): StoreError {
  const started = newDebateAmong(pending, resuming);
  const then = started ? 'then run it again' : '`conclave resume` then goes on from what was written';
  const fix = err.code === 'STORE_DISK_FULL' ? `Free disk space on the volume that holds ${file}; ${then}.` : `${err.hint ?? ''} Once that is fixed, ${then}.`.trim();
  return new StoreError(err.code, `${err.message.replace(/\.$/, '')}; ${describePending(pending)} could not be written.`, {
    hint: `The debate stops here, interrupted; ${started ? 'nothing of it was written' : 'everything written before stays'}. ${fix}`,
    cause: err,
  });
}

/** A new debate's own row among what was not written: there is nothing to resume, only to run again. */
function newDebateAmong(pending: readonly (DebateEvent | readonly DebateEvent[])[], resuming: boolean): boolean {
  return !resuming && pending.flat().some((e) => e.type === 'debate.started');
}

function describePending(groups: readonly (DebateEvent | readonly DebateEvent[])[]): string {
  const pending = groups.flat();
  const calls = pending.filter((e) => e.type === 'call.finished').length;
  const rest = pending.length - calls;
  const parts = [calls > 0 ? `${calls} finished call${calls === 1 ? '' : 's'}` : '', rest > 0 ? `${rest} other record${rest === 1 ? '' : 's'}` : ''].filter((p) => p !== '');
  return parts.join(' and ') || 'nothing';
}

/** CONCLAVE_LOCK_WAIT_SECONDS in ms, else 300 s. */
export function lockWaitFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const seconds = Number(env.CONCLAVE_LOCK_WAIT_SECONDS);
  return Number.isFinite(seconds) && seconds >= 0 && env.CONCLAVE_LOCK_WAIT_SECONDS !== '' ? seconds * 1000 : 300_000;
}

function recordEvents(store: Store, options: { resume?: ResumePoint }): (events: DebateEvent | readonly DebateEvent[]) => void {
  const resume = options.resume;
  let debateId = '';
  let roundsCompleted = resume?.roundsCompleted ?? 0;
  let finalConvergence: number | null = resume?.finalConvergence ?? null;
  let exitDetail: string | null = null;
  // Row ids of the calls stored so far, so feature rows (votes) can point at the calls behind them.
  const callIds = new WeakMap<CallRecord, number>();
  let lastCallId: number | null = null;
  const handle = (event: DebateEvent): void => {
    switch (event.type) {
      case 'debate.started':
        debateId = event.debateId;
        if (resume) {
          // The debate's row, preset and panel are already recorded: mark where it goes on.
          store.resumeDebate(event.debateId, { fromRound: resume.fromRound, host: event.host, plan: event.plan, at: event.at });
          break;
        }
        store.createDebate({
          id: event.debateId,
          question: event.question,
          preset: event.preset,
          engineVersion: ENGINE_VERSION,
          host: event.host,
          agents: event.agents,
          createdAt: event.at,
        });
        if (event.plan !== undefined) store.setPlan(event.debateId, event.plan);
        recordAttachments(store, event.debateId, event.attachments ?? []);
        break;
      case 'budget.decision':
        recordBudgetDecision(store, debateId, event.decision, event.at);
        break;
      case 'call.finished':
        lastCallId = store.recordCall(event.call);
        callIds.set(event.call, lastCallId);
        break;
      case 'turn.finished':
        store.recordTurn(debateId, event.turn);
        break;
      case 'quality.rated':
        recordQuality(store, debateId, event.rating, event.at);
        break;
      case 'turn.reused':
        store.recordReusedTurn(debateId, { round: event.round, agentId: event.agentId, call: event.callNumber });
        break;
      case 'round.judged':
        store.recordJudgement(debateId, event.judgement);
        roundsCompleted = event.judgement.round;
        if (event.judgement.convergence !== null) finalConvergence = event.judgement.convergence;
        break;
      case 'vote.artifacts':
        recordVoteArtifacts(store, debateId, event.artifacts);
        break;
      case 'vote.cast':
        recordBallot(store, debateId, event.ballot, event.calls.map((c) => callIds.get(c) ?? null));
        break;
      case 'vote.tiers':
        recordVoteTiers(store, debateId, event.tiers);
        break;
      case 'tensions.update':
        recordTensionUpdate(store, debateId, event.update, event.at);
        break;
      case 'protocol.step':
        recordProtocolStep(store, debateId, event.step, lastCallId, event.at);
        // A Delphi run on a numeric question judges no round: its round steps count the rounds held.
        if (event.step.kind === 'delphi') roundsCompleted = Math.max(roundsCompleted, event.step.round);
        break;
      case 'synthesis.finished':
        store.recordSynthesis(debateId, event.result, event.at);
        break;
      case 'debate.exit':
        exitDetail = event.detail;
        break;
      case 'debate.finished':
        store.finishDebate(debateId, {
          status: event.status,
          exitReason: event.exitReason,
          exitDetail,
          error: event.error,
          roundsCompleted,
          finalConvergence,
          finishedAt: event.at,
        });
        break;
      default:
        break;
    }
  };
  return (events: DebateEvent | readonly DebateEvent[]): void => {
    if (Array.isArray(events)) {
      // Events of one moment (never the debate's start): one transaction, one checkpoint.
      store.recorded(debateId, () => events.forEach(handle));
      return;
    }
    const event = events as DebateEvent;
    if (!WRITING_EVENTS.has(event.type)) return;
    // The reason for the exit is kept for the debate's final row, written with it: nothing to seal now.
    if (event.type === 'debate.exit') return handle(event);
    const id = event.type === 'debate.started' ? event.debateId : debateId;
    store.recorded(id, () => handle(event));
  };
}
