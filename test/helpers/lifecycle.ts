import type { Server } from 'node:http';
import { afterEach } from 'vitest';
import type { SimHandle } from '../../src/sim/index.js';
import type { Store } from '../../src/store/store.js';

/**
 * Closes what a test opened (simulators, stores), newest first, after each test. Call it once
 * per file and wrap each thing as it is opened: `sim = track(await startSimulator(…))`.
 */
export function closesAfterEach(): <T extends { close(): unknown }>(thing: T) => T {
  const open: { close(): unknown }[] = [];
  afterEach(async () => {
    for (const thing of open.splice(0).reverse()) await thing.close();
  });
  return (thing) => {
    open.push(thing);
    return thing;
  };
}

/** For a file that holds what it opens in variables: closes its store, its simulator and a server in front of it (every connection dropped first). */
export async function closeOpened(store: Store | null, sim: SimHandle | null, proxy: Server | null): Promise<void> {
  store?.close();
  await sim?.close();
  proxy?.closeAllConnections();
  await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
}
