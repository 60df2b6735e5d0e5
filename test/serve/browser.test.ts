import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { exitText } from '../../src/render/exit.js';
import type { SimRequest } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { StoredDebate } from '../../src/store/store.js';
import { agentOf, reply, roundOf, scriptedResponder, stageOf } from '../helpers/panel.js';
import { setupBench } from '../bench/fixture.js';
import { recordDebate, type RunningViewer, startViewer, tempRecord } from '../helpers/viewer.js';
import { runCli } from '../helpers/cli.js';

/** Debian's Chromium, which .ci/run installs when it is missing. */
const CHROMIUM = process.env.CONCLAVE_CHROMIUM ?? '/usr/bin/chromium';
const HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b onmouseover="window.__pwned=3">bold</b>';

let browser: Browser;
let viewer: RunningViewer | null = null;

beforeAll(async () => {
  try {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
  } catch (err) {
    throw new Error(`Could not start Chromium at ${CHROMIUM}: install it (\`apt-get install chromium\`, as .ci/run does) or set CONCLAVE_CHROMIUM to its path.`, { cause: err });
  }
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

afterEach(async () => {
  await viewer?.close();
  viewer = null;
});

/** A page that collects console errors and uncaught exceptions (a CSP refusal shows up as one). */
async function openPage(javaScriptEnabled = true): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ javaScriptEnabled });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
  });
  page.on('pageerror', (err) => problems.push(err.message));
  return { page, problems };
}

function readDebate(file: string, id: string): StoredDebate {
  const store = openStore(file);
  try {
    return store.getDebate(id);
  } finally {
    store.close();
  }
}

/** Critiques that agree with one peer and disagree with another, so the grid has both. */
function arguingResponder(judgeScores: number[]) {
  return scriptedResponder(judgeScores, (req) => {
    if (stageOf(req) !== 'critique') return undefined;
    const agent = agentOf(req) ?? '?';
    const peers = ['a', 'b', 'c'].filter((p) => p !== agent);
    return JSON.stringify({
      agreements: [{ with: peers[0], on: `the cost of A (round ${roundOf(req)})` }],
      disagreements: [{ with: peers[1], on: 'the timing', reason: `${agent} thinks later is safer` }],
      updatedPosition: `${agent} holds A after round ${roundOf(req)}`,
      confidence: 75,
    });
  });
}

