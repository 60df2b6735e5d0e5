import { describe, expect, it } from 'vitest';
import type { DebateEvent } from '../../src/engine/events.js';
import { materialLiveView } from '../../src/render/material.js';
import { painter, plainStyle } from '../../src/render/style.js';

const started = { type: 'debate.started', preset: { protocol: { tokenBudget: 10_000 } }, attachments: [] } as unknown as DebateEvent;
const finished = (used: number, spent: number) => ({ type: 'call.finished', call: { budget: { limit: 10_000, priority: 'normal', estimate: 900, actual: 700, used, spent } } }) as unknown as DebateEvent;
const round = (n: number) => ({ type: 'round.started', round: n, at: 0 }) as unknown as DebateEvent;

describe('the budget line on stderr', () => {
  it('says how much of the figure is estimates for calls still in flight, so a lower figure later is explained', () => {
    const view = materialLiveView(painter(plainStyle));
    view(started);
    view(finished(3_098, 1_500));
    const first = view(round(1)).join('\n');
    expect(first).toContain('budget: 3,098 of 10,000 tokens counted (31%)');
    expect(first).toContain('1,500 spent by calls that ended, 1,598 estimated for calls still in flight');
    view(finished(2_025, 2_025));
    const second = view(round(2)).join('\n');
    expect(second).toBe('  budget: 2,025 of 10,000 tokens counted (20%)');
  });
});
