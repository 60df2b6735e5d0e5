import { describe, expect, it } from 'vitest';
import { readChatLines } from '../../src/ollama/chat-stream.js';

/** A body that arrives in the given byte slices, as the network may cut it. */
async function* slices(bytes: Uint8Array, cuts: number[]): AsyncIterable<Uint8Array> {
  let start = 0;
  for (const cut of [...cuts, bytes.length]) {
    yield bytes.subarray(start, cut);
    start = cut;
  }
}

async function linesOf(text: string, cuts: number[]): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  await readChatLines(slices(new TextEncoder().encode(text), cuts), (line) => out.push(line));
  return out;
}

describe("reading Ollama's streamed chat lines", () => {
  const stream = `${JSON.stringify({ message: { content: 'Grüße ' } })}\n${JSON.stringify({ message: { content: '— 東京' } })}\n${JSON.stringify({ done: true, eval_count: 2 })}`;

  it('gives the same lines however the bytes are cut, a character split across chunks included', async () => {
    const whole = await linesOf(stream, []);
    expect(whole.map((l) => (l.message as { content?: string } | undefined)?.content ?? l.done)).toEqual(['Grüße ', '— 東京', true]);
    const bytes = new TextEncoder().encode(stream).length;
    // Every single cut point, and cuts after every byte.
    for (let cut = 1; cut < bytes; cut++) expect(await linesOf(stream, [cut])).toEqual(whole);
    expect(await linesOf(stream, Array.from({ length: bytes - 1 }, (_, i) => i + 1))).toEqual(whole);
  });

  it('reads a last line without its newline, and skips blank lines and lines that are not JSON objects', async () => {
    expect(await linesOf('\n{"a":1}\n\nnot json\n42\n{"b":2}', [3])).toEqual([{ a: 1 }, { b: 2 }]);
  });

  it('throws the server error of an `error` line, after handing on the lines before it', async () => {
    const seen: Record<string, unknown>[] = [];
    const body = slices(new TextEncoder().encode('{"message":{"content":"one"}}\n{"error":"runner crashed"}\n{"done":true}\n'), [10]);
    await expect(readChatLines(body, (l) => seen.push(l))).rejects.toThrow('runner crashed');
    expect(seen).toEqual([{ message: { content: 'one' } }]);
  });
});
