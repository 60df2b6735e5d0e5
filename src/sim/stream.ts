import { performance } from 'node:perf_hooks';

/** The pieces of a streamed reply: chunks, timestamps as Go writes them, waits that stop on a disconnect, thinking text. */

/**
 * Splits content into token-like pieces whose concatenation is exactly the
 * content: each word with its leading whitespace, long runs cut into six
 * characters at a time (so compact JSON still streams in several chunks).
 */
export function splitIntoChunks(content: string): string[] {
  const out: string[] = [];
  for (const piece of content.match(/\s*\S+|\s+$/g) ?? []) {
    const chars = Array.from(piece);
    if (chars.length <= 10) {
      out.push(piece);
      continue;
    }
    for (let i = 0; i < chars.length; i += 6) out.push(chars.slice(i, i + 6).join(''));
  }
  return out;
}

export function contextTokens(count: number): number[] {
  return Array.from({ length: count }, (_, i) => ((i * 7919) % 32000) + 1);
}

/** Resolves true after ms, or false as soon as the signal fires. */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (ms <= 0) {
    // A zero wait still yields to I/O, so a disconnect between chunks is noticed.
    return new Promise((resolve) => setImmediate(() => resolve(!signal.aborted)));
  }
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export function createdAt(): string {
  // performance.now() carries sub-millisecond digits that Date lacks.
  const now = performance.timeOrigin + performance.now();
  const ms = Math.floor(now);
  const nanos = (ms % 1000) * 1e6 + Math.floor((now - ms) * 1e6);
  return formatTime(ms, nanos);
}

export function rfc3339(epochMs: number): string {
  const ms = Math.floor(epochMs);
  return formatTime(ms, (ms % 1000) * 1e6);
}

/** RFC3339Nano as Go writes it: UTC, trailing zeros of the fraction trimmed, no fraction when zero. */
export function formatTime(epochMs: number, nanosOfSecond: number): string {
  const seconds = new Date(epochMs).toISOString().slice(0, 19);
  const fraction = String(nanosOfSecond).padStart(9, '0').replace(/0+$/, '');
  return `${seconds}${fraction ? `.${fraction}` : ''}Z`;
}

const THINKING_WORDS = ['first', 'the', 'question', 'asks', 'which', 'option', 'holds', 'so', 'weigh', 'cost', 'risk', 'and', 'time', 'then', 'check', 'each', 'claim'];

/** Words a simulated thinking model streams before answering: about `tokens` tokens, varied by the request number. */
export function thinkingText(tokens: number, index: number): string {
  const words: string[] = [];
  for (let i = 0; i < tokens; i++) words.push(THINKING_WORDS[(i * 7 + index) % THINKING_WORDS.length]!);
  return words.join(' ');
}

export function chunkShape(kind: 'chat' | 'generate', model: string, piece: string, thinking?: string): Record<string, unknown> {
  const base = { model, created_at: createdAt() };
  const thought = thinking === undefined ? {} : { thinking };
  return kind === 'chat'
    ? { ...base, message: { role: 'assistant', content: piece, ...thought }, done: false }
    : { ...base, response: piece, ...thought, done: false };
}

export function finalShape(
  kind: 'chat' | 'generate',
  model: string,
  content: string,
  extra: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...chunkShape(kind, model, content), done: true };
  // Go's omitempty: zero metrics and absent fields are left out.
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined || value === 0 || value === '') continue;
    out[key] = value;
  }
  return out;
}
