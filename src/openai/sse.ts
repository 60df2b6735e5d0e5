/**
 * The `data:` payloads of a Server-Sent Events body, one per event, in order, split as its bytes
 * arrive however the network cut them. Lines end in LF or CRLF; comments (`:`), `event:`, `id:` and
 * `retry:` lines carry nothing a chat reply needs.
 */
export class ServerSentData {
  readonly #decoder = new TextDecoder();
  #rest = '';
  #data: string[] = [];

  constructor(private readonly onData: (data: string) => void) {}

  push(chunk: Uint8Array): void {
    this.#rest = this.#take(this.#rest + this.#decoder.decode(chunk, { stream: true }));
  }

  /** The body ended: a last line without its newline, and an event without its blank line, still count. */
  end(): void {
    const rest = this.#take(this.#rest + this.#decoder.decode());
    this.#rest = '';
    if (rest !== '') this.#line(rest.endsWith('\r') ? rest.slice(0, -1) : rest);
    this.#line('');
  }

  /** Hands on every whole line of `text`; returns what follows the last newline. */
  #take(text: string): string {
    let start = 0;
    for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n', start)) {
      this.#line(text.charCodeAt(end - 1) === 13 && end > start ? text.slice(start, end - 1) : text.slice(start, end));
      start = end + 1;
    }
    return text.slice(start);
  }

  #line(line: string): void {
    if (line === '') {
      if (this.#data.length > 0) {
        const data = this.#data.join('\n');
        this.#data = [];
        this.onData(data);
      }
    } else if (line.startsWith('data:')) {
      this.#data.push(line.slice(line[5] === ' ' ? 6 : 5));
    }
  }
}