describe('the viewer in a browser', () => {
  it('lists debates, opens one, and shows the grid as the record has it', { timeout: 60_000 }, async () => {
    const file = tempRecord();
    const id = await recordDebate(file, arguingResponder([0.3, 0.6, 0.9]).respond, { question: 'Should we adopt A?' });
    const d = readDebate(file, id);
    viewer = await startViewer(file);
    const { page, problems } = await openPage();

    await page.goto(`${viewer.url}/`);
    expect(await page.locator('#debates tbody tr').count()).toBe(1);
    await page.getByRole('link', { name: 'Should we adopt A?' }).click();
    await page.waitForURL(`**/debates/${id}`);
    expect(await page.locator('#question').textContent()).toBe('Should we adopt A?');

    const rounds = [...new Set(d.turns.map((t) => t.round))];
    expect(rounds).toEqual([0, 1, 2]);
    expect(await page.locator('#grid thead th[data-round]').allTextContents()).toEqual(['round 0 (answers)', 'round 1', 'round 2']);
    for (const t of d.turns) {
      const cell = page.locator(`#grid td.turn[data-round="${t.round}"][data-agent="${t.agentId}"]`);
      expect(await cell.locator('.position').textContent()).toBe(t.position);
      expect(await cell.locator('.meta').textContent()).toContain(`confidence ${t.confidence!.toFixed(2)}`);
      const agree = (t.critique?.agreements ?? []).map((a) => `${a.with}: ${a.on}`);
      const disagree = (t.critique?.disagreements ?? []).map((a) => `${a.with}: ${a.on}. ${a.reason}`);
      expect(await cell.locator('ul.agree li').allTextContents()).toEqual(agree);
      expect(await cell.locator('ul.disagree li').allTextContents()).toEqual(disagree);
    }
    for (const j of d.rounds) {
      expect(await page.locator(`#grid td.judge[data-judge-round="${j.round}"] strong`).textContent()).toBe(j.convergence!.toFixed(2));
    }
    expect(await page.locator('#judge-chart polyline').count()).toBe(4);
    expect(await page.locator('#calls tr.call').count()).toBe(d.calls.length);
    expect(await page.locator('#exit .exit-reason').textContent()).toBe(exitText(d.exitReason!));
    expect(await page.locator('#exit').textContent()).not.toContain(`(${d.exitReason})`);
    expect(await page.locator('#synthesis .recommendation').textContent()).toBe(d.synthesis?.synthesis?.recommendation);
    const plan = d.plan as { models: { model: string; numCtx: number }[] };
    expect(await page.locator('#plan table.plan tbody tr').count()).toBe(plan.models.length);
    expect(await page.locator('#plan table.plan tbody tr').first().locator('td').nth(1).textContent()).toBe(String(plan.models[0]!.numCtx));
    expect(problems).toEqual([]);
  });

  it('tells the reader of the list when a debate is recorded after the page loaded', { timeout: 60_000 }, async () => {
    const file = tempRecord();
    await recordDebate(file, scriptedResponder([0.4, 0.9]).respond, { question: 'First question?' });
    viewer = await startViewer(file);
    const { page, problems } = await openPage();
    await page.goto(`${viewer.url}/`);
    expect(await page.locator('#changed').isHidden()).toBe(true);
    await recordDebate(file, scriptedResponder([0.4, 0.9]).respond, { question: 'Second question?' });
    await page.locator('#changed').waitFor({ state: 'visible' });
    await page.locator('#changed a').click();
    await page.getByRole('link', { name: 'Second question?' }).waitFor();
    expect(problems).toEqual([]);
  });

  it('reads the same with JavaScript off', { timeout: 60_000 }, async () => {
    const file = tempRecord();
    const id = await recordDebate(file, scriptedResponder([0.4, 0.9]).respond);
    const d = readDebate(file, id);
    viewer = await startViewer(file);
    const { page } = await openPage(false);
    await page.goto(`${viewer.url}/?q=${encodeURIComponent(id.slice(-4))}`);
    expect(await page.locator('#debates tbody tr').count()).toBe(1);
    await page.goto(`${viewer.url}/debates/${id}`);
    for (const t of d.turns) {
      expect(await page.locator(`#grid td.turn[data-round="${t.round}"][data-agent="${t.agentId}"] .position`).textContent()).toBe(t.position);
    }
  });

  it('follows a running debate: turns appear without a reload, then the finished record loads', { timeout: 90_000 }, async () => {
    const file = tempRecord();
    let openOpenings: () => void = () => {};
    let openSynthesis: () => void = () => {};
    const openings = new Promise<void>((resolve) => (openOpenings = resolve));
    const synthesis = new Promise<void>((resolve) => (openSynthesis = resolve));
    const script = scriptedResponder([0.4, 0.9], (req) => (stageOf(req) === 'opening' && agentOf(req) === 'b' ? reply.opening('b', `b says ${HOSTILE}`) : undefined));
    const respond = async (req: SimRequest) => {
      if (stageOf(req) === 'opening') await openings;
      if (stageOf(req) === 'synthesis') await synthesis;
      return script.respond(req);
    };
    let id = '';
    const started = new Promise<void>((resolve) => {
      const run = recordDebate(file, respond, { tokenMs: 5, onStart: (debateId) => ((id = debateId), resolve()) });
      run.catch(() => {});
    });
    await started;
    viewer = await startViewer(file);
    const { page, problems } = await openPage();
    await page.goto(`${viewer.url}/debates/${id}`);
    expect(await page.locator('body').getAttribute('data-status')).toBe('running');
    expect(await page.locator('#grid td.turn .position').count()).toBe(0);
    // Marks this page load: a reload would lose it.
    await page.evaluate("window.loadMark = 'first load'");

    openOpenings();
    const cell = (round: number, agent: string) => page.locator(`#grid td.turn[data-round="${round}"][data-agent="${agent}"] .position`);
    await cell(0, 'a').filter({ hasText: 'a says A' }).waitFor();
    await cell(1, 'c').filter({ hasText: 'c now says A' }).waitFor();
    await page.locator('#grid td.judge[data-judge-round="1"] strong').filter({ hasText: '0.90' }).waitFor();
    expect(await cell(0, 'b').textContent()).toBe(`b says ${HOSTILE}`);
    expect(await page.evaluate('window.loadMark')).toBe('first load');
    expect(await page.locator('#synthesis').textContent()).toContain('Not written yet.');
    expect(await page.locator('#calls tr.call').count()).toBeGreaterThanOrEqual(8);
    // A call row added by the script folds out the same parts as a server-rendered one.
    const live = readDebate(file, id).calls.find((c) => c.stage === 'critique')!;
    const detail = page.locator(`#calls tr[data-call-detail="${live.id}"]`);
    expect(await detail.locator('h4').allTextContents()).toEqual([...live.messages.map((m) => m.role), 'raw reply', 'parsed', 'options']);
    expect(await detail.locator('pre.raw').textContent()).toBe(live.raw);

    openSynthesis();
    await page.locator('#synthesis .recommendation').filter({ hasText: 'Do A' }).waitFor();
    expect(await page.evaluate('window.loadMark')).toBeUndefined();
    expect(await page.locator('#status').textContent()).toBe('completed');
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(await page.locator('main img, main script, main b').count()).toBe(0);
    expect(problems).toEqual([]);
  });

  it('shows hostile model output as text and runs none of it', { timeout: 60_000 }, async () => {
    const file = tempRecord();
    const script = scriptedResponder([0.4, 0.9], (req) => {
      const agent = agentOf(req) ?? '?';
      switch (stageOf(req)) {
        case 'opening':
          return JSON.stringify({ position: `${agent}: ${HOSTILE}`, reasoning: HOSTILE, confidence: 50 });
        case 'critique':
          return JSON.stringify({ agreements: [{ with: agent === 'a' ? 'b' : 'a', on: HOSTILE }], disagreements: [], updatedPosition: HOSTILE, confidence: 60 });
        case 'synthesis':
          return JSON.stringify({
            recommendation: HOSTILE,
            triggersToRevisit: [HOSTILE],
            confidence: { level: 'low', converged: 1 },
            restsOn: ['a'],
            minorityPositions: [{ agent: 'a', round: 0, argument: HOSTILE, whyItMatters: HOSTILE }],
            failedAgents: [],
          });
        default:
          return undefined;
      }
    });
    const id = await recordDebate(file, script.respond, { question: `Is this safe? ${HOSTILE}` });
    viewer = await startViewer(file);
    const { page, problems } = await openPage();

    await page.goto(`${viewer.url}/`);
    expect(await page.locator('#debates a').first().textContent()).toBe(`Is this safe? ${HOSTILE}`);
    await page.goto(`${viewer.url}/debates/${id}`);
    // Open every <details>, so the raw replies and messages are in the rendered page too.
    await page.evaluate("document.querySelectorAll('details').forEach((el) => el.setAttribute('open', ''))");
    await page.locator('#grid td.turn[data-round="1"][data-agent="a"] ul.agree li').hover();
    expect(await page.locator('#grid td.turn[data-round="0"][data-agent="a"] .position').textContent()).toBe(`a: ${HOSTILE}`);
    expect(await page.locator('#synthesis .recommendation').textContent()).toBe(HOSTILE);
    expect(await page.locator('#calls pre.raw').first().textContent()).toContain(HOSTILE.replace(/"/g, '\\"'));
    expect(await page.locator('main img, main script, main b').count()).toBe(0);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(problems).toEqual([]);
  });

  it('shows a bench report with its own stylesheet applied under the policy', { timeout: 60_000 }, async () => {
    const file = tempRecord();
    const bench = await setupBench({ dbPath: file });
    let runId = '';
    try {
      runId = await bench.start({ limit: 1 });
    } finally {
      await bench.close();
    }
    viewer = await startViewer(file);
    const { page, problems } = await openPage();
    await page.goto(`${viewer.url}/`);
    await page.locator(`#bench-runs a[href="/bench/${runId}"]`).click();
    await page.waitForURL(`**/bench/${runId}`);
    expect(await page.locator('h1').textContent()).toBe(`Bench run ${runId}`);
    // 22px comes from the report's inline stylesheet, which the policy lets through by its hash.
    expect(await page.evaluate("getComputedStyle(document.querySelector('h1')).fontSize")).toBe('22px');
    expect(problems).toEqual([]);
  });

  it('shows each protocol its own sections in Chromium, and none of the debate\'s where they do not apply', { timeout: 120_000 }, async () => {
    const file = tempRecord();
    for (const preset of ['code-review', 'tournament', 'decompose', 'parallel', 'tech-decision']) {
      expect((await runCli(['demo', '--preset', preset, '--db', file, '--token-ms', '0', '--quiet'], process.cwd())).code).toBe(0);
    }
    viewer = await startViewer(file);
    const store = openStore(file);
    const ids = Object.fromEntries(store.listDebates().map((r) => [r.presetName, r.id]));
    store.close();
    const { page, problems } = await openPage();
    const own: Record<string, string[]> = {
      'code-review': ['#phases', '#review-report'],
      tournament: ['#bracket'],
      decompose: ['#decomposition'],
      parallel: ['#grid', '#synthesis'],
      'tech-decision': ['#grid', '#judge-chart', '#synthesis'],
    };
    for (const [preset, sections] of Object.entries(own)) {
      await page.goto(`${viewer.url}/debates/${ids[preset]}`);
      for (const section of sections) expect(await page.locator(section).count(), `${preset} ${section}`).toBe(1);
      if (preset !== 'tech-decision') expect(await page.locator('#judge-chart').count(), preset).toBe(0);
      if (preset !== 'tech-decision' && preset !== 'parallel') expect(await page.locator('#grid').count(), preset).toBe(0);
    }
    expect(problems).toEqual([]);
  });

  it('keeps every id on one line in a 1280-pixel window, beside a long question', { timeout: 60_000 }, async () => {
    const file = tempRecord();
    const question = `Should we ${'move every service of the platform to the new storage layer '.repeat(4)}now?`;
    const id = await recordDebate(file, arguingResponder([0.3, 0.9]).respond, { question });
    viewer = await startViewer(file);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const lines = "[...document.querySelectorAll('code.id')].map((c) => new Set([...c.getClientRects()].map((r) => Math.round(r.top))).size)";
    await page.goto(viewer.url);
    expect(await page.evaluate(lines)).toEqual([1]);
    await page.goto(`${viewer.url}/debates/${id}`);
    expect(await page.evaluate(lines)).toEqual([1]);
    await context.close();
  });

  it('fits every table of a two-preset bench report into a 1280-pixel window', { timeout: 120_000 }, async () => {
    const { loadPreset } = await import('../../src/config/load-preset.js');
    const { demoResponder, simModelsFor } = await import('../../src/sim/demo.js');
    const { startSimulator } = await import('../../src/sim/index.js');
    const presets = ['small-8gb', 'thinking'].map((n) => loadPreset(n).preset);
    const sim = await startSimulator({ models: simModelsFor(presets), respond: demoResponder(presets) });
    const file = tempRecord();
    const out = `${file}.report.html`;
    try {
      expect((await runCli(['bench', '--suite', 'arithmetic', '--preset', 'small-8gb', '--preset', 'thinking', '--limit', '3', '--host', sim.url, '--db', file, '--quiet', '--json'], process.cwd())).code).toBe(0);
      const run = (JSON.parse((await runCli(['bench', 'list', '--db', file, '--json'], process.cwd())).stdout) as { id: string }[])[0]!.id;
      expect((await runCli(['bench', 'report', run, '--db', file, '--format', 'html', '--out', out], process.cwd())).code).toBe(0);
    } finally {
      await sim.close();
    }
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`file://${out}`);
    const overflowing = await page.evaluate("[...document.querySelectorAll('.scroll')].filter((d) => d.scrollWidth > d.clientWidth).map((d) => d.previousElementSibling?.previousElementSibling?.id)");
    expect(overflowing).toEqual([]);
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(1280);
    await context.close();
  });
});
