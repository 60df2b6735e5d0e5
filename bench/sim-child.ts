import { createInterface } from 'node:readline';
import { type SimOptions, startSimulator } from '../src/sim/index.js';
import { benchReply } from './replies.js';

// A simulator in its own process, so the benchmark's CPU figures are the engine's alone.
// argv[2]: JSON SimOptions without `respond`; argv[3]: words per agent answer.
// Stdin lines: `counters` prints the counters, `reset` clears them.
const options = JSON.parse(process.argv[2] ?? '{}') as SimOptions;
const words = Number(process.argv[3] ?? 20);
const sim = await startSimulator({ ...options, respond: (req) => benchReply(req, words) });
process.stdout.write(`${JSON.stringify({ url: sim.url })}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'counters') process.stdout.write(`${JSON.stringify(sim.counters())}\n`);
  if (line === 'reset') {
    sim.resetCounters();
    process.stdout.write('{}\n');
  }
}
await sim.close();
