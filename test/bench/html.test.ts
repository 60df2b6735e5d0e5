import { describe, expect, it } from 'vitest';
import { accuracyChart, escapeHtml, roundsChart } from '../../src/bench/html.js';
import type { ConditionStats } from '../../src/bench/report.js';

const stat = (over: Partial<ConditionStats>): ConditionStats => ({
  preset: 'p',
  condition: 'sc',
  variant: '',
  label: 'self-consistency@k',
  available: true,
  note: null,
  n: 4,
  correct: 2,
  accuracy: 0.5,
  ciLow: 0.25,
  ciHigh: 0.75,
  callsPerItem: 6,
  tokensPerItem: 600,
  ...over,
});

describe('bench report charts', () => {
  it('draws each bar to its accuracy and each whisker to its interval on a 0–100% axis', () => {
    const svg = accuracyChart([stat({})]);
    // The plot runs from x=340 (0%) to x=750 (100%).
    expect(svg).toContain('<rect x="340" y="60" width="205" height="16"');
    expect(svg).toContain('<line x1="442.5" x2="647.5" y1="68" y2="68" class="whisker"/>');
    expect(svg).toContain('>50%</text>');
  });

  it('shows an unavailable condition as text with its reason instead of a bar', () => {
    const svg = accuracyChart([stat({ condition: 'cluster-vote', label: 'debate + cluster vote', available: false, accuracy: null, ciLow: null, ciHigh: null, note: 'the preset has no voting block' })]);
    expect(svg).not.toContain('<rect');
    expect(svg).toContain('unavailable: the preset has no voting block');
  });

  it('escapes names that come from presets and suites', () => {
    const svg = accuracyChart([stat({ preset: '<b>&"x"' })]);
    expect(svg).toContain('&lt;b&gt;&amp;&quot;x&quot;');
    expect(svg).not.toContain('<b>');
    expect(escapeHtml("it's")).toBe('it&#39;s');
  });

  it('draws accuracy by round as a solid majority line and a dashed mean-agent line per preset', () => {
    const svg = roundsChart([
      { preset: 'p', round: 0, debatesReaching: 2, n: 2, majority: 0.5, agentMean: 0.25 },
      { preset: 'p', round: 1, debatesReaching: 1, n: 2, majority: 1, agentMean: 0.75 },
    ]);
    // x: 56 (round 0) to 790 (round 1); y: 276 (0%) to 20 (100%).
    expect(svg).toContain('<polyline points="56,148 790,20" fill="none" stroke="#3b75af" stroke-width="2"/>');
    expect(svg).toContain('<polyline points="56,212 790,84" fill="none" stroke="#3b75af" stroke-width="2" stroke-dasharray="6 4"/>');
  });
});
