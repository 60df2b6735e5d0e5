import { startSimulator } from '../src/sim/index.js';
import { scriptedResponder, simModels, testPreset } from '../test/helpers/panel.js';

// A zero-latency simulator in its own process, so the benchmark's CPU figures are the engine's alone.
const agents = Number(process.argv[2] ?? 5);
const preset = testPreset(Array.from({ length: agents }, (_, i) => `agent${i}`));
const sim = await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.1]).respond, tokenMs: 0 });
process.stdout.write(`${JSON.stringify({ url: sim.url })}\n`);
process.on('SIGTERM', () => void sim.close().then(() => process.exit(0)));
