import { type Browser, chromium } from 'playwright-core';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { liveDir, liveFileWriter } from '../../src/events/live-file.js';
import { startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { agentOf, reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';
import { startViewer, tempRecord } from '../helpers/viewer.js';

/** Debian's Chromium, which .ci/run installs when it is missing. */
const CHROMIUM = process.env.CONCLAVE_CHROMIUM ?? '/usr/bin/chromium';
const HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';

let browser: Browser;

beforeAll(async () => {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

describe("the viewer's page of a running debate", () => {
  it("shows each agent's answer growing as it is written, as text", { timeout: 120_000 }, async () => {
    const file = tempRecord();
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
    const position = `${HOSTILE} a weighs ${words} end`;
    const script = scriptedResponder([0.4, 0.9], (req) => (stageOf(req) === 'opening' && agentOf(req) === 'a' ? reply.opening('a', position) : undefined));
    const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 1, convergenceThreshold: 0.85, callTimeoutSeconds: 120 } });
    // A slow writer: the opening takes seconds, as a real model's does.
    const sim = await startSimulator({ models: simModels(preset), respond: script.respond, tokenMs: 60 });
    const store = openStore(file);
    const stream = liveFileWriter(file);
    let id = '';
    const started = new Promise<void>((resolve) => {
      const onStart = Object.assign((e: { type: string; debateId?: string }) => (e.type === 'debate.started' ? ((id = e.debateId!), resolve()) : undefined), { progress: false });
      runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store), listeners: [onStart, stream] }).catch(() => {});
    });
    const viewer = await startViewer(file);
    try {
      await started;
      const context = await browser.newContext();
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (err) => problems.push(err.message));
      await page.goto(`${viewer.url}/debates/${id}`);
      const text = page.locator('#live-stream li[data-agent="a"] .stream-text');
      await text.filter({ hasText: 'w5 ' }).waitFor({ timeout: 60_000 });
      const early = (await text.textContent()) ?? '';
      await text.filter({ hasText: 'w40 ' }).waitFor({ timeout: 60_000 });
      const later = (await text.textContent()) ?? '';
      // The same text, longer: it grows in place, and is the start of what a writes.
      expect(later.length).toBeGreaterThan(early.length);
      expect(later.startsWith(early)).toBe(true);
      expect(position.startsWith(later)).toBe(true);
      expect(early.startsWith(HOSTILE)).toBe(true);
      expect(await page.locator('#live-stream img, #live-stream script').count()).toBe(0);
      expect(await page.evaluate('window.__pwned')).toBeUndefined();
      // The finished record loads when the debate ends; the live file is gone.
      await page.locator('#status').filter({ hasText: 'completed' }).waitFor({ timeout: 90_000 });
      expect(existsSync(liveDir(file))).toBe(false);
      expect(problems).toEqual([]);
    } finally {
      await viewer.close();
      stream.close();
      store.close();
      await sim.close();
    }
  });
});
