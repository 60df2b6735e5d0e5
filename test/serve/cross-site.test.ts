import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scriptedResponder } from '../helpers/panel.js';
import { recordDebate, type RunningViewer, startViewer, tempRecord } from '../helpers/viewer.js';

/** Debian's Chromium, which .ci/run installs when it is missing. */
const CHROMIUM = process.env.CONCLAVE_CHROMIUM ?? '/usr/bin/chromium';

let browser: Browser;
let viewer: RunningViewer;
let id = '';
let other: Server;
let otherPort = 0;
/** The page another site serves: it is set per test. */
let hostilePage = '';
/** The status the viewer answered to each request, by path. */
const answered: { path: string; status: number; site: string | undefined }[] = [];

beforeAll(async () => {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  const file = tempRecord();
  id = await recordDebate(file, scriptedResponder([0.4, 0.9]).respond);
  viewer = await startViewer(file);
  viewer.viewer.server.on('request', (req, res) => {
    res.on('finish', () => answered.push({ path: req.url ?? '', status: res.statusCode, site: req.headers['sec-fetch-site'] as string | undefined }));
  });
  // Another web server on this machine (a page the browser visits), on another port.
  other = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(hostilePage);
  });
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  otherPort = (other.address() as AddressInfo).port;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await viewer?.close();
  await new Promise((resolve) => other?.close(resolve));
});

describe('the viewer against pages of other sites in the same browser', () => {
  for (const host of ['localhost', '127.0.0.1']) {
    it(`refuses what a page at ${host} on another port has the browser fetch from it, and still opens from its links`, async () => {
      const base = viewer.url;
      const targets = [`/debates/${id}`, `/api/debates/${id}`, '/api/debates', `/api/debates/${id}/events`, '/'];
      hostilePage = `<!doctype html><a id="go" href="${base}/debates/${id}">the debate</a><script>
        const base = ${JSON.stringify(base)};
        Promise.allSettled(${JSON.stringify(targets)}.map((p) => fetch(base + p, { mode: 'no-cors' }).then((r) => r.body && r.body.cancel())))
          .then(() => { const img = new Image(); img.onload = img.onerror = () => { document.title = 'done'; }; img.src = base + '/debates/${id}?img'; });
      </script>`;
      const context = await browser.newContext();
      const page = await context.newPage();
      try {
        answered.length = 0;
        await page.goto(`http://${host}:${otherPort}/`);
        await page.waitForFunction("document.title === 'done'");
        const fetched = answered.filter((a) => a.site !== 'same-origin');
        expect(fetched.map((a) => a.path).sort()).toEqual([...targets, `/debates/${id}?img`].sort());
        expect(fetched.filter((a) => a.status !== 403)).toEqual([]);
        // A link to the viewer still opens it: a navigation carries the user's choice.
        answered.length = 0;
        await Promise.all([page.waitForURL(`${base}/debates/${id}`), page.click('#go')]);
        expect(await page.locator('h1').count()).toBeGreaterThan(0);
        expect(answered.find((a) => a.path === `/debates/${id}`)?.status).toBe(200);
        // The page's own script and stream, same-origin, are served.
        expect(answered.filter((a) => a.site === 'same-origin' && a.status !== 200)).toEqual([]);
      } finally {
        await context.close();
      }
    });
  }

  it('still serves requests that carry no fetch metadata (curl, scripts)', async () => {
    expect((await fetch(`${viewer.url}/api/debates/${id}`)).status).toBe(200);
  });
});
