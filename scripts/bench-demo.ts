/**
 * `npm run bench:demo -- [--limit N] [--preset NAME ...] [--out DIR]`: runs `conclave bench`
 * on the built-in arithmetic suite against the simulator, with a scripted panel
 * of imperfect arithmeticians, and writes the report as Markdown, JSON and HTML.
 * No GPU and no Ollama needed; the figures describe the script, not real models.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { main } from '../src/cli/main.js';
import { loadPreset } from '../src/config/load-preset.js';
import { simModelsFor } from '../src/sim/demo.js';
import { type SimRequest, startSimulator } from '../src/sim/index.js';
import { openStore } from '../src/store/open.js';
import { listBenchRuns } from '../src/store/bench.js';

const { values } = parseArgs({
  options: {
    limit: { type: 'string', default: '30' },
    preset: { type: 'string', multiple: true, default: ['small-8gb'] },
    out: { type: 'string', default: 'bench-demo' },
  },
});

/** A number in [0, 1) fixed by its inputs, so the demo gives the same report every time. */
function chance(...parts: (string | number)[]): number {
  return createHash('sha256').update(parts.join('\u0000')).digest().readUInt32BE(0) / 2 ** 32;
}

/** How often each model gets a problem right on its own: from 0.45 to 0.8, fixed by its name. */
function skill(model: string): number {
  return 0.45 + 0.35 * chance('skill', model);
}

function goldOf(text: string): number | null {
  const m = /What is the result of (\d+)\+(\d+)\*(\d+)\+(\d+)-(\d+)\*(\d+)\?/.exec(text);
  if (!m) return null;
  const [a, b, c, d, e, f] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  return a + b * c + d - e * f;
}

/**
 * The slips people and small models make: a lost minus sign, a product added
 * instead of subtracted, an addition off by ten. Each question has the same few
 * wrong answers, so wrong samples agree with each other as real ones often do.
 */
function slip(gold: number, question: string, ...salt: (string | number)[]): number {
  const [a, b, c, d, e, f] = (/(\d+)\+(\d+)\*(\d+)\+(\d+)-(\d+)\*(\d+)/.exec(question) ?? []).slice(1).map(Number) as number[];
  const usual = [gold < 0 ? -gold : gold + 10, a! + b! * c! + d! + e! * f!, gold - 10];
  const r = chance('slip', question, ...salt);
  return usual[r < 0.5 ? 0 : r < 0.8 ? 1 : 2]!;
}

function solve(model: string, gold: number, ...salt: (string | number)[]): number | null {
  // The weakest models now and then forget to state a number at all.
  if (chance('blank', model, ...salt) < 0.08 * (1 - skill(model)) * 2) return null;
  return chance('solve', model, ...salt) < skill(model) ? gold : slip(gold, String(salt[0]), model, ...salt.slice(1));
}

const stated = (n: number | null): string => (n === null ? 'I would need to recompute this carefully before committing to a figure.' : `Working left to right with multiplication first. Final answer: ${n}`);
const numberIn = (text: string): number | null => {
  const m = /Final answer: (-?\d+)/.exec(text);
  return m ? Number(m[1]) : null;
};

function majority(values: (number | null)[]): { value: number | null; count: number } {
  const counts = new Map<number, number>();
  for (const v of values) if (v !== null) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best: { value: number | null; count: number } = { value: null, count: 0 };
  for (const [value, count] of counts) if (count > best.count) best = { value, count };
  return best;
}

