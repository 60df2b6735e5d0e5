import { InputError } from '../errors.js';

export const DEFAULT_HOST = 'http://127.0.0.1:11434';

/**
 * Normalise an Ollama host the way the Ollama CLI reads OLLAMA_HOST:
 * scheme defaults to http, port to 11434, a bare `:PORT` means loopback.
 * (ollama-js maps `http://x` to port 80, which surprises users, so we decide here.)
 */
export function normalizeHost(input: string): string {
  let value = input.trim();
  if (value === '') throw new InputError('BAD_HOST', 'The Ollama host is empty.', { hint: 'Pass `--host http://127.0.0.1:11434` or set OLLAMA_HOST.' });
  if (value.startsWith(':')) value = `127.0.0.1${value}`;
  if (!/^[a-z]+:\/\//i.test(value)) value = `http://${value}`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InputError('BAD_HOST', `The Ollama host \`${input}\` is not a valid URL.`, {
      hint: 'Use a form like http://127.0.0.1:11434 or 192.168.1.20:11434.',
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InputError('BAD_HOST', `The Ollama host \`${input}\` uses ${url.protocol} ; only http and https are supported.`);
  }
  if (url.hostname === '0.0.0.0') url.hostname = '127.0.0.1';
  const port = url.port || (url.protocol === 'https:' && !/:\d+/.test(input) && /^https:/i.test(input) ? '443' : '11434');
  const path = url.pathname.replace(/\/+$/, '');
  return `${url.protocol}//${url.hostname}:${port}${path}`;
}

/** `--host` wins, then OLLAMA_HOST, then the default. The ollama client never reads OLLAMA_HOST itself. */
export function resolveHost(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const chosen = flag ?? (env.OLLAMA_HOST && env.OLLAMA_HOST.trim() !== '' ? env.OLLAMA_HOST : DEFAULT_HOST);
  return normalizeHost(chosen);
}
