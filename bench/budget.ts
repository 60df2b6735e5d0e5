import { loadPreset } from '../src/config/load-preset.js';
import type { Preset } from '../src/config/preset-schema.js';
import { recorder } from '../src/engine/recorder.js';
import { presetModels, runDebate } from '../src/engine/run-debate.js';
import { budgetSummary } from '../src/render/material.js';
import { demoResponder } from '../src/sim/demo.js';
import { startSimulator } from '../src/sim/index.js';
import { openStore } from '../src/store/open.js';
import { migrationPlan } from '../test/helpers/material.js';

/**
 * Calls and tokens of a built-in preset on a three-page attachment (a 12-section migration
 * plan, about 8,200 characters), with no budget, then with budgets of 60% and 35% of what the
 * run spent without one. Against the simulator playing the demo panel; tokens are the
 * simulator's prompt_eval_count + eval_count, as Ollama reports them. BENCH_PRESET picks the
 * preset (default code-review, the review pipeline; BENCH_PRESET=tech-decision for a debate).
 */

const wanted = process.env.BENCH_PRESET ?? 'code-review';
const QUESTION = 'Is this migration plan ready to execute, and what must change first?';
const content = migrationPlan(12);
const attachment = { name: 'migration-plan.md', content, bytes: Buffer.byteLength(content), sha256: 'bench' };

interface Figures {
  calls: number;
  prompt: number;
  reply: number;
  total: number;
  status: string;
  exit: string;
  skipped: number;
  truncated: number;
  excerpts: number;
  inline: number;
}

async function runWith(preset: Preset, budget: number | null): Promise<Figures> {
  const p: Preset = { ...preset, protocol: { ...preset.protocol, ...(budget === null ? {} : { tokenBudget: budget }) } };
  const models = presetModels(p).map((name) => ({ name, sizeBytes: 4e9, contextLength: 32768 }));
  const sim = await startSimulator({ models, respond: demoResponder(p), tokenMs: 0, vramBytes: 200 * 2 ** 30, maxLoadedModels: 20 });
  const store = openStore(':memory:');
  try {
    const result = await runDebate({ question: QUESTION, preset: p, host: sim.url, recorder: recorder(store), vramGiB: 200, attachments: [attachment] });
    const d = store.getDebate(result.id);
    const b = budgetSummary(d);
    return {
      calls: d.calls.length,
      prompt: d.calls.reduce((s, c) => s + (c.metrics.promptTokens ?? 0), 0),
      reply: d.calls.reduce((s, c) => s + (c.metrics.completionTokens ?? 0), 0),
      total: b.used,
      status: d.status,
      exit: d.exitReason ?? '',
      skipped: b.skipped,
      truncated: b.truncated,
      excerpts: d.calls.filter((c) => c.material?.some((u) => u.mode !== 'inline')).length,
      inline: d.calls.filter((c) => c.material?.every((u) => u.mode === 'inline')).length,
    };
  } finally {
    store.close();
    await sim.close();
  }
}

const preset = loadPreset(wanted).preset;
console.log(`Preset ${wanted} (${preset.protocol.kind ?? 'debate'}, ${preset.agents.length} agents) on ${attachment.name}: ${content.length.toLocaleString('en-US')} characters, ${content.split('\n## ').length - 1} sections`);
const free = await runWith(preset, null);
const rows: [string, Figures][] = [['no budget', free]];
for (const share of [0.6, 0.35]) {
  const budget = Math.round((free.total * share) / 100) * 100;
  rows.push([`budget ${budget.toLocaleString('en-US')}`, await runWith(preset, budget)]);
}
const cols = ['calls', 'prompt tok', 'reply tok', 'total tok', 'skipped', 'cuts', 'excerpt/inline', 'ended'];
console.log(`  ${''.padEnd(14)} ${cols.map((c, i) => c.padStart([10, 10, 10, 10, 10, 10, 14, 0][i]!)).join(' ')}`);
for (const [label, f] of rows) {
  const cells = [f.calls, f.prompt, f.reply, f.total, f.skipped, f.truncated].map((n) => n.toLocaleString('en-US').padStart(10));
  console.log(`  ${label.padEnd(14)} ${cells.join(' ')} ${`${f.excerpts}/${f.inline}`.padStart(14)} ${f.status} (${f.exit})`);
}