function respond(req: SimRequest): string {
  const props = Object.keys((req.format as { properties?: Record<string, unknown> } | null)?.properties ?? {});
  const prompt = req.messages.at(-1)?.content ?? '';
  const all = req.messages.map((m) => m.content).join('\n');
  const gold = goldOf(all);
  if (gold === null) return JSON.stringify({ note: 'this demo panel only knows arithmetic items' });
  const question = /What is the result of [^?]*\?/.exec(all)![0];

  if (props.includes('position')) {
    const n = solve(req.model, gold, question, 'opening');
    return JSON.stringify({ position: stated(n), reasoning: 'Multiplications first, then left to right.', confidence: 0.7 });
  }
  if (props.includes('updatedPosition')) {
    const round = Number(/critique round (\d+)/.exec(prompt)?.[1] ?? 1);
    const own = numberIn(/Your position after the previous round:\n(.*)/.exec(prompt)?.[1] ?? '');
    const peers = [...prompt.matchAll(/\[[\w.-]+\](?: \(shortened to fit\))?\n(.*)/g)].map((m) => numberIn(m[1]!));
    const crowd = majority(peers);
    const r = chance('update', req.model, question, round);
    let next = own;
    if (own === gold) {
      // Right answers mostly hold, but a confident wrong majority sometimes talks an agent out of one.
      if (crowd.value !== null && crowd.value !== gold && crowd.count === peers.length && r < 0.4) next = crowd.value;
    } else if (r < skill(req.model) * 0.4) {
      next = gold;
    } else if (crowd.value !== null && crowd.count >= 2) {
      next = crowd.value;
    } else if (own === null) {
      next = solve(req.model, gold, question, 'retry', round);
    }
    return JSON.stringify({ agreements: [], disagreements: [], updatedPosition: stated(next), confidence: 0.75 });
  }
  if (props.includes('caveats')) {
    const answers = [...prompt.matchAll(/\[[\w.-]+\](?: \(shortened\))?\n(.*)/g)].map((m) => numberIn(m[1]!));
    const agree = majority(answers).count / Math.max(1, answers.length);
    return JSON.stringify({ recommendation: agree, facts: agree, caveats: agree, rationale: `${Math.round(agree * 100)}% give the same figure.` });
  }
  if (props.includes('triggersToRevisit')) {
    const lastRound = prompt.split('## Round').at(-1) ?? '';
    const round = Number(/^ (\d+)/.exec(lastRound)?.[1] ?? 0);
    const finals = [...lastRound.matchAll(/\[([\w.-]+)\][^\n]*\n(.*)/g)].map((m) => ({ agent: m[1]!, n: numberIn(m[2]!) }));
    const top = majority(finals.map((f) => f.n));
    const dissent = finals.filter((f) => f.n !== null && f.n !== top.value);
    return JSON.stringify({
      recommendation: top.value === null ? 'The panel gave no usable figure.' : `The panel's figure is ${top.value}. Final answer: ${top.value}`,
      triggersToRevisit: ['a recomputation disagrees'],
      confidence: { level: top.count === finals.length ? 'high' : 'medium', converged: top.count },
      minorityPositions: dissent.map((f) => ({ agent: f.agent, round, argument: `The result is ${f.n}.`, whyItMatters: 'A slip in one step changes the figure.' })),
      failedAgents: [],
    });
  }
  if (props.includes('vote')) {
    // Voters endorse a position that reaches their own figure, and reject the others.
    const artifact = numberIn(/<<<POSITION\n([\s\S]*?)\nPOSITION>>>/.exec(prompt)?.[1] ?? '');
    const own = numberIn(/Your own final position, for reference:\n(.*)/.exec(prompt)?.[1] ?? '');
    const yes = artifact !== null && (artifact === own || (own === null && artifact === gold));
    return JSON.stringify({ reason: yes ? 'Same figure as mine.' : 'A different figure from mine.', vote: yes ? 'YES' : 'NO' });
  }
  if (props.includes('answer')) {
    const n = solve(req.model, gold, question, 'alone', req.modelIndex);
    return n === null ? 'Let me think about this differently.' : JSON.stringify({ reasoning: 'Multiplications first.', answer: String(n) });
  }
  return '{}';
}

const presets = values.preset.map((name) => loadPreset(name).preset);
const sim = await startSimulator({ models: simModelsFor(presets), respond });
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
