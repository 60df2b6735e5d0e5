import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderBenchHtml } from '../../src/bench/html.js';
import { renderBenchMarkdown, renderBenchSummary, renderComparisonMarkdown } from '../../src/bench/markdown.js';
import { buildReport, compareRuns } from '../../src/bench/report.js';
import { loadBenchData } from '../../src/store/bench.js';
import { readRescoreRecords } from '../../src/store/rescore-read.js';
import { runCli } from '../helpers/cli.js';
import { type BenchSetup, setupBench } from './fixture.js';

let bench: BenchSetup | null = null;

afterEach(async () => {
  await bench?.close();
  bench = null;
});

/** `[text](url)` with neither bracket escaped: a link, or with `!` an image. */
const LIVE_LINK = /(?<!\\)\[[^\]]*(?<!\\)\]\(/;

const HOSTILE = 'panel` <img src=x onerror=alert(1)> [click](http://evil.example)';

describe('the Markdown bench report', () => {
  it('keeps names, hosts and the stop reason from files and servers inert: no HTML, no link, no broken code span', async () => {
    bench = await setupBench({ preset: { name: HOSTILE } });
    const runId = await bench.start({ limit: 1 });
    const data = loadBenchData(bench.store, runId);
    const report = buildReport(data, { iterations: 10 });
    report.run.suite = 'suite`<b>x</b>.jsonl';
    report.run.error = 'server said <script>alert(1)</script> ![t](http://tracker.example/p.png)\n# not a heading';
    report.run.presets.push({ ...report.run.presets[0]!, name: `${HOSTILE} 2` });
    const md = renderBenchMarkdown(report);
    // Inside a code span Markdown shows text as written; everywhere else no tag and no link may be left.
    const outsideCode = md.replace(/``.*?``/g, '');
    expect(outsideCode).not.toMatch(/<img|<script|<b>/);
    expect(outsideCode).not.toMatch(LIVE_LINK);
    expect(md).not.toMatch(/^# not a heading/m);
    // A name holding a backtick is fenced by two, so it stays one code span, shown as written.
    expect(md).toContain('- Preset ``panel` <img src=x onerror=alert(1)> [click](http://evil.example)``: protocol debate');
    expect(md).toContain('- Suite ``suite`<b>x</b>.jsonl``: 1 item');
    expect(md).toContain('## Items: panel\\` &lt;img src=x onerror=alert(1)&gt; \\[click](http://evil.example) 2');
    // Intervals are not links and stay as they were.
    expect(md).toMatch(/\| \[\d+\.\d, \d+\.\d\] \|/);

    const compared = renderComparisonMarkdown(compareRuns({ ...data, run: { ...data.run, suite: 'a`<i>b</i>' } }, data, { iterations: 10 }));
    expect(compared).toContain('suite ``a`<i>b</i>``');
    expect(compared.replace(/``.*?``/g, '')).not.toMatch(/<i>/);
    expect(compared.replace(/``.*?``/g, '')).not.toMatch(LIVE_LINK);
  });

  it('writes no terminal control from a preset name: summary, Markdown legends, HTML page and `bench list --json`', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-md-'));
    try {
      const db = join(dir, 'record.db');
      // Sets the terminal's title, clears the screen (C1 CSI), reverses what follows.
      bench = await setupBench({ dbPath: db, preset: { name: 'panel\u001b]0;pwned\u0007\u009b2J\u202eevil' } });
      const runId = await bench.start({ limit: 1 });
      const data = loadBenchData(bench.store, runId);
      const report = buildReport(data, { iterations: 10, records: readRescoreRecords(bench.store, data.trials.map((t) => t.debateId!)) });
      const raw = /[\u0007\u001b\u009b\u202e]/;
      for (const text of [renderBenchSummary(report), renderBenchMarkdown(report), renderBenchHtml(report)]) {
        // Whole escape sequences go; the direction control is written out.
        expect(text).toMatch(/panel(<|&lt;)U\+202E(>|&gt;)evil/);
        expect(text).not.toMatch(raw);
      }
      const listed = await runCli(['bench', 'list', '--json', '--db', db], dir);
      expect(listed.stdout).not.toMatch(raw);
      expect((JSON.parse(listed.stdout) as { presets: string[] }[])[0]!.presets).toEqual(['panel\u001b]0;pwned\u0007\u009b2J\u202eevil']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
