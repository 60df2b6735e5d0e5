import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { InterruptedError, type StoreError } from '../../src/errors.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { tempDir } from '../store/fixtures.js';
import { scriptedResponder, simModels, testPreset } from '../helpers/panel.js';
import { closeOpened } from '../helpers/lifecycle.js';

// Another connection (`sqlite3` in a terminal, a backup) takes the write lock after the record was
// opened and before the debate's own row is written, and keeps it longer than the run waits.

let sim: SimHandle | null = null;
let store: Store | null = null;
let holder: Database.Database | null = null;
let cleanup: (() => void) | null = null;

afterEach(async () => {
  if (holder?.inTransaction) holder.exec('ROLLBACK');
  holder?.close();
  holder = null;
  await closeOpened(store, sim, null);
  [store, sim] = [null, null];
  cleanup?.();
  cleanup = null;
});

const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 1, convergenceThreshold: 0.99, callTimeoutSeconds: 30 } });

describe('a lock held from before a new debate wrote its first row', () => {
  it('says nothing of the debate was written and to run it again, not to resume a debate the record does not hold', async () => {
    sim = await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.3, 0.4]).respond });
    const dir = tempDir();
    cleanup = dir.cleanup;
    const file = join(dir.dir, 'record.db');
    store = openStore(file);
    holder = new Database(file);
    holder.exec('BEGIN IMMEDIATE');
    const controller = new AbortController();
    const gaveUp: StoreError[] = [];
    const record = recorder(store, {
      lockWaitMs: 0,
      notice: () => {},
      onGiveUp: (err) => {
        gaveUp.push(err);
        controller.abort('the record could not be written');
      },
    });
    const error = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: record, signal: controller.signal }).catch((err: unknown) => err);
    holder.exec('ROLLBACK');

    expect(error).toBeInstanceOf(InterruptedError);
    expect(gaveUp).toHaveLength(1);
    const failure = gaveUp[0]!;
    expect(failure.code).toBe('STORE_LOCKED');
    expect(failure.hint).toContain('nothing of it was written, so run it again once the lock is released');
    expect(failure.hint).not.toContain('conclave resume');
    // The debate is indeed not in the record: resume would have found nothing.
    expect(store.debateIds()).toEqual([]);
    expect(record.unwritten().some((e) => e.type === 'debate.started')).toBe(true);
  });
});
