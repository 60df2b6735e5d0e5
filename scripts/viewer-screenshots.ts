/**
 * `npm run docs:screenshots`: records three simulated debates in a temp database,
 * serves them with the viewer and photographs the list and a debate page into
 * docs/ with Debian's Chromium (CONCLAVE_CHROMIUM overrides the path).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { main } from '../src/cli/main.js';
import type { CliIO } from '../src/cli/io.js';
import { packagePath } from '../src/package-root.js';
import { createViewer } from '../src/serve/server.js';
import { openStoreReadOnly } from '../src/serve/store.js';

const sink = () => ({ isTTY: false, columns: 100, write: () => true }) as unknown as NodeJS.WriteStream;
const io: CliIO = { stdout: sink(), stderr: sink(), env: {}, cwd: process.cwd() };
const db = join(mkdtempSync(join(tmpdir(), 'conclave-shots-')), 'record.db');
for (const preset of ['cluster-vote', 'tech-decision', 'tension-map']) {
  const code = await main(['demo', '--preset', preset, '--db', db, '--quiet', '--token-ms', '1'], io);
  if (code !== 0) throw new Error(`demo --preset ${preset} exited with ${code}`);
}

const store = openStoreReadOnly(db);
const viewer = createViewer({ store });
const url = await viewer.listen(0, '127.0.0.1');
const browser = await chromium.launch({
  executablePath: process.env.CONCLAVE_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 330 } });
  await page.goto(`${url}/`);
  await page.screenshot({ path: packagePath('docs', 'viewer-list.png') });
  await page.goto(`${url}/?preset=tech-decision`);
  await page.locator('#debates a').first().click();
  await page.locator('#grid').waitFor();
  // From the question down to the judge's chart: the grid is the page's point.
  const chart = await page.locator('#judge-chart').boundingBox();
  const height = chart ? Math.ceil(chart.y + chart.height + 16) : 1400;
  await page.screenshot({ path: packagePath('docs', 'viewer-debate.png'), fullPage: true, clip: { x: 0, y: 0, width: 1200, height } });
  process.stderr.write(`Wrote docs/viewer-list.png and docs/viewer-debate.png\n`);
} finally {
  await browser.close();
  await viewer.close();
  store.close();
}
