import { describe, expect, it } from 'vitest';
import { ChatLines } from '../../src/ollama/chat-stream.js';

/** Feeds the bytes in the given slices, as the network may cut them, then ends the body. */
function feed(lines: ChatLines, bytes: Uint8Array, cuts: number[]): void {
  let start = 0;
  for (const cut of [...cuts, bytes.length]) {
    lines.push(bytes.subarray(start, cut));
    start = cut;
  }
  lines.end();
}

function linesOf(text: string, cuts: number[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  feed(new ChatLines((line) => out.push(line)), new TextEncoder().encode(text), cuts);
  return out;
}

describe("reading Ollama's streamed chat lines", () => {
  const stream = `${JSON.stringify({ message: { content: 'Grüße ' } })}\n${JSON.stringify({ message: { content: '— 東京' } })}\n${JSON.stringify({ done: true, eval_count: 2 })}`;

  it('gives the same lines however the bytes are cut, a character split across chunks included', () => {
    const whole = linesOf(stream, []);
    expect(whole.map((l) => (l.message as { content?: string } | undefined)?.content ?? l.done)).toEqual(['Grüße ', '— 東京', true]);
    const bytes = new TextEncoder().encode(stream).length;
    // Every single cut point, and cuts after every byte.
    for (let cut = 1; cut < bytes; cut++) expect(linesOf(stream, [cut])).toEqual(whole);
    expect(linesOf(stream, Array.from({ length: bytes - 1 }, (_, i) => i + 1))).toEqual(whole);
  });

  it('reads a last line without its newline, and skips blank lines and lines that are not JSON objects', () => {
    expect(linesOf('\n{"a":1}\n\nnot json\n42\n{"b":2}', [3])).toEqual([{ a: 1 }, { b: 2 }]);
  });

  it('throws the server error of an `error` line, after handing on the lines before it', () => {
    const seen: Record<string, unknown>[] = [];
    const lines = new ChatLines((l) => seen.push(l));
    expect(() => feed(lines, new TextEncoder().encode('{"message":{"content":"one"}}\n{"error":"runner crashed"}\n{"done":true}\n'), [10])).toThrow('runner crashed');
    expect(seen).toEqual([{ message: { content: 'one' } }]);
    // An error line that ends the body without its newline throws too.
    expect(() => feed(new ChatLines(() => undefined), new TextEncoder().encode('{"error":"out of memory"}'), [])).toThrow('out of memory');
  });
});
