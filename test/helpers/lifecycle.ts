import { afterEach } from 'vitest';

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
