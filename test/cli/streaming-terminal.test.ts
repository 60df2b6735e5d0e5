import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load-preset.js';
import { packagePath } from '../../src/package-root.js';
import { demoResponder, simModelsFor } from '../../src/sim/demo.js';
import { startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { ON_A_PTY } from '../helpers/pty.js';

let dir = '';
let sim: Awaited<ReturnType<typeof startSimulator>>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-stream-'));
  const { preset } = loadPreset('tech-decision', dir);
  // A simulator that writes slowly, as a 7-14B model does on a workstation GPU: 20 ms a token.
  sim = await startSimulator({ port: 0, models: simModelsFor([preset]), respond: demoResponder(preset), tokenMs: 20, vramBytes: 24 * 2 ** 30 });
});

afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

async function runOnTerminal(name: string, env: Record<string, string>, extra: string[] = []): Promise<{ code: number | null; shown: string; db: string }> {
  const base = { ...process.env };
  for (const v of ['CI', 'NO_COLOR', 'FORCE_COLOR', 'TERM']) delete base[v];
  const db = join(dir, `${name}.db`);
  const args = ['run', 'Should we migrate this tool from SQLite to Postgres now?', '--preset', 'tech-decision', '--protocol', 'parallel', '--host', sim.url, '--vram-gib', '24', '--db', db, ...extra];
  const child = spawn('python3', ['-c', ON_A_PTY, process.execPath, '--import', 'tsx', 'src/cli/entry.ts', ...args], {
    cwd: packagePath(),
    env: { ...base, TERM: 'xterm-256color', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let shown = '';
  child.stdout.on('data', (chunk: Buffer) => {
    shown += chunk.toString();
  });
  const code = await new Promise<number | null>((resolvePromise) => child.once('close', resolvePromise));
  return { code, shown, db };
}

/** Each agent's round-0 position and the recommendation, as recorded. */
function recorded(db: string): { positions: Map<string, string>; recommendation: string } {
  const store = openStore(db, { readonly: true });
  try {
    const [entry] = store.listDebates({ limit: 1 });
    const d = store.getDebate(entry!.id);
    return { positions: new Map(d.turns.filter((t) => t.round === 0).map((t) => [t.agentId, t.position ?? ''])), recommendation: d.synthesis?.synthesis?.recommendation ?? '' };
  } finally {
    store.close();
  }
}

/** The first words of a text, as the live block shows them once the text has wrapped past them or not. */
const opening = (text: string, words = 4): string => text.split(/\s+/).slice(0, words).join(' ');

describe('streamed text on a terminal', () => {
  it("shows each answer's text while its call is still running, then the synthesis's recommendation as it is written", async () => {
    const r = await runOnTerminal('tty', {});
    expect(r.code).toBe(0);
    const { positions, recommendation } = recorded(r.db);
    expect(positions.size).toBeGreaterThan(1);
    for (const [agent, position] of positions) {
      const streamed = r.shown.indexOf(opening(position));
      const finished = r.shown.indexOf(`✓\u001b[39m ${agent}`);
      expect(streamed).toBeGreaterThanOrEqual(0);
      expect(finished).toBeGreaterThan(0);
      // On screen before the line that says the call ended.
      expect(streamed).toBeLessThan(finished);
    }
    const writing = r.shown.indexOf('RECOMMENDATION\u001b[22m \u001b[2m(being written)');
    expect(writing).toBeGreaterThan(0);
    expect(r.shown.indexOf(opening(recommendation), writing)).toBeGreaterThan(writing);
  }, 120_000);

  it.each<Record<string, string>>([{ NO_COLOR: '1' }, { CI: 'true' }])('shows no streamed text under %o: an answer appears only once its call ended', async (env) => {
    const r = await runOnTerminal(Object.keys(env)[0]!, env);
    expect(r.code).toBe(0);
    expect(r.shown).not.toContain('\u001b');
    expect(r.shown).not.toContain('being written');
    const { positions } = recorded(r.db);
    for (const [agent, position] of positions) {
      const first = r.shown.indexOf(opening(position));
      expect(first).toBeGreaterThan(r.shown.indexOf(`✓ ${agent}`));
    }
  }, 120_000);
});
