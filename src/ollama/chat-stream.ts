import type { Dispatcher } from 'undici';

/**
 * An HTTP error status from Ollama with the server's own message, shaped as ollama-js's
 * ResponseError (`name`, `status_code`), so the gateway names it the same way whichever path met it.
 */
export class ResponseError extends Error {
  override readonly name = 'ResponseError';
  readonly status_code: number;

  constructor(message: string, status: number) {
    super(message);
    this.status_code = status;
  }
}

/** The error for a response that is not 2xx: the JSON body's `error`, else the body's text, else the status. */
export async function responseError(res: Dispatcher.ResponseData): Promise<ResponseError> {
  let message = `Error ${res.statusCode}`;
  try {
    const text = await res.body.text();
    const type = String(res.headers['content-type'] ?? '');
    if (type.includes('application/json')) {
      const error = (JSON.parse(text) as { error?: unknown }).error;
      if (typeof error === 'string' && error !== '') message = error;
    } else if (text !== '') message = text;
  } catch {
    // An unreadable error body leaves the status as the message.
  }
  return new ResponseError(message, res.statusCode);
}

/** Thrown when the stream ends without its `done` line; the gateway reports it as STREAM_INCOMPLETE. */
export const STREAM_ENDED_EARLY = 'Did not receive done or success response in stream.';

/**
 * Reads Ollama's streamed chat reply, one JSON object per line, and hands each to `onLine` as it
 * arrives: no promise per token, only one per network chunk. A line that is not JSON is skipped,
 * as ollama-js skips it; a line with `error` throws it (the model failed mid-reply). The body is
 * read to its end even after the `done` line, so the connection goes back to the pool.
 */
export async function readChatLines(body: AsyncIterable<Uint8Array>, onLine: (line: Record<string, unknown>) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  const take = (text: string, last: boolean): string => {
    let start = 0;
    for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n', start)) {
      line(text.slice(start, end));
      start = end + 1;
    }
    const rest = text.slice(start);
    if (last) {
      line(rest);
      return '';
    }
    return rest;
  };
  const line = (text: string): void => {
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
    onLine(record);
  };
  for await (const chunk of body) buffer = take(buffer + decoder.decode(chunk, { stream: true }), false);
  take(buffer + decoder.decode(), true);
}
