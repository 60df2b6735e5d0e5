import { afterEach, describe, expect, it, vi } from 'vitest';
import { type StreamedCall, StreamTracker } from '../../src/events/stream-text.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('StreamTracker', () => {
  it('fires a call at most once per interval and sends its last change when the interval ends', () => {
    vi.useFakeTimers();
    let clock = 1000;
    const fired: StreamedCall[] = [];
    const t = new StreamTracker((c) => fired.push(c), { now: () => clock, intervalMs: 100 });
    t.started('opening', 0, 'a');
    t.progress('opening', 0, 'a', 1, '{"position": "Stay');
    expect(fired.map((c) => c.text)).toEqual(['Stay']);
    for (const [ms, word] of [[30, ' on'], [60, ' SQLite'], [90, ' now']] as const) {
      clock = 1000 + ms;
      t.progress('opening', 0, 'a', 2, word);
    }
    expect(fired).toHaveLength(1);
    clock = 1100;
    vi.advanceTimersByTime(100);
    expect(fired.map((c) => c.text)).toEqual(['Stay', 'Stay on SQLite now']);
    expect(fired[1]).toMatchObject({ field: 'position', tokens: 2, thinking: false });
  });

  it('says a call is thinking while tokens come with no answer text', () => {
    const fired: StreamedCall[] = [];
    const t = new StreamTracker((c) => fired.push(c), { now: () => 0 });
    t.started('critique', 1, 'b');
    t.progress('critique', 1, 'b', 5, '');
    expect(fired[0]).toMatchObject({ thinking: true, tokens: 5, field: null, text: '' });
  });

  it('sends nothing for a call after it finished', () => {
    vi.useFakeTimers();
    let clock = 0;
    const fired: StreamedCall[] = [];
    const t = new StreamTracker((c) => fired.push(c), { now: () => clock, intervalMs: 100 });
    t.started('opening', 0, 'a');
    t.progress('opening', 0, 'a', 1, '{"position": "A');
    clock = 10;
    t.progress('opening', 0, 'a', 2, 'B');
    t.finished('opening', 0, 'a');
    vi.advanceTimersByTime(500);
    expect(fired.map((c) => c.text)).toEqual(['A']);
    expect(t.current()).toEqual([]);
  });

  it('shows no text when two calls stream under one name at once, as their tokens interleave', () => {
    const fired: StreamedCall[] = [];
    const t = new StreamTracker((c) => fired.push(c), { now: () => 0 });
    t.started('verdict', 1, 'judge');
    t.started('verdict', 1, 'judge');
    t.progress('verdict', 1, 'judge', 1, '{"rationale": "x');
    expect(fired[0]).toMatchObject({ text: '', field: null });
  });
});
