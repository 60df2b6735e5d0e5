import { mkdirSync, readFileSync, renameSync, rmSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DebateEvent, DebateListener } from '../engine/events.js';
import { type StreamedCall, StreamTracker } from './stream-text.js';

/**
 * What a running debate is writing, for the web viewer: the process that runs it keeps a small
 * file beside the record with the streamed text of every call in flight, rewritten at most every
 * 250 ms and removed when the debate ends. The record itself never holds partial text: it keeps
 * what was said, not what was being said. `conclave serve` reads the file (live-file.ts) and
 * sends its changes over the debate page's event stream.
 */
export interface LiveSnapshot {
  v: 1;
  debateId: string;
  at: number;
  calls: StreamedCall[];
}

/** The folder of live files of a record: `<db>.live/`. */
export function liveDir(dbPath: string): string {
  return `${dbPath}.live`;
}

/**
 * A debate id as Conclave makes them (and the viewer's addresses take them), which names a file
 * inside the live folder. A record can come from someone else, and hold any id: `../project/package`
 * would have a resumed run write, then remove, `package.json` beside the record's folder.
 */
const FILE_SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Whether a debate id may name a file (src/events/live-file.ts, the unwritten events' file): one Conclave would make. */
export const fileSafeId = (debateId: string): boolean => FILE_SAFE_ID.test(debateId);

const fileOf = (dbPath: string, debateId: string): string | null => (fileSafeId(debateId) ? join(liveDir(dbPath), `${debateId}.json`) : null);

/**
 * How often the file may be rewritten: the viewer reads it every 300 ms, so writing it more
 * often than this would only cost the run CPU (each call's text is still read at most every 100 ms).
 */
export const LIVE_FILE_INTERVAL_MS = 250;

/** The listener that keeps the live file of the debate run with it; a record in memory gets none. */
export function liveFileWriter(dbPath: string, opts: { now?: () => number } = {}): DebateListener & { close(): void } {
  const now = opts.now ?? Date.now;
  let debateId: string | null = null;
  let timer: NodeJS.Timeout | null = null;
  let last = Number.NEGATIVE_INFINITY;
  let broken = false;
  let madeDir = false;
  const write = (): void => {
    timer = null;
    if (debateId === null || broken) return;
    last = now();
    const file = fileOf(dbPath, debateId);
    if (file === null) return;
    try {
      if (!madeDir) mkdirSync(liveDir(dbPath), { recursive: true });
      madeDir = true;
      const snapshot: LiveSnapshot = { v: 1, debateId, at: last, calls: tracker.current() };
      writeFileSync(`${file}.tmp`, JSON.stringify(snapshot));
      // A reader sees the old snapshot or the new one, never half of one.
      renameSync(`${file}.tmp`, file);
    } catch {
      // A folder that cannot be written only costs the viewer its streamed text.
      broken = true;
    }
  };
  // One file for all the calls, whichever call moved.
  const schedule = (): void => {
    if (timer !== null) return;
    const since = now() - last;
    if (since >= LIVE_FILE_INTERVAL_MS) write();
    else {
      timer = setTimeout(write, LIVE_FILE_INTERVAL_MS - since);
      timer.unref?.();
    }
  };
  const tracker = new StreamTracker(schedule, { now });
  const close = (): void => {
    if (timer) clearTimeout(timer);
    timer = null;
    tracker.close();
    const file = debateId === null ? null : fileOf(dbPath, debateId);
    if (file === null) return;
    rmSync(file, { force: true });
    rmSync(`${file}.tmp`, { force: true });
    try {
      rmdirSync(liveDir(dbPath));
    } catch {
      // Another debate still runs on this record, or the folder was never made.
    }
  };
  const listener = (e: DebateEvent): void => {
    switch (e.type) {
      case 'debate.started':
        debateId = e.debateId;
        break;
      case 'turn.started':
        tracker.started(e.stage, e.round, e.agentId);
        break;
      case 'turn.progress':
        tracker.progress(e.stage, e.round, e.agentId, e.tokens, e.delta);
        break;
      case 'call.finished':
        tracker.finished(e.call.stage, e.call.round, e.call.agentId);
        schedule();
        break;
      case 'debate.finished':
        close();
        break;
    }
  };
  return Object.assign(listener, { progress: true, close });
}

/** The live file of a running debate, or null when there is none (or it cannot be read). */
export function readLiveFile(dbPath: string, debateId: string): { mtimeMs: number; snapshot: LiveSnapshot } | null {
  const file = fileOf(dbPath, debateId);
  if (file === null) return null;
  try {
    const mtimeMs = statSync(file).mtimeMs;
    const snapshot = JSON.parse(readFileSync(file, 'utf8')) as LiveSnapshot;
    if (snapshot?.v !== 1 || snapshot.debateId !== debateId || !Array.isArray(snapshot.calls)) return null;
    return { mtimeMs, snapshot };
  } catch {
    return null;
  }
}
