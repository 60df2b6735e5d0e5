import { describe, expect, it } from 'vitest';
import type { ProtocolStep } from '../../src/engine/protocol-events.js';
import { wrap } from '../../src/render/card.js';
import { type DelphiResult, type DelphiRound, delphiCardLines, delphiMarkdown, delphiResultText, delphiRoundText, delphiStepLines, spreadText } from '../../src/render/delphi-lines.js';
import { painter, plainStyle } from '../../src/render/style.js';

const paint = painter(plainStyle);
const asStored = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

/** What the rounds wrote before the quartiles were computed without overflow: Infinity and NaN, stored by JSON as null. */
function overflowedSteps(): ProtocolStep[] {
  const summary = { n: 2, median: Infinity, q1: Infinity, q3: Infinity, iqr: Number.NaN };
  const estimates = [
    { agentId: 'lo', estimate: -1.5e308 },
    { agentId: 'hi', estimate: 1.5e308 },
  ];
  return asStored<ProtocolStep[]>([
    { kind: 'delphi', round: 0, numeric: true, estimates, summary, mode: null, spread: Number.NaN, shown: [] },
    { kind: 'delphi', round: 1, numeric: true, estimates, summary, mode: null, spread: Number.NaN, shown: [{ agentId: 'lo', seed: 's', order: ['hi'] }] },
    { kind: 'delphi-result', numeric: true, rounds: 1, summary, mode: null, of: 2, spreads: [Number.NaN, Number.NaN], stopped: '1 revision round held' },
  ]);
}

const roundOf = (steps: ProtocolStep[], i: number) => steps[i] as DelphiRound;
const resultOf = (steps: ProtocolStep[]) => steps.at(-1) as DelphiResult;

describe('the Delphi lines of a record without its figures', () => {
  it('reads the stored summary with null median and quartiles as no summary in every view', () => {
    const steps = overflowedSteps();
    expect(roundOf(steps, 0).summary?.median).toBeNull();
    expect(delphiRoundText(roundOf(steps, 0))).toBe('no summary (2 numbers; the record holds no median or quartiles)');
    expect(spreadText(true, roundOf(steps, 0).spread)).toBe('spread not measured');
    expect(delphiResultText(resultOf(steps))).toContain('no summary');
    const live = [...delphiStepLines(roundOf(steps, 1), paint, (s) => s), ...delphiStepLines(resultOf(steps), paint, (s) => s)].join('\n');
    expect(live).toContain('round 1: no summary');
    expect(live).toContain('Delphi result: no summary');
    const card = delphiCardLines(steps, paint, 100, wrap).join('\n');
    expect(card).toContain('round 0: no summary (2 numbers; the record holds no median or quartiles), spread not measured');
    expect(card).toContain('result: no summary');
    const md = delphiMarkdown(steps).join('\n');
    expect(md).toContain('- Round 1: no summary');
    expect(md).toContain('**Result:** no summary');
    for (const text of [live, card, md]) expect(text).not.toMatch(/null|NaN|Infinity/);
  });

  it('reads a hand-made summary missing its figures, or its count, as no summary', () => {
    const round = { numeric: true, mode: null, summary: { n: 3 } } as unknown as DelphiRound;
    expect(delphiRoundText(round)).toBe('no summary (3 numbers; the record holds no median or quartiles)');
    expect(delphiRoundText({ ...round, summary: { median: 1, q1: 1, q3: 1 } } as unknown as DelphiRound)).toBe('no summary (the record holds no median or quartiles)');
    expect(delphiResultText({ ...resultOf(overflowedSteps()), summary: {} } as unknown as DelphiResult)).toContain('no summary');
  });

  it('still prints a round with no numbers, and one with its figures, as before', () => {
    expect(delphiRoundText({ numeric: true, mode: null, summary: null })).toBe('no numbers');
    expect(delphiRoundText({ numeric: true, mode: null, summary: { n: 3, median: 0.0003, q1: 0.00025, q3: 0.00035, iqr: 0.0001 } })).toBe('median 0.0003 (quartiles 0.00025–0.00035, 3 numbers)');
    expect(spreadText(true, 0.0001)).toBe('IQR 0.0001');
    expect(spreadText(true, null)).toBe('spread not measured');
  });
});
