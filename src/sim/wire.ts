import type { ServerResponse } from 'node:http';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * How a generation call's reply goes out: Ollama's NDJSON (`/api/chat`), or the OpenAI-compatible
 * Server-Sent Events (`/v1/chat/completions`, sim/openai.ts), which translate the same chunks.
 */
export interface Wire {
  /** A whole reply at once (not streamed, or a load request). */
  json(status: number, value: Record<string, unknown>): void;
  /** One streamed chunk in Ollama's shape: `{message, done: false}`, the final `{done: true, …metrics}`, or `{error}`. */
  line(value: Record<string, unknown>): Promise<void>;
  end(): void;
  /** The stream stops with no final chunk, as a crashed runner's does. */
  cut(): void;
  /** The connection closes where the reply stands: no final chunk, the body unfinished. */
  drop(): void;
}

export function ollamaWire(res: ServerResponse): Wire {
  return {
    json: (status, value) => sendJson(res, status, value),
    line: (value) => writeLine(res, value),
    end: () => res.end(),
    cut: () => {
      if (!res.headersSent) res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
      res.end();
    },
    drop: () => dropConnection(res),
  };
}

/** Closes the connection under a response with its body unfinished: what the client sees when the server process dies or a proxy drops it. */
export function dropConnection(res: ServerResponse): void {
  if (!res.headersSent) res.flushHeaders();
  // Ended, not reset, once the response's corked writes reach the socket: what was written arrives, then the connection closes mid-body.
  const socket = res.socket;
  setImmediate(() => socket?.end());
}

export function writeLine(res: ServerResponse, value: unknown): Promise<void> {
  if (res.destroyed) return Promise.resolve();
  // Headers go out with the first chunk, never earlier, as in Ollama.
  if (!res.headersSent) res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
  return writeText(res, `${JSON.stringify(value)}\n`);
}

/** Writes and waits for the socket to drain when it is full, or for it to close. */
export function writeText(res: ServerResponse, text: string): Promise<void> {
  if (res.destroyed) return Promise.resolve();
  if (res.write(text)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  if (res.destroyed) return;
  const body = JSON.stringify(value);
  res.writeHead(status, { 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

