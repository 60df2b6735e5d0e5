import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentFamily } from '../../src/protocol/stances.js';
import { renderCard } from '../../src/render/card.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import type { SchedulePlan } from '../../src/schedule/plan.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { StoredDebate } from '../../src/store/store.js';
import { runCli } from '../helpers/cli.js';
import { agentOf, reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

// A family with paragraphs, a table, a setext heading, a line separator and an ATX heading: written on its
// lines, it would end the card's PANEL block and split the Markdown table's row into a document of its own.
const FAMILY = 'fam\n\nINJECTED PARAGRAPH **bold**\n\n| a | b |\n|---|---|\n| fake | row |\n\nSetext Heading\n===\u2028# hashed';
// What a one-line context shows of it.
const FAMILY_LINE = 'fam INJECTED PARAGRAPH **bold** | a | b | |---|---| | fake | row | Setext Heading === # hashed';
// An answer with setext underlines, which Markdown reads as headings under the line above.
const UNDERLINED = 'Heading one\n===\nHeading two\n---\nthe rest';

let dir = '';
let db = '';
let sim: SimHandle;
let debateId = '';

const cli = (args: string[]) => runCli(args, dir);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-server-lines-'));
  db = join(dir, 'c.db');
  const preset = testPreset(['a', 'b'], { protocol: { maxRounds: 1, convergenceThreshold: 0.85, callTimeoutSeconds: 10 } });
  writeFileSync(join(dir, 'panel.json'), JSON.stringify(preset));
  const respond = scriptedResponder([0.9], (req) => (stageOf(req) === 'opening' && agentOf(req) === 'a' ? reply.opening('a', UNDERLINED) : undefined)).respond;
  const models = simModels(preset).map((m) => (m.name === 'model-0:1b' ? { ...m, family: FAMILY } : m));
  // The smallest model, so `hosts probe` picks it: its name has a line of its own.
  models.push({ name: 'tiny\n# model:1b', contextLength: 4096, sizeBytes: 1000 } as (typeof models)[number]);
  sim = await startSimulator({ models, version: '0.13.0\nsecond line\u2028third', respond });
});

afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The card's PANEL block: its heading and the lines under it, up to the blank line that ends it. */
function panelBlock(card: string): string[] {
  const lines = card.split('\n');
  const start = lines.indexOf('PANEL');
  expect(start).toBeGreaterThanOrEqual(0);
  const end = lines.indexOf('', start);
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The rows of the Markdown panel table, from its header to the blank line after it. */
function familyTable(md: string): string[] {
  const lines = md.split('\n');
  const start = lines.indexOf('| agent | model | family | parameters | quantization | from |');
  expect(start).toBeGreaterThanOrEqual(0);
  return lines.slice(start, lines.indexOf('', start));
}

const ENTRY = /^ {2}(families|stances|joined the majority|by round): /;

/** The PANEL block of a card 100 columns wide (its text wrapped at 98), with the family on its own entry's lines. */
function expectOneLinePanel(card: string): void {
  const block = panelBlock(card);
  for (const line of block) expect(line).toMatch(/^ {2}\S/);
  expect(block[0]).toMatch(/^ {2}families: fam injected paragraph /);
  // A line that starts no entry continues the one above only because the next word did not fit: never at a newline of the text.
  for (let i = 1; i < block.length; i++) {
    if (ENTRY.test(block[i]!)) continue;
    const word = block[i]!.trim().split(' ')[0]!;
    expect(block[i - 1]!.length - 2 + 1 + word.length).toBeGreaterThan(98);
  }
  expect(block.join(' ').replace(/ +/g, ' ')).toContain(`families: ${FAMILY_LINE.toLowerCase()} (a)`);
}

function expectOneRowPerAgent(md: string): void {
  const table = familyTable(md);
  // The header, its rule, one row per agent: each a whole row.
  expect(table).toHaveLength(4);
  for (const row of table) expect(row).toMatch(/^\|.*\|$/);
  expect(table[2]).toContain('INJECTED PARAGRAPH **bold** \\| a \\| b \\|');
  // No line of the document is a setext underline or a heading the family or an answer brought.
  expect(md).not.toMatch(/^ {0,3}(=+|-+)[ \t]*$/m);
  expect(md).not.toMatch(/^ {0,3}#+ (hashed|Heading)/m);
}

describe('server text in one-line contexts', () => {
  it('keeps the run card PANEL block whole when a model family has newlines', async () => {
    const r = await cli(['run', 'Should we do A?', '--preset', join(dir, 'panel.json'), '--host', sim.url, '--db', db]);
    expect(r.code).toBe(0);
    debateId = /Stored as (\S+) in/.exec(r.stderr)?.[1] ?? '';
    expect(debateId).not.toBe('');
    expectOneLinePanel(r.stdout);
  });

  it('keeps each agent on one row of the Markdown panel table in show and export, and makes no heading of an answer', async () => {
    const shown = await cli(['show', debateId, '--db', db]);
    expect(shown.code).toBe(0);
    const out = join(dir, 'debate.md');
    expect((await cli(['export', debateId, '--db', db, '--format', 'md', '--out', out])).code).toBe(0);
    const md = readFileSync(out, 'utf8');
    expect(md).toBe(shown.stdout);
    expectOneRowPerAgent(md);
    // The answer's underlines are kept as text.
    expect(md).toContain('Heading one\n\\===\nHeading two\n\\---\nthe rest');
  });

  it('keeps a family sealed with newlines by an older version on one line in the card and the Markdown table', () => {
    const store = openStore(db);
    let stored: StoredDebate;
    try {
      stored = store.getDebate(debateId);
    } finally {
      store.close();
    }
    const plan = stored.plan as SchedulePlan;
    // As recorded before the gateway put server facts on one line.
    plan.families = plan.families!.map((f: AgentFamily) => (f.agentId === 'a' ? { ...f, family: FAMILY, families: [FAMILY, 'other\nline'] } : f));
    expectOneLinePanel(renderCard(stored));
    const md = renderMarkdown(stored);
    expectOneRowPerAgent(md);
    expect(familyTable(md)[2]).toContain('(fam INJECTED PARAGRAPH');
    expect(familyTable(md)[2]).toContain(', other line) |');
  });

  it('prints the server version on the host line of hosts', async () => {
    const r = await cli(['hosts', '--host', sim.url]);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(`${sim.url} · Ollama 0.13.0 second line third · GPU 16 GiB (assumed) · 1 slot per model (default)`);
  });

  it('names a model with a newline on one line in hosts probe, its error and its hint', async () => {
    const probed = await cli(['hosts', 'probe', '--host', sim.url]);
    expect(probed.code).toBe(0);
    expect(probed.stdout).toMatch(new RegExp(`^${sim.url.replace(/[.]/g, '\\.')}: \\d of 4 overlapping requests to tiny # model:1b generated at once`));
    expect(probed.stdout.trimEnd().split('\n')).toHaveLength(1);

    const missing = await cli(['hosts', 'probe', '--host', sim.url, '--model', 'ghost\n# pulled:1b']);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain(`Model \`ghost # pulled:1b\` is not on ${sim.url}.`);
    expect(missing.stderr).toContain('Run `ollama pull ghost # pulled:1b` on that host.');
    expect(missing.stderr).not.toMatch(/^# pulled/m);
  });
});
