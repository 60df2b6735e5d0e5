import { InputError } from '../errors.js';

export const DEFAULT_HOST = 'http://127.0.0.1:11434';

/**
 * Normalise an Ollama host the way the Ollama CLI reads OLLAMA_HOST:
 * scheme defaults to http, port to 11434, a bare `:PORT` means loopback.
 * (ollama-js maps `http://x` to port 80, which surprises users, so we decide here.)
 */
export function normalizeHost(input: string): string {
  let value = input.trim();
  const hint = 'Use a form like http://127.0.0.1:11434 or 192.168.1.20:11434.';
  if (value === '') throw new InputError('BAD_HOST', 'The Ollama host is empty.', { hint: 'Pass `--host http://127.0.0.1:11434` or set OLLAMA_HOST.' });
  if (value.startsWith(':')) value = `127.0.0.1${value}`;
  refuseBrokenScheme(input, value, '127.0.0.1:11434');
  if (!/^[a-z]+:\/\//i.test(value)) value = `http://${value}`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InputError('BAD_HOST', `The Ollama host \`${input}\` is not a valid URL.`, { hint });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InputError('BAD_HOST', `The Ollama host \`${input}\` uses the scheme \`${url.protocol}\`; only http and https are supported.`, { hint });
  }
  if (url.hostname === '0.0.0.0') url.hostname = '127.0.0.1';
  const port = url.port || (url.protocol === 'https:' && !/:\d+/.test(input) && /^https:/i.test(input) ? '443' : '11434');
  const path = url.pathname.replace(/\/+$/, '');
  return `${url.protocol}//${url.hostname}:${port}${path}`;
}

/**
 * A scheme written without its colon or a slash (`http//gpu-1:11434`, `http:/gpu-1`) would
 * otherwise be read as a server named `http`; refused, with the form that was meant.
 */
export function refuseBrokenScheme(input: string, value: string, example: string): void {
  if (/^https?:\/\//i.test(value)) return;
  const broken = /^(https?)(:\/|:?\/\/)/i.exec(value);
  if (!broken) return;
  const rest = value.slice(broken[0].length).replace(/^\/+/, '');
  throw new InputError('BAD_HOST', `The host URL \`${input}\` has a broken scheme: it reads as a server named \`${broken[1]}\`.`, {
    hint: `Write the scheme with \`://\`: ${broken[1]!.toLowerCase()}://${rest || example}.`,
  });
}

/** `--host` wins, then OLLAMA_HOST, then the default. The ollama client never reads OLLAMA_HOST itself. */
export function resolveHost(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = flag === undefined && env.OLLAMA_HOST !== undefined && env.OLLAMA_HOST.trim() !== '';
  const chosen = flag ?? (fromEnv ? env.OLLAMA_HOST! : DEFAULT_HOST);
  try {
    return normalizeHost(chosen);
  } catch (err) {
    if (!(err instanceof InputError) || !fromEnv) throw err;
    throw new InputError(err.code, `OLLAMA_HOST: ${err.message}`, { hint: `${err.hint ?? ''} Fix or unset OLLAMA_HOST, or pass --host.`.trim() });
  }
}
