import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { debatePage } from '../../src/serve/debate-page.js';
import { openStore } from '../../src/store/open.js';
import { runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'conclave-protocol-pages-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The viewer's page of a demo run of this preset. */
async function pageOf(preset: string): Promise<string> {
  const db = join(dir, `${preset}.db`);
  const r = await runCli(['demo', '--preset', preset, '--db', db, '--token-ms', '0', '--quiet', '--json'], dir);
  expect(r.code).toBe(0);
  const store = openStore(db, { readonly: true });
  try {
    return debatePage(store.getDebate((JSON.parse(r.stdout) as { id: string }).id), null);
  } finally {
    store.close();
  }
}

const judgeOnly = ['id="judge-chart"', 'No judge scores', 'rounds held', 'final convergence', 'agents converged'];

describe('each protocol\'s page in the viewer', () => {
  it('shows a pipeline\'s roles, phases and report, and nothing of a debate', async () => {
    const page = await pageOf('code-review');
    for (const role of ['lead', 'analyst', 'reviewer', 'filter']) expect(page).toContain(`<td>${role}</td>`);
    expect(page).not.toContain('<td>debater</td>');
    expect(page).toContain('id="phases"');
    for (const phase of ['plan', 'review']) expect(page).toContain(`data-phase="${phase}"`);
    expect(page).toContain('id="review-report"');
    expect(page).not.toContain('id="grid"');
    for (const text of judgeOnly) expect(page).not.toContain(text);
  }, 60_000);

  it.each([
    ['tournament', 'id="bracket"'],
    ['decompose', 'id="decomposition"'],
  ])('shows a %s in its own terms, with no rounds grid and no judge scores', async (preset, own) => {
    const page = await pageOf(preset);
    expect(page).toContain(own);
    expect(page).not.toContain('id="grid"');
    for (const text of judgeOnly) expect(page).not.toContain(text);
  }, 60_000);

  it('shows a parallel run\'s answers but no judge', async () => {
    const page = await pageOf('parallel');
    expect(page).toContain('<h2>Answers</h2>');
    for (const text of ['id="judge-chart"', 'No judge scores', 'rounds held']) expect(page).not.toContain(text);
  }, 60_000);

  it('puts a debate\'s recommendation near the top, before the panel and the rounds', async () => {
    const page = await pageOf('tech-decision');
    expect(page.indexOf('class="recommendation"')).toBeGreaterThan(0);
    expect(page.indexOf('class="recommendation"')).toBeLessThan(page.indexOf('id="panel"'));
    expect(page.indexOf('id="panel"')).toBeLessThan(page.indexOf('id="grid"'));
    expect(page).toContain('id="judge-chart"');
    expect(page).toContain('rounds held');
  }, 60_000);
});
