import type { RefusedResponse } from '../backend/post-stream.js';
import { bodyText } from '../backend/server-text.js';

/**
 * An HTTP error status from Ollama with the server's own message, shaped as ollama-js's
 * ResponseError (`name`, `status_code`), so the gateway names it the same way whichever path met it.
 */
export class ResponseError extends Error {
  override readonly name = 'ResponseError';
  readonly status_code: number;
  /** The response's `Retry-After` header, as sent; null without one. */
  readonly retryAfter: string | null;

  constructor(message: string, status: number, retryAfter: string | null = null) {
    super(message);
    this.status_code = status;
    this.retryAfter = retryAfter;
  }
}

/** The error for a response that is not 2xx: the JSON body's `error`, else the body's text, else the status. */
export function refusedError(response: RefusedResponse): ResponseError {
  let message = `Error ${response.status}`;
  if (response.contentType.includes('application/json')) {
    try {
      const error = (JSON.parse(response.text) as { error?: unknown }).error;
      if (typeof error === 'string' && error !== '') message = error;
    } catch {
      // An unreadable error body leaves the status as the message.
    }
  } else if (response.text.trim() !== '') message = bodyText(response.text, response.contentType);
  return new ResponseError(message, response.status, response.retryAfter ?? null);
}

/** Thrown when the stream ends without its `done` line; the gateway reports it as STREAM_INCOMPLETE. */
export const STREAM_ENDED_EARLY = 'Did not receive done or success response in stream.';

/**
 * Ollama's streamed chat reply, one JSON object per line, split as its bytes arrive however the
 * network cut them, each line handed to `onLine`. A line that is not JSON is skipped, as ollama-js
 * skips it; a line with `error` throws it (the model failed mid-reply).
 */
export class ChatLines {
  readonly #decoder = new TextDecoder();
  #rest = '';

  constructor(private readonly onLine: (line: Record<string, unknown>) => void) {}

  push(chunk: Uint8Array): void {
    this.#rest = this.#take(this.#rest + this.#decoder.decode(chunk, { stream: true }));
  }

  /** The body ended: its last line may lack a newline. */
  end(): void {
    const rest = this.#take(this.#rest + this.#decoder.decode());
    this.#rest = '';
    this.#line(rest);
  }

  /** Hands on every whole line of `text`; returns what follows the last newline. */
  #take(text: string): string {
    let start = 0;
    for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n', start)) {
      this.#line(text.slice(start, end));
      start = end + 1;
    }
    return text.slice(start);
  }

  #line(text: string): void {
    if (text.trim() === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return;
    }
    if (parsed === null || typeof parsed !== 'object') return;
    const record = parsed as Record<string, unknown>;
    if ('error' in record) throw new Error(String(record.error));
    this.onLine(record);
  }
}
