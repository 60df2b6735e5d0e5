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

/** The roles the page's panel table lists, in order. */
function panelRoles(page: string): string[] {
  const table = /<table class="panel" id="panel">([\s\S]*?)<\/table>/.exec(page)?.[1] ?? '';
  return [...table.matchAll(/<tr><td class="agent">[^<]*<\/td><td>([^<]*)<\/td>/g)].map((m) => m[1]!);
}

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
    // The pipeline calls neither the judge nor the synthesizer: they are not on its panel.
    expect(panelRoles(page)).toEqual(['lead', 'analyst', 'reviewer', 'reviewer', 'filter']);
    // Every phase heading has something under it: the filter's says it wrote the report.
    const phases = [...page.matchAll(/<section class="phase" data-phase="(\w+)"><h3>[^<]*<\/h3>([\s\S]*?)<\/section>/g)];
    expect(phases.map((m) => m[1])).toEqual(['plan', 'review', 'final']);
    for (const m of phases) expect(m[2]!.replace(/<[^>]*>/g, '').trim(), m[1]).not.toBe('');
    expect(page).toContain('It wrote the <a href="#review-report">review report</a>');
    // A blocking finding is in the report, marked blocking: not a trigger to revisit.
    expect(page).toMatch(/<table class="findings">[\s\S]*blocking/);
    expect(page).not.toContain('Triggers to revisit');
  }, 60_000);

  it('lists each resumption as `show` does: when, on which host, from where, and the turns it reused', async () => {
    const db = join(dir, 'resumed.db');
    const r = await runCli(['demo', '--db', db, '--token-ms', '0', '--quiet', '--json'], dir);
    const store = openStore(db, { readonly: true });
    try {
      const d = store.getDebate((JSON.parse(r.stdout) as { id: string }).id);
      const at = Date.UTC(2026, 0, 2, 3, 4, 5);
      const resumed = { ...d, resumptions: [{ fromRound: 1, callsBefore: 9, reused: [{ round: 2, agentId: 'architect', call: 8 }], host: 'http://gpu-2:11434', at }] };
      const page = debatePage(resumed, null);
      expect(page).toContain('id="resumptions"');
      const item = /<ul class="resumptions" id="resumptions"><li>([\s\S]*?)<\/li>/.exec(page)?.[1]?.replace(/<[^>]*>/g, '') ?? '';
      expect(item).toContain('on http://gpu-2:11434, after round 1 (calls 1–9 were recorded before)');
      expect(item).toContain('reused without asking again: architect in round 2 (call 8)');
      expect(debatePage(d, null)).not.toContain('id="resumptions"');
    } finally {
      store.close();
    }
  }, 60_000);

  it.each([
    ['tournament', 'id="bracket"', ['judge', 'synthesizer']],
    ['decompose', 'id="decomposition"', []],
  ])('shows a %s in its own terms, with no rounds grid and no judge scores', async (preset, own, support) => {
    const page = await pageOf(preset);
    expect(page).toContain(own);
    // The tournament's judge gives the verdicts; a decomposition is split and reassembled by a debater.
    expect(panelRoles(page)).toEqual(['debater', 'debater', 'debater', ...support]);
    expect(page).not.toContain('id="grid"');
    for (const text of judgeOnly) expect(page).not.toContain(text);
  }, 60_000);

  it('shows a parallel run\'s answers but no judge', async () => {
    const page = await pageOf('parallel');
    expect(page).toContain('<h2>Answers</h2>');
    for (const text of ['id="judge-chart"', 'No judge scores', 'rounds held', 'class="judge-row"']) expect(page).not.toContain(text);
    expect(panelRoles(page)).toEqual(['debater', 'debater', 'debater', 'synthesizer']);
  }, 60_000);

  it('names where each call sits in the calls table, never a round number for what is not a round', async () => {
    const map = await pageOf('tension-map');
    expect(map).toContain('<td>targeted</td><td>the targeted exchange</td>');
    expect(map).toContain('<td>critique</td><td>round 1</td>');
    expect(map).not.toMatch(/<td>targeted<\/td><td>round/);
    const review = await pageOf('code-review');
    expect(review).toContain('<td>review</td><td>review phase</td>');
    const parts = await pageOf('decompose');
    expect(parts).toContain('<td>subanswer</td><td>sub-question 1</td>');
  }, 90_000);

  it('puts a debate\'s recommendation near the top, before the panel and the rounds', async () => {
    const page = await pageOf('tech-decision');
    expect(page.indexOf('class="recommendation"')).toBeGreaterThan(0);
    expect(page.indexOf('class="recommendation"')).toBeLessThan(page.indexOf('id="panel"'));
    expect(page.indexOf('id="panel"')).toBeLessThan(page.indexOf('id="grid"'));
    expect(page).toContain('id="judge-chart"');
    expect(page).toContain('rounds held');
  }, 60_000);
});
