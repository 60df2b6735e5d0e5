import { withThinking } from '../src/cli/bench-cli.js';
import { loadPreset } from '../src/config/load-preset.js';
import type { CallRecord, DebateEvent } from '../src/engine/events.js';
import { runDebate } from '../src/engine/run-debate.js';
import { demoResponder, simModelsFor } from '../src/sim/demo.js';
import { startSimulator } from '../src/sim/index.js';

/**
 * A panel of thinking models on the simulator, with thinking as the models default to and with
 * it off for every role. Each thinking model streams THINKING tokens (default 1,500, about what
 * qwen3 and deepseek-r1 think before a short structured answer) before its reply.
 * A third setting leaves no room for the thinking (`protocol.thinkingTokens: 0`), as before it was added.
 * `npm run bench:thinking [-- DEBATES [THINKING]]` prints, per setting, the calls, repairs,
 * replies cut off at num_predict, and tokens spent thinking and answering.
 */

const DEBATES = Number(process.argv[2] ?? 3);
const THINKING = Number(process.argv[3] ?? 1500);

const { preset } = loadPreset('thinking', process.cwd());
const models = simModelsFor([preset]).map((m) => (m.thinkingTokens ? { ...m, thinkingTokens: THINKING } : m));
const sim = await startSimulator({ models, respond: demoResponder(preset), tokenMs: 0 });

interface Tally {
  debates: number;
  completed: number;
  calls: number;
  repairs: number;
  cutOff: number;
  thinkingTokens: number;
  answerTokens: number;
  promptTokens: number;
  ms: number;
}

async function measure(label: string, setting: typeof preset): Promise<Tally> {
  const t: Tally = { debates: 0, completed: 0, calls: 0, repairs: 0, cutOff: 0, thinkingTokens: 0, answerTokens: 0, promptTokens: 0, ms: 0 };
  for (let i = 0; i < DEBATES; i++) {
    const calls: CallRecord[] = [];
    const listener = (e: DebateEvent): void => {
      if (e.type === 'call.finished') calls.push(e.call);
    };
    const started = performance.now();
    // A panel whose every answer was cut off fails the debate: that is a figure here, not an error.
    const status = await runDebate({ question: 'Should we migrate this tool from SQLite to Postgres now?', preset: setting, host: sim.url, listeners: [listener] }).then(
      (r) => r.status,
      (err: unknown) => (err as { code?: string }).code ?? 'error',
    );
    t.ms += performance.now() - started;
    t.debates += 1;
    if (status === 'completed') t.completed += 1;
    for (const c of calls) {
      t.calls += 1;
      if (c.attempt % 2 === 1) t.repairs += 1;
      if (c.metrics.doneReason === 'length') t.cutOff += 1;
      const thought = c.thinkingTokens ?? 0;
      t.thinkingTokens += thought;
      t.answerTokens += (c.metrics.completionTokens ?? 0) - thought;
      t.promptTokens += c.metrics.promptTokens ?? 0;
    }
  }
  process.stdout.write(`${label}: ${t.completed}/${t.debates} completed\n`);
  return t;
}

try {
  const on = await measure('thinking (model default)', preset);
  const off = await measure('thinking off', withThinking(preset, false));
  // What a thinking panel met before the room for thinking: num_predict sized for the answer alone.
  const noRoom = await measure('thinking, no room for it', { ...preset, protocol: { ...preset.protocol, thinkingTokens: 0 } });
  const row = (name: string, t: Tally): string =>
    `| ${name} | ${t.completed}/${t.debates} | ${(t.calls / t.debates).toFixed(1)} | ${t.repairs} | ${t.cutOff} | ${Math.round(t.thinkingTokens / t.debates).toLocaleString('en-US')} | ${Math.round(t.answerTokens / t.debates).toLocaleString('en-US')} | ${Math.round(t.promptTokens / t.debates).toLocaleString('en-US')} | ${Math.round(t.ms / t.debates)} ms |`;
  process.stdout.write(`\n${DEBATES} debates per setting, preset \`thinking\`, ${THINKING} thinking tokens per call of a thinking model\n\n`);
  process.stdout.write('| setting | completed | calls per debate | repairs | cut off | thinking tokens per debate | answer tokens per debate | prompt tokens per debate | wall time per debate |\n|---|---|---|---|---|---|---|---|---|\n');
  process.stdout.write(`${row('thinking (model default)', on)}\n${row('thinking off', off)}\n${row('thinking, no room for it (thinkingTokens: 0)', noRoom)}\n`);
  const total = (t: Tally): number => t.thinkingTokens + t.answerTokens;
  process.stdout.write(`\nreply tokens (thinking + answer), on ÷ off: ${(total(on) / Math.max(1, total(off))).toFixed(2)}×\n`);
} finally {
  await sim.close();
}
