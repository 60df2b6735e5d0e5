import { resolve } from 'node:path';
import type { Api } from './types.js';
import { InputError } from '../errors.js';
import { normalizeHost, refuseBrokenScheme } from '../ollama/host.js';

/** The canonical URL of a server: Ollama's host form, or an OpenAI-compatible base ending in /v1. */
export function serverUrl(target: { url: string; api?: Api; models?: string }): string {
  if (target.api === 'embedded') return embeddedUrl(target.models ?? embeddedDir(target.url));
  return (target.api ?? 'ollama') === 'openai' ? normalizeOpenAIBase(target.url) : normalizeHost(target.url);
}

/** An embedded host's name in plans and records: `embedded:` and its models folder's absolute path. */
export function embeddedUrl(dir: string): string {
  return `embedded:${resolve(dir)}`;
}

/** The models folder an embedded host's name points at. */
export function embeddedDir(url: string): string {
  return url.startsWith('embedded:') ? url.slice('embedded:'.length) : url;
}

/** http(s)://host[:port]/…/v1, without a trailing slash; a scheme defaults to http. */
export function normalizeOpenAIBase(input: string): string {
  let value = input.trim();
  const hint = 'Give the base of its API, ending in /v1, e.g. http://gpu-2:8000/v1 for vLLM or http://127.0.0.1:8080/v1 for llama-server.';
  if (value === '') throw new InputError('BAD_HOST', 'The OpenAI-compatible server URL is empty.', { hint });
  refuseBrokenScheme(input, value, 'gpu-2:8000/v1');
  if (!/^[a-z]+:\/\//i.test(value)) value = `http://${value}`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InputError('BAD_HOST', `The OpenAI-compatible server URL \`${input}\` is not a valid URL.`, { hint });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InputError('BAD_HOST', `The server URL \`${input}\` uses the scheme \`${url.protocol}\`; only http and https are supported.`, { hint });
  if (url.username || url.password) throw new InputError('BAD_HOST', `The server URL \`${url.host}\` carries credentials.`, { hint: 'Put the key in an environment variable and name it with apiKeyEnv: a URL is written to the record.' });
  const path = url.pathname.replace(/\/+$/, '');
  if (!path.endsWith('/v1')) throw new InputError('BAD_HOST', `The OpenAI-compatible server URL \`${input}\` does not end in /v1.`, { hint });
  if (url.hostname === '0.0.0.0') url.hostname = '127.0.0.1';
  return `${url.protocol}//${url.host}${path}`;
}
