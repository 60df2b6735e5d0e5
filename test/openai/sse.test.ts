import { describe, expect, it } from 'vitest';
import { ServerSentData } from '../../src/openai/sse.js';

/** The events of `text` fed in the given byte slices, as the network may cut them. */
function eventsOf(text: string, cuts: number[]): string[] {
  const out: string[] = [];
  const sse = new ServerSentData((data) => out.push(data));
  const bytes = new TextEncoder().encode(text);
  let start = 0;
  for (const cut of [...cuts, bytes.length]) {
    sse.push(bytes.subarray(start, cut));
    start = cut;
  }
  sse.end();
  return out;
}

describe('Server-Sent Events read as they arrive', () => {
  const stream = 'data: {"a":"Grüße"}\r\n\r\n: a comment\nevent: message\nid: 7\ndata: line one\ndata:line two\n\ndata: [DONE]\n\n';

  it('gives each event\'s data, lines joined, whatever the cuts and line endings', () => {
    const whole = eventsOf(stream, []);
    expect(whole).toEqual(['{"a":"Grüße"}', 'line one\nline two', '[DONE]']);
    const bytes = new TextEncoder().encode(stream).length;
    for (let cut = 1; cut < bytes; cut++) expect(eventsOf(stream, [cut])).toEqual(whole);
    expect(eventsOf(stream, Array.from({ length: bytes - 1 }, (_, i) => i + 1))).toEqual(whole);
  });

  it('keeps an event that ends the body without its blank line or its newline', () => {
    expect(eventsOf('data: one\n\ndata: two', [])).toEqual(['one', 'two']);
    expect(eventsOf('data: one\r\n\r\ndata: two\r', [])).toEqual(['one', 'two']);
  });

  it('stops at what the handler throws, after the events before it', () => {
    const seen: string[] = [];
    const sse = new ServerSentData((data) => {
      if (data === 'bad') throw new Error('not JSON');
      seen.push(data);
    });
    expect(() => sse.push(new TextEncoder().encode('data: ok\n\ndata: bad\n\ndata: later\n\n'))).toThrow('not JSON');
    expect(seen).toEqual(['ok']);
  });
});
