import { inert } from '../render/inert.js';

/** What a secret is replaced with wherever a server's text would carry it. */
export const REDACTED = '[key removed]';

/**
 * Text a server sent (an error body, a message), made fit for a message, stderr and the record:
 * every secret the server was given is removed first, then the text is made inert (escape
 * sequences and controls removed, direction controls written out) and put on one line (line and
 * paragraph separators become spaces, so it cannot start a line of its own), then clipped to `max` characters. Redacting before clipping leaves no key half cut.
 */
export function serverText(text: string, secrets: readonly string[] = [], max = 500): string {
  let out = text;
  for (const secret of secrets) if (secret !== '') out = out.split(secret).join(REDACTED);
  out = inert(out).replace(/[\n\t\u2028\u2029]+/g, ' ').replace(/ {2,}/g, ' ').trim();
  return out.length > max ? `${out.slice(0, max)}…` : out || 'no message';
}

/** A reply's text with every secret removed; otherwise unchanged (newlines stay). */
export function withoutSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret !== '') out = out.split(secret).join(REDACTED);
  return out;
}

/**
 * An error body as the words it says: an HTML page (a proxy's 502, a sign-in page), told by its
 * content type or by its first character, loses its scripts, styles and tags; any other text is
 * kept as it is. Only a page's start is read: a message keeps a few hundred characters.
 */
export function bodyText(text: string, contentType = ''): string {
  if (!/html/i.test(contentType) && !/^\s*</.test(text)) return text;
  return text
    .slice(0, 20_000)
    .replace(/<(script|style)\b[^>]*>[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<[^>]*>/g, ' ');
}
