import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DebateEvent } from '../../src/engine/events.js';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { InterruptedError, StoreError } from '../../src/errors.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { sqliteCodeOf } from '../../src/store/reader.js';
import type { Store } from '../../src/store/store.js';
import { tempDir } from '../store/fixtures.js';
import { scriptedResponder, simModels, testPreset } from '../helpers/panel.js';
import { closeOpened } from '../helpers/lifecycle.js';

// The disk fills in the middle of a debate: SQLite refuses the next write that needs a page
// (SQLITE_FULL, made here with `PRAGMA max_page_count` on the store's own connection).

let sim: SimHandle | null = null;
let store: Store | null = null;
let cleanup: (() => void) | null = null;

afterEach(async () => {
  await closeOpened(store, sim, null);
  [store, sim] = [null, null];
  cleanup?.();
  cleanup = null;
});

const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.99, callTimeoutSeconds: 30 } });

/** A store on a file, and a display listener that lets the file grow no more once the first call is recorded. */
async function fillingUp(): Promise<{ store: Store; fill: (e: DebateEvent) => void; shownCalls: DebateEvent[] }> {
  sim = await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.3, 0.4, 0.5]).respond });
  const dir = tempDir();
  cleanup = dir.cleanup;
  store = openStore(join(dir.dir, 'record.db'));
  const s = store;
  const shownCalls: DebateEvent[] = [];
  let full = false;
  const fill = (e: DebateEvent): void => {
    if (e.type !== 'call.finished') return;
    shownCalls.push(e);
    if (full) return;
    full = true;
    // Display listeners hear of an event after the recorder wrote it: this first call is in the record.
    s.use('fill the disk', (_db, sqlite) => sqlite.pragma(`max_page_count = ${Number(sqlite.pragma('page_count', { simple: true }))}`));
  };
  return { store: s, fill, shownCalls };
}

const callKey = (e: DebateEvent): string => (e.type === 'call.finished' ? `${e.call.stage}/${e.call.round}/${e.call.agentId}/${e.call.attempt}/${e.call.startedAt}` : e.type);

describe('a write that fails for good in the middle of a debate (the disk is full)', () => {
  it('stops the run interrupted through onGiveUp, naming what was not written, and keeps every event it could not write', async () => {
    const { store, fill, shownCalls } = await fillingUp();
    const controller = new AbortController();
    const gaveUp: StoreError[] = [];
    const record = recorder(store, {
      onGiveUp: (err) => {
        gaveUp.push(err);
        controller.abort('the record could not be written');
      },
    });
    const error = await runDebate({ question: 'Should we do A?', preset, host: sim!.url, recorder: record, listeners: [fill], signal: controller.signal }).catch((err: unknown) => err);

    expect(error).toBeInstanceOf(InterruptedError);
    expect(gaveUp).toHaveLength(1);
    const failure = gaveUp[0]!;
    expect(failure.code).toBe('STORE_DISK_FULL');
    expect(failure.message).toMatch(/: the disk is full; .*could not be written\.$/);
    expect(failure.hint).toContain('Free disk space on the volume that holds');
    expect(failure.hint).toContain('conclave resume');
    // The real cause stays reachable.
    expect(sqliteCodeOf(failure)).toBe('SQLITE_FULL');
    await expect(record.drain()).rejects.toBe(failure);

    const unwritten = record.unwritten();
    expect(unwritten.length).toBeGreaterThan(0);
    // Nothing is lost: every call the run reported is either in the record or among what was not written.
    const [summary] = store.listDebates();
    const recorded = new Set(store.getDebate(summary!.id).calls.map((c) => `${c.stage}/${c.round}/${c.agentId}/${c.attempt}/${c.startedAt}`));
    const kept = new Set(unwritten.filter((e) => e.type === 'call.finished').map(callKey));
    expect(recorded.size).toBeGreaterThan(0);
    for (const e of shownCalls) expect(recorded.has(callKey(e)) || kept.has(callKey(e)), callKey(e)).toBe(true);
    // ...and what was not written is not in the record.
    for (const key of kept) expect(recorded.has(key)).toBe(false);
  }, 60_000);

  it('stops the run with the failure itself when nobody was told to stop it, still keeping what was not written', async () => {
    const { store, fill } = await fillingUp();
    const record = recorder(store);
    const error = await runDebate({ question: 'Should we do A?', preset, host: sim!.url, recorder: record, listeners: [fill] }).catch((err: unknown) => err);

    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe('STORE_DISK_FULL');
    expect((error as StoreError).message).toContain('could not be written');
    const unwritten = record.unwritten();
    expect(unwritten.length).toBeGreaterThan(0);
    const [summary] = store.listDebates();
    const recorded = new Set(store.getDebate(summary!.id).calls.map((c) => `${c.stage}/${c.round}/${c.agentId}/${c.attempt}/${c.startedAt}`));
    for (const e of unwritten.filter((u) => u.type === 'call.finished')) expect(recorded.has(callKey(e))).toBe(false);
    await expect(record.drain()).rejects.toMatchObject({ code: 'STORE_DISK_FULL' });
  }, 60_000);
});
