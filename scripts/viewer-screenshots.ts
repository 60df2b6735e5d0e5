/**
 * `npm run docs:screenshots`: records simulated runs of each protocol in a temp database,
 * serves them with the viewer and photographs the list, a debate page and the page of each
 * other protocol into docs/ with Debian's Chromium (CONCLAVE_CHROMIUM overrides the path).
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
/** The protocols besides the debate, each by a demo preset and the section its page leads with. */
const OTHERS = [
  { preset: 'code-review', file: 'viewer-pipeline.png', section: '#phases' },
  { preset: 'decompose', file: 'viewer-decompose.png', section: '#decomposition' },
  { preset: 'tournament', file: 'viewer-tournament.png', section: '#bracket' },
  { preset: 'parallel', file: 'viewer-parallel.png', section: '#grid' },
];
for (const preset of ['cluster-vote', 'tech-decision', 'tension-map', ...OTHERS.map((o) => o.preset)]) {
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
  // Each other protocol from the top of its page to the end of its own section.
  for (const other of OTHERS) {
    await page.goto(`${url}/?preset=${other.preset}`);
    await page.locator('#debates a').first().click();
    const section = page.locator(other.section);
    await section.waitFor();
    const box = await section.boundingBox();
    const bottom = box ? Math.ceil(box.y + box.height + 16) : 1400;
    await page.screenshot({ path: packagePath('docs', other.file), fullPage: true, clip: { x: 0, y: 0, width: 1200, height: Math.min(bottom, 2400) } });
  }
  process.stderr.write(`Wrote docs/viewer-list.png, docs/viewer-debate.png and ${OTHERS.map((o) => `docs/${o.file}`).join(', ')}\n`);
} finally {
  await browser.close();
  await viewer.close();
  store.close();
}
