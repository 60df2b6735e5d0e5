import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { openStore } from '../../src/store/open.js';
import { runCli } from '../helpers/cli.js';

let dir = '';
const cli = (args: string[]) => runCli(args, dir);
const flat = (text: string) => text.replace(/\s+/g, ' ');

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-demo-cards-'));
});

describe('the cards of the demos', () => {
  it('says on the card and in show alike when the clashes were mapped and when the map was drawn, and whose confidence the map lists', async () => {
    const db = join(dir, 'map.db');
    const run = await cli(['demo', '--preset', 'tension-map', '--db', db, '--token-ms', '0']);
    expect(run.code).toBe(0);
    const id = /Stored as (\S+)/.exec(run.stderr)?.[1] ?? '';
    const show = await cli(['show', id, '--db', db]);
    const timing = /Clashes mapped on [^.]*\./.exec(flat(run.stdout))?.[0];
    expect(timing).toBeDefined();
    // Mapped on the opening answers; drawn at the end, after the rounds and the targeted exchange.
    expect(timing).toContain('round-0 answers');
    expect(timing).toContain('after 2 critique rounds and the targeted exchange on T1');
    expect(flat(show.stdout)).toContain(timing);
    expect(show.stdout).not.toMatch(/targeted round|Map version/);
    for (const view of [run.stdout, show.stdout]) expect(flat(view)).toMatch(/Confidence per agent \(the map model's rating of each agent's case, not the agent's own\):?\**:? pragmatist 0\.72/);
  });

  it("shows the devil's advocate's own case on the card, with no repair behind it", async () => {
    const run = await cli(['demo', '--preset', 'devils-advocate', '--db', join(dir, 'advocate.db'), '--token-ms', '0']);
    expect(run.code).toBe(0);
    expect(run.stderr).not.toContain('unusable JSON');
    expect(run.stdout).toMatch(/QUALITY\n {2}\d+ results rated, mean score 100: \d+ pass, 0 warn/);
    const section = flat(run.stdout.slice(run.stdout.indexOf("DEVIL'S ADVOCATE"), run.stdout.indexOf('TENSION MAP')));
    const raised = [...section.matchAll(/- round (\d+), (\S+), against "([^"]*)": (.*?) \((nobody moved after it|no round followed to show an effect|[^)]* moved after it)\)/g)];
    expect(raised.map((m) => Number(m[1]))).toEqual([1, 2]);
    for (const [, , , majority, argued] of raised) expect(argued!.startsWith(majority!.replace(/\.$/, ''))).toBe(false);
  });

  it('writes the review under a token budget from the reviews that ran, and says on the card why no map was drawn', async () => {
    const db = join(dir, 'budget.db');
    const run = await cli(['demo', 'Review this change', '--preset', 'code-review', '--attach', packagePath('README.md'), '--token-budget', '5000', '--db', db, '--token-ms', '0', '--json']);
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout) as {
      id: string;
      protocol: { steps: { kind: string; agentId?: string; status?: string }[]; report: { blocking: { raisedBy: string[] }[]; other: { raisedBy: string[] }[] } };
    };
    const answered = doc.protocol.steps.filter((s) => s.kind === 'observations' && s.status === 'ok').map((s) => s.agentId);
    const skipped = doc.protocol.steps.filter((s) => s.kind === 'observations' && s.status === 'skipped').map((s) => s.agentId);
    expect(skipped.length).toBeGreaterThan(0);
    const findings = [...doc.protocol.report.blocking, ...doc.protocol.report.other];
    expect(findings.length).toBeGreaterThan(0);
    for (const f of findings) for (const who of f.raisedBy) expect(answered).toContain(who);
    // The card as replay prints it: the filter itself is credited with nothing.
    const replay = flat((await cli(['replay', doc.id, '--db', db])).stdout);
    expect(replay).toContain('raised by correctness');
    expect(replay).not.toContain('raised by editor');
    expect(replay).toContain('TENSION MAP FAILED');
    expect(replay).toMatch(/Not drawn: a tension map compares the claims of two or more agents, and only correctness gave a usable answer, so no claims were asked for \(operations gave no usable answer/);
    // One usable review has nothing to clash with: no claims call was spent on it.
    const store = openStore(db, { readonly: true });
    expect(store.getDebate(doc.id).calls.filter((c) => c.stage === 'claims')).toEqual([]);
    store.close();
  });
});
