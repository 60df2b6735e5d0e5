import { InputError } from '../errors.js';
import { Gateway } from '../ollama/gateway.js';
import { OpenAIGateway } from '../openai/gateway.js';
import type { Api, ModelServer } from './types.js';
import { embeddedDir, serverUrl } from './url.js';
import { embeddedServer } from '../embedded/server.js';

export { serverUrl };

/** Where a model server is and how to speak to it: a hosts entry's `url`, `api` and `apiKeyEnv`. */
export interface ServerTarget {
  url: string;
  api?: Api;
  /** For `api: embedded`: the models folder (else read from the url) and the sequences per loaded model. */
  models?: string;
  numParallel?: number;
  /** The environment variable holding the server's bearer key (OpenAI-compatible servers only). */
  apiKeyEnv?: string;
}

/** A client for the server: the key, if any, is read from the environment now and kept only in memory. */
export function connect(target: ServerTarget, env: NodeJS.ProcessEnv = process.env): ModelServer {
  const url = serverUrl(target);
  if (target.api === 'embedded') return embeddedServer(embeddedDir(url), target.numParallel, env);
  if ((target.api ?? 'ollama') === 'ollama') return new Gateway(url);
  return new OpenAIGateway(url, { ...(target.apiKeyEnv ? { apiKey: apiKeyOf(target, url, env), apiKeyEnv: target.apiKeyEnv } : {}) });
}

function apiKeyOf(target: ServerTarget, url: string, env: NodeJS.ProcessEnv): string {
  const name = target.apiKeyEnv!;
  const key = env[name]?.trim();
  if (!key) {
    throw new InputError('API_KEY_MISSING', `The environment variable ${name}, which holds the API key for ${url}, is not set.`, {
      hint: `Export it before running (\`export ${name}=…\`), or drop apiKeyEnv if the server takes no key.`,
    });
  }
  return key;
}
