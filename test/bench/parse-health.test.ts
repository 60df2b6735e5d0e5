import { describe, expect, it } from 'vitest';
import { renderBenchSummary } from '../../src/bench/markdown.js';
import { type BenchReport, parseHealthOf } from '../../src/bench/report.js';
import { runSummaryLines } from '../../src/bench/tables.js';

const row = (answers: number, unparsed: number, errors = 0) => ({ model: 'm:1b', stage: 'single', answers, unparsed, errors, rate: null });

describe('parse health of a bench run', () => {
  it('warns when most answers that came back could not be read, leaving outright call failures out', () => {
    expect(parseHealthOf([row(10, 5)]).warning).toBeNull();
    const bad = parseHealthOf([row(10, 5, 2), row(10, 4)]);
    expect(bad).toMatchObject({ answers: 18, unparsed: 9, warning: null });
    const worse = parseHealthOf([row(10, 8), row(10, 3)]);
    expect(worse.warning).toMatch(/^11 of 20 answers \(55%\) could not be read/);
  });

  it('puts the warning at the top of the report and under the summary table', () => {
    const report = {
      run: { id: 'b1', suite: 'arithmetic', items: 2, suiteHash: 'x'.repeat(64), status: 'completed', trialsDone: 2, trialsTotal: 2, error: null, host: 'h', engineVersion: 'v', createdAt: 't', finishedAt: null, presets: [], meanK: {} },
      conditions: [],
      parseHealth: parseHealthOf([row(10, 9)]),
    } as unknown as BenchReport;
    expect(renderBenchSummary(report)).toContain('⚠ Warning: 9 of 10 answers (90%) could not be read');
    // The Markdown and HTML reports open with these lines.
    expect(runSummaryLines(report)[0]).toMatch(/^\*\*⚠ Warning: 9 of 10 answers \(90%\) could not be read/);
  });
});
