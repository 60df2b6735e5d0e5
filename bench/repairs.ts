import { createHash } from 'node:crypto';
import { runDebate } from '../src/engine/run-debate.js';
import type { DebateEvent } from '../src/engine/events.js';
import { generateFromSchema } from '../src/sim/generate.js';
import { startSimulator } from '../src/sim/index.js';
import { contractPanel, simModels } from '../test/helpers/panel.js';

/**
 * Repair calls per debate when the server answers every `format` request with JSON
 * that the schema sent allows, free strings included (what constrained decoding can
 * produce). A 3-agent panel, 3 critique rounds, tension map and cluster vote on.
 * `npm run bench:repairs [-- DEBATES]` prints, per debate, the calls, the repairs
 * and how it ended, then the totals.
 */

const DEBATES = Number(process.argv[2] ?? 10);

const seedOf = (parts: string): number => createHash('sha256').update(parts).digest().readUInt32BE(0);

const preset = contractPanel();

let debate = 0;
const sim = await startSimulator({
  models: simModels(preset),
  // Every reply is an instance of the schema sent, chosen by the request and the debate's number.
  respond: (req) =>
    req.format && typeof req.format === 'object'
      ? JSON.stringify(generateFromSchema(req.format, seedOf(`${debate}\u0000${JSON.stringify(req.messages)}\u0000${JSON.stringify(req.format)}`)))
      : {},
});

interface Tally {
  calls: number;
  repairs: number;
  invalidTurns: number;
  /** Quality retries (docs/quality.md) and results the quality check left out. */
  retries: number;
  rejected: number;
  perStage: Record<string, number>;
  status: string;
}

const tallies: Tally[] = [];
try {
  for (debate = 0; debate < DEBATES; debate++) {
    const tally: Tally = { calls: 0, repairs: 0, invalidTurns: 0, retries: 0, rejected: 0, perStage: {}, status: '' };
    const listener = (event: DebateEvent): void => {
      if (event.type === 'call.finished') {
        tally.calls += 1;
        // Odd attempts are repairs; attempt 2 is a quality retry (docs/quality.md).
        if (event.call.attempt % 2 === 1) tally.repairs += 1;
        tally.perStage[event.call.stage] = (tally.perStage[event.call.stage] ?? 0) + 1;
      }
      if (event.type === 'turn.finished' && event.turn.status === 'invalid') tally.invalidTurns += 1;
      if (event.type === 'quality.rated' && event.rating.try === 1) tally.retries += 1;
      if (event.type === 'quality.rated' && event.rating.action === 'REJECT') tally.rejected += 1;
    };
    try {
      const result = await runDebate({ question: `Should we adopt plan ${debate}?`, preset, host: sim.url, listeners: [listener] });
      tally.status = result.status;
    } catch (err) {
      tally.status = `threw: ${(err as Error).message.split('\n')[0]}`;
    }
    tallies.push(tally);
    const stages = Object.entries(tally.perStage)
      .map(([s, n]) => `${s} ${n}`)
      .join(', ');
    console.log(`debate ${debate + 1}: ${tally.calls} calls (${stages}), ${tally.repairs} repairs, ${tally.invalidTurns} invalid turns, ${tally.retries} quality retries, ${tally.rejected} rejected, ${tally.status}`);
  }
} finally {
  await sim.close();
}
const sum = (f: (t: Tally) => number): number => tallies.reduce((n, t) => n + f(t), 0);
console.log(
  `\n${DEBATES} debates (3 agents, up to 3 critique rounds, tension map, cluster vote) against schema-valid generated replies:` +
    `\n  repair calls per debate   ${(sum((t) => t.repairs) / DEBATES).toFixed(2)}` +
    `\n  calls per debate          ${(sum((t) => t.calls) / DEBATES).toFixed(2)}` +
    `\n  invalid turns per debate  ${(sum((t) => t.invalidTurns) / DEBATES).toFixed(2)}` +
    `\n  quality retries per debate ${(sum((t) => t.retries) / DEBATES).toFixed(2)}, rejected ${(sum((t) => t.rejected) / DEBATES).toFixed(2)}` +
    `\n  ended: ${[...new Set(tallies.map((t) => t.status))].map((s) => `${s} ×${tallies.filter((t) => t.status === s).length}`).join(', ')}`,
);
