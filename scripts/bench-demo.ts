/**
 * `npm run bench:demo -- [--limit N] [--preset NAME ...] [--out DIR]`: runs `conclave bench`
 * on the built-in arithmetic suite against the simulator, whose panel models answer
 * with fixed accuracies (src/sim/demo-arithmetic.ts, the same panel `conclave sim`
 * plays), and writes the report as Markdown, JSON and HTML.
 * No GPU and no Ollama needed; the figures describe the script, not real models.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { main } from '../src/cli/main.js';
import { loadPreset } from '../src/config/load-preset.js';
import { demoResponder, simModelsFor } from '../src/sim/demo.js';
import { startSimulator } from '../src/sim/index.js';
import { openStore } from '../src/store/open.js';
import { listBenchRuns } from '../src/store/bench.js';

const { values } = parseArgs({
  options: {
    limit: { type: 'string', default: '30' },
    preset: { type: 'string', multiple: true, default: ['small-8gb'] },
    out: { type: 'string', default: 'bench-demo' },
  },
});

const presets = values.preset.map((name) => loadPreset(name).preset);
const sim = await startSimulator({ models: simModelsFor(presets), respond: demoResponder(presets) });
const out = resolve(values.out);
mkdirSync(out, { recursive: true });
// Beside the reports, so the `bench report` and `bench compare` commands it prints work afterwards.
const db = join(out, 'bench.db');
try {
  const code = await main(['bench', '--suite', 'arithmetic', '--limit', values.limit, ...values.preset.flatMap((p) => ['--preset', p]), '--host', sim.url, '--db', db]);
  if (code !== 0) process.exit(code);
  const store = openStore(db);
  const runId = listBenchRuns(store)[0]!.id;
  store.close();
  for (const format of ['md', 'json', 'html']) {
    await main(['bench', 'report', runId, '--db', db, '--format', format, '--out', join(out, `report.${format}`)]);
  }
} finally {
  await sim.close();
}
