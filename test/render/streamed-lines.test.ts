import { describe, expect, it } from 'vitest';
import { StreamedReply, streamedLines } from '../../src/render/streamed-lines.js';
import { painter } from '../../src/render/style.js';
import { visibleWidth } from '../../src/render/wrap.js';

const paint = painter({ color: true, live: true, columns: 60 });

describe('streamedLines', () => {
  it("shows the answer's last words in two rows that fit the terminal, and leaves escape sequences out", () => {
    const reply = new StreamedReply();
    const words = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
    reply.add(`{"position": "\u001b]0;owned\u0007\u001b[2J${words}`);
    const rows = streamedLines(reply, 'opening', 60, paint, false);
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(visibleWidth(row)).toBeLessThanOrEqual(60);
    expect(rows.join('')).not.toMatch(/\u001b|\u0007|owned/);
    expect(rows[1]).toMatch(/word59$/);
    expect(rows[0]).toContain('…');
  });

  it('heads the synthesis with RECOMMENDATION and gives it four rows', () => {
    const reply = new StreamedReply();
    reply.add(`{"recommendation": "${'Keep SQLite for now and revisit. '.repeat(20)}`);
    const rows = streamedLines(reply, 'synthesis', 60, paint, false);
    expect(rows[0]).toContain('RECOMMENDATION');
    expect(rows).toHaveLength(5);
  });

  it("shows a thinking model's last line of thinking, dimmed, only when asked", () => {
    const reply = new StreamedReply();
    reply.add('', 'First I weigh the load.\nThen the ops cost');
    expect(reply.thinking(12)).toBe(true);
    expect(streamedLines(reply, 'opening', 60, paint, false)).toEqual([]);
    expect(streamedLines(reply, 'opening', 60, paint, true)).toEqual(['      \u001b[2mThen the ops cost\u001b[22m']);
  });
});
