import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { formatNumber } from '../plural.js';

/** The largest JSON-RPC message read: a question and its constraints fit many times over. */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

/**
 * MCP over stdio, one JSON-RPC message per line, that survives its client's mistakes. A line over
 * `maxBytes` is skipped without being held in memory, a line that is not JSON or not a JSON-RPC
 * message is answered with the JSON-RPC error for it (id null when none can be read), and each
 * is logged on stderr; the server then reads the next line. (The SDK's own stdio transport
 * closes itself on an oversized line and says nothing.)
 */
export class LineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  #chunks: Buffer[] = [];
  #size = 0;
  /** Bytes of an oversized line skipped so far; -1 when not skipping. */
  #skipped = -1;
  #closed = false;

  constructor(
    private readonly stdin: Readable,
    private readonly stdout: Writable,
    private readonly log: (line: string) => void,
    private readonly maxBytes = MAX_MESSAGE_BYTES,
  ) {}

  readonly #onData = (chunk: Buffer | string): void => {
    let data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (;;) {
      const nl = data.indexOf(0x0a);
      const part = nl === -1 ? data : data.subarray(0, nl);
      if (this.#skipped >= 0) this.#skipped += part.length;
      else if (this.#size + part.length > this.maxBytes) {
        this.#skipped = this.#size + part.length;
        this.#chunks = [];
        this.#size = 0;
      } else {
        this.#chunks.push(part);
        this.#size += part.length;
      }
      if (nl === -1) return;
      this.#endLine();
      data = data.subarray(nl + 1);
    }
  };

  readonly #onError = (err: Error): void => this.onerror?.(err);

  #endLine(): void {
    if (this.#skipped >= 0) {
      const size = this.#skipped;
      this.#skipped = -1;
      this.#refuse(null, INVALID_REQUEST, `Message of ${formatNumber(size)} bytes or more refused: the limit is ${formatNumber(this.maxBytes)} bytes.`);
      return;
    }
    const line = Buffer.concat(this.#chunks, this.#size).toString('utf8').replace(/\r$/, '');
    this.#chunks = [];
    this.#size = 0;
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      this.#refuse(null, PARSE_ERROR, `Message is not JSON (${(err as Error).message}).`);
      return;
    }
    const checked = JSONRPCMessageSchema.safeParse(value);
    if (!checked.success) {
      const id = (value as { id?: unknown } | null)?.id;
      this.#refuse(typeof id === 'string' || typeof id === 'number' ? id : null, INVALID_REQUEST, 'Message is not a JSON-RPC 2.0 request, notification or response.');
      return;
    }
    try {
      this.onmessage?.(checked.data);
    } catch (err) {
      this.onerror?.(err as Error);
    }
  }

  #refuse(id: string | number | null, code: number, message: string): void {
    this.log(`refused a message from the client: ${message} The server goes on serving.`);
    this.#write({ jsonrpc: '2.0', id, error: { code, message } });
  }

  #write(value: unknown): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return new Promise((resolve) => {
      if (this.stdout.write(`${JSON.stringify(value)}\n`)) resolve();
      else this.stdout.once('drain', resolve);
    });
  }

  async start(): Promise<void> {
    this.stdin.on('data', this.#onData);
    this.stdin.on('error', this.#onError);
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.#write(message);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.stdin.off('data', this.#onData);
    this.stdin.off('error', this.#onError);
    // Stop reading, so standard input no longer holds the process open once the server is closed.
    this.stdin.pause();
    this.#chunks = [];
    this.onclose?.();
  }
}
