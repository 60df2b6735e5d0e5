import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { recorder } from '../../src/engine/recorder.js';
import { type RunDebateOptions, runDebate } from '../../src/engine/run-debate.js';
import { createViewer, type Viewer } from '../../src/serve/server.js';
import { openStoreReadOnly } from '../../src/serve/store.js';
import { type Responder, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { simModels, testPreset } from './panel.js';

/** A temp folder with a record file in it, created with the real migrations. */
export function tempRecord(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'conclave-viewer-')), 'record.db');
  openStore(file).close();
  return file;
}

/** Runs one debate against the simulator, recorded through a writable store of `file`. */
export async function recordDebate(
  file: string,
  respond: Responder,
  opts: { agents?: string[]; question?: string; tokenMs?: number; preset?: Parameters<typeof testPreset>[1]; onStart?: (id: string) => void } = {},
): Promise<string> {
  const preset = testPreset(opts.agents ?? ['a', 'b', 'c'], { protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 120 }, ...opts.preset });
  const sim = await startSimulator({ models: simModels(preset), respond, tokenMs: opts.tokenMs ?? 0 });
  const store = openStore(file);
  try {
    const options: RunDebateOptions = { question: opts.question ?? 'Should we do A?', preset, host: sim.url, recorder: recorder(store) };
    if (opts.onStart) {
      const onStart = opts.onStart;
      options.listeners = [(e) => (e.type === 'debate.started' ? onStart(e.debateId) : undefined)];
    }
    const result = await runDebate(options);
    return result.id;
  } finally {
    store.close();
    await sim.close();
  }
}

export interface RunningViewer {
  url: string;
  viewer: Viewer;
  store: Store;
  close(): Promise<void>;
}

/** The viewer over `file`, opened read-only as `conclave serve` does, on a free loopback port. */
export async function startViewer(file: string, token: string | null = null): Promise<RunningViewer> {
  const store = openStoreReadOnly(file);
  const viewer = createViewer({ store, token, pollMs: 100 });
  const url = await viewer.listen(0, '127.0.0.1');
  return {
    url,
    viewer,
    store,
    close: async () => {
      await viewer.close();
      store.close();
    },
  };
}

/** Reads a whole Server-Sent Events response into its `data` payloads and named events. */
export async function readEventStream(url: string): Promise<{ data: unknown[]; ended: boolean }> {
  const res = await fetch(url);
  const text = await res.text();
  const data: unknown[] = [];
  let ended = false;
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n');
    if (lines.includes('event: end')) ended = true;
    else for (const line of lines) if (line.startsWith('data: ')) data.push(JSON.parse(line.slice(6)));
  }
  return { data, ended };
}
