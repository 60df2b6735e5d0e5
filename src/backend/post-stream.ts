import type { Dispatcher } from 'undici';

/** A response whose status is not 2xx, read whole: what a gateway needs to name the failure. */
export interface RefusedResponse {
  status: number;
  contentType: string;
  text: string;
  /** The `Retry-After` header, as sent (seconds, or an HTTP date); null without one. */
  retryAfter?: string | null;
}

export interface StreamedPost {
  url: URL;
  headers: Record<string, string>;
  body: string;
  /** Aborts the request; the promise then rejects with the signal's reason at once. */
  signal: AbortSignal;
  /** Each chunk of a 2xx body, as it arrives. What it throws aborts the request and rejects the promise. */
  onChunk: (chunk: Uint8Array) => void;
  /** The error a non-2xx response rejects with. */
  refused: (response: RefusedResponse) => Error;
}

/**
 * POSTs a request and hands the body of its response to `onChunk` from undici's own callbacks:
 * no response stream and no promise per chunk, which for a streamed reply of a few hundred tokens
 * is most of the client's work. Resolves when the body ends, which also returns the connection to
 * the dispatcher's pool. Rejects with the transport's error (unreachable, reset), the signal's
 * reason, what `onChunk` threw, or `refused(...)` for a status that is not 2xx.
 */
export function postStream(dispatcher: Dispatcher, post: StreamedPost): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const { signal } = post;
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    let controller: Dispatcher.DispatchController | null = null;
    let settled = false;
    let refusal: { status: number; contentType: string; retryAfter: string | null; chunks: Buffer[] } | null = null;
    const settle = (error?: unknown): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (error === undefined) resolve();
      else reject(error);
    };
    const stop = (reason: unknown): void => {
      settle(reason);
      // Before the request started, undici has no controller yet: onRequestStart aborts it then.
      controller?.abort(reason instanceof Error ? reason : new Error(String(reason)));
    };
    const onAbort = (): void => stop(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (settled) c.abort(new Error('The request was stopped before it started.'));
      },
      onResponseStart(_c, statusCode, headers) {
        // 1xx answers come before the real one.
        if (statusCode < 200) return;
        if (statusCode > 299) {
          const retryAfter = headers['retry-after'];
          refusal = { status: statusCode, contentType: String(headers['content-type'] ?? ''), retryAfter: retryAfter === undefined ? null : String(retryAfter), chunks: [] };
        }
      },
      onResponseData(_c, chunk) {
        if (settled) return;
        if (refusal) {
          refusal.chunks.push(chunk);
          return;
        }
        try {
          post.onChunk(chunk);
        } catch (err) {
          stop(err);
        }
      },
      onResponseEnd() {
        if (refusal) settle(post.refused({ status: refusal.status, contentType: refusal.contentType, retryAfter: refusal.retryAfter, text: Buffer.concat(refusal.chunks).toString('utf8') }));
        else settle();
      },
      onResponseError(_c, err) {
        settle(err);
      },
    };
    try {
      dispatcher.dispatch({ origin: post.url.origin, path: `${post.url.pathname}${post.url.search}`, method: 'POST', headers: post.headers, body: post.body }, handler);
    } catch (err) {
      settle(err);
    }
  });
}
