import { describe, expect, it } from 'vitest';
import { eta, formatDuration, progressView } from '../../src/bench/progress.js';
import type { BenchProgress } from '../../src/bench/runner.js';
import { detectStyle } from '../../src/render/style.js';

function sink(isTTY: boolean) {
  const out = { text: '', isTTY, columns: 120, write: (s: string) => ((out.text += s), true) };
  return out as unknown as NodeJS.WriteStream & { text: string };
}

const step = (done: number, total: number, right = true, unparsed = 0): BenchProgress => ({
  done,
  total,
  resumedFrom: 0,
  itemId: `arith-${String(done - 1).padStart(3, '0')}`,
  preset: 'small',
  correct: { 'debate-synth': right },
  answers: 10,
  unparsed,
});

describe('bench progress', () => {
  it('estimates the time left from the pace of this session only', () => {
    expect(eta({ done: 5, total: 10, resumedFrom: 0 }, 50_000)).toBe(50_000);
    // Resumed at 4 of 10: 1 item in 10 s leaves 5 items, 50 s.
    expect(eta({ done: 5, total: 10, resumedFrom: 4 }, 10_000)).toBe(50_000);
    expect(formatDuration(75_000)).toBe('1m15s');
    expect(formatDuration(3_720_000)).toBe('1h02m');
  });

  it('says loudly, once and then on every line, when most answers cannot be read', () => {
    const out = sink(false);
    let t = 0;
    const view = progressView(out, detectStyle(out, {}), { total: 4, resumedFrom: 0, now: () => t });
    view.update(step(1, 4, true, 2));
    expect(out.text).not.toContain('unreadable');
    view.update(step(2, 4, false, 9));
    view.update(step(3, 4, false, 9));
    view.close();
    expect(out.text.match(/warning: 11 of 20 answers so far could not be read/g)).toHaveLength(1);
    expect(out.text).toContain('· ⚠ 55% of answers unreadable');
    expect(out.text).toContain('· ⚠ 67% of answers unreadable');
  });

  it('draws the bar before the first item ends and moves its elapsed time while items run', () => {
    const out = sink(true);
    let t = 0;
    const view = progressView(out, detectStyle(out, {}), { total: 4, resumedFrom: 0, now: () => t });
    view.tick();
    expect(out.text).toContain('0/4 (0%) · elapsed 0s · ETA ? · first items running');
    t = 51_000;
    view.tick();
    expect(out.text).toContain('0/4 (0%) · elapsed 51s');
    view.update(step(1, 4));
    t = 75_000;
    view.tick();
    expect(out.text.split('\r').at(-1)).toContain('1/4 (25%) · elapsed 1m15s');
    view.close();
  });

  it('writes a plain line while items run only when 30 seconds have passed without one', () => {
    const out = sink(false);
    let t = 0;
    const view = progressView(out, detectStyle(out, {}), { total: 4, resumedFrom: 0, now: () => t });
    view.tick();
    t = 10_000;
    view.tick();
    expect(out.text).toBe('');
    t = 31_000;
    view.tick();
    expect(out.text).toBe('bench: 0/4 (0%) · elapsed 31s · ETA ? · first items running\n');
  });

  it('writes a plain line every tenth of the way when stderr is not a terminal', () => {
    const out = sink(false);
    let t = 0;
    const view = progressView(out, detectStyle(out, {}), { total: 20, resumedFrom: 0, now: () => t });
    for (let done = 1; done <= 20; done++) {
      t += 1000;
      view.update(step(done, 20, done % 2 === 0));
    }
    view.close();
    const lines = out.text.trim().split('\n');
    expect(lines).toHaveLength(10);
    expect(lines[0]).toBe('bench: 2/20 (10%) · elapsed 2s · ETA 18s · debate right 1/2 · last arith-001 [small] ✓');
    expect(lines.at(-1)).toContain('20/20 (100%)');
    expect(out.text).not.toContain('\r');
  });

  it('redraws one bar in place on a terminal', () => {
    const out = sink(true);
    const view = progressView(out, detectStyle(out, {}), { total: 4, resumedFrom: 0, now: () => 0 });
    view.update(step(1, 4));
    view.update(step(2, 4, false));
    view.close();
    expect(out.text.split('\r\u001b[2K')).toHaveLength(3);
    expect(out.text).toContain('█');
    expect(out.text).toContain('2/4 (50%)');
    expect(out.text.endsWith('\n')).toBe(true);
  });

  it('puts a line the user should read (a host that left the pool) on its own line above the bar, then draws the bar again', () => {
    const out = sink(true);
    const view = progressView(out, detectStyle(out, {}), { total: 4, resumedFrom: 0, now: () => 0 });
    view.update(step(1, 4));
    view.note('Host http://ws-2:11434 left the pool (it refused the connection): calls of `m` go to http://ws-1:11434; it is tried again every 30 s.');
    view.close();
    const lines = out.text.split('\n');
    expect(lines[1]).toBe('bench: warning: Host http://ws-2:11434 left the pool (it refused the connection): calls of `m` go to http://ws-1:11434; it is tried again every 30 s.');
    expect(lines[2]).toContain('1/4 (25%)');
  });

  it.each([{ NO_COLOR: '1' }, { CI: 'true' }])('prints plain lines without colour on a terminal under %o', (env) => {
    const out = sink(true);
    const view = progressView(out, detectStyle(out, env), { total: 4, resumedFrom: 0, now: () => 0 });
    view.update(step(4, 4));
    view.close();
    expect(out.text).not.toMatch(/[\u001b\r]/);
    expect(out.text).toContain('bench: 4/4 (100%)');
  });

  it('colours the bar on a terminal that allows colour', () => {
    const out = sink(true);
    const view = progressView(out, detectStyle(out, {}), { total: 2, resumedFrom: 0, now: () => 0 });
    view.update(step(1, 2));
    expect(out.text).toMatch(/\u001b\[36m█/);
  });
});
