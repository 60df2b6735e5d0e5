import { resolve } from 'node:path';
import type { Api } from '../backend/types.js';
import { embeddedDir, embeddedUrl, serverUrl } from '../backend/url.js';
import type { HostEntry } from '../config/preset-schema.js';
import { InputError } from '../errors.js';
import { resolveHost } from '../ollama/host.js';

/** `--api` and `--api-key-env`: what a single `--host` speaks, for the commands that take one. */
export const apiOptions = {
  api: {
    choices: ['ollama', 'openai'] as const,
    describe: 'The API of --host: ollama (default), or openai for an OpenAI-compatible server (llama-server, vLLM, LM Studio); its URL then ends in /v1',
  },
  'api-key-env': {
    type: 'string',
    describe: 'With --api openai: the environment variable that holds the server\'s API key (the key is never recorded)',
  },
  embedded: {
    type: 'string',
    describe: 'Run GGUF models in this process, from DIR: a folder of .gguf files or an Ollama models folder (~/.ollama/models); needs node-llama-cpp',
  },
} as const;

export interface HostArgs {
  host?: string;
  api?: Api;
  'api-key-env'?: string;
  embedded?: string;
}

/** The one server `--host` (with `--api`, `--api-key-env`) names; an Ollama host falls back to OLLAMA_HOST, then the default. */
export function singleHost(args: HostArgs, env: NodeJS.ProcessEnv, cwd = process.cwd()): HostEntry {
  const keyEnv = args['api-key-env'];
  if (args.embedded !== undefined) return embeddedHost(args, cwd);
  if (args.api !== 'openai') {
    if (keyEnv !== undefined) throw new InputError('BAD_HOST_CONFIG', '--api-key-env is for OpenAI-compatible servers; Ollama takes no key.', { hint: 'Add `--api openai` if --host is such a server, or drop --api-key-env.' });
    return { url: resolveHost(args.host, env) };
  }
  if (args.host === undefined) {
    throw new InputError('BAD_HOST', '--api openai needs the server\'s URL in --host.', { hint: 'Pass e.g. `--host http://127.0.0.1:8080/v1` (llama-server) or `--host http://gpu-2:8000/v1` (vLLM).' });
  }
  if (keyEnv !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(keyEnv)) {
    throw new InputError('BAD_HOST_CONFIG', `--api-key-env takes the name of an environment variable, not \`${keyEnv.length > 12 ? `${keyEnv.slice(0, 4)}…` : keyEnv}\`.`, { hint: 'Export the key (`export VLLM_API_KEY=…`) and pass `--api-key-env VLLM_API_KEY`.' });
  }
  return { url: serverUrl({ url: args.host, api: 'openai' }), api: 'openai', ...(keyEnv ? { apiKeyEnv: keyEnv } : {}) };
}

/** A host as a debate's plan recorded it (src/schedule/plan.ts PlannedHost), read loosely from the stored JSON. */
interface RecordedHost {
  url: string;
  vramBytes?: number;
  numParallel?: number;
  api?: 'openai' | 'embedded';
  apiKeyEnv?: string;
}

/**
 * The server a stored debate's `model` ran on, from its recorded plan: the first host the plan
 * placed the model on, else the plan's first host; null when the plan records none. Commands that
 * go on with a stored debate use it unless `--host` names another.
 */
export function recordedHostOf(plan: unknown, model: string): HostEntry | null {
  const p = plan as { hosts?: RecordedHost[]; models?: { model: string; hosts?: string[] }[] } | null;
  const hosts = p?.hosts ?? [];
  const placed = p?.models?.find((m) => m.model === model)?.hosts?.[0];
  const h = hosts.find((x) => x.url === placed) ?? hosts[0];
  if (!h) return null;
  if (h.api === 'embedded') return { url: h.url, api: 'embedded', models: embeddedDir(h.url) };
  return h.api === 'openai'
    ? { url: h.url, api: 'openai', ...(h.apiKeyEnv ? { apiKeyEnv: h.apiKeyEnv } : {}) }
    : { url: h.url };
}

/** `--trust-recorded-hosts` on the commands that go on with a stored debate on the servers it recorded. */
export const trustRecordedHostsOption = {
  type: 'boolean',
  describe: 'Go on with the servers the record names even where that needs consent: send a recorded OpenAI-compatible server the API key it names (from your environment), load the models of a recorded embedded folder',
} as const;

/**
 * A record names its own servers, and a record can come from someone else (`conclave import`):
 * a recorded server that asks for a key from the environment gets it, and a recorded embedded
 * host's folder of model files is loaded, only with the user's consent, as for a preset's own.
 */
export function checkRecordedHosts(hosts: readonly HostEntry[], trusted: boolean | undefined, command: string): void {
  if (trusted) return;
  const local = hosts.find((h) => h.api === 'embedded');
  if (local) {
    const dir = local.models ?? embeddedDir(local.url);
    throw new InputError('RECORD_HOST_MODELS', `The record names the embedded models folder ${dir}: a record never has Conclave load and run model files from a folder it chose without your consent (a record can come from someone else).`, {
      hint: `Name the folder yourself (\`conclave ${command} … --embedded ${dir}\`), or pass --trust-recorded-hosts if this record is yours.`,
    });
  }
  const keyed = hosts.find((h) => h.api === 'openai' && h.apiKeyEnv !== undefined);
  if (!keyed) return;
  throw new InputError('RECORD_HOST_KEY', `The record names the server ${keyed.url} and asks to send it the API key in $${keyed.apiKeyEnv}: a server named by a record never receives a key from your environment without your consent (a record can come from someone else).`, {
    hint: `Name the server yourself (\`conclave ${command} … --host ${keyed.url} --api openai --api-key-env ${keyed.apiKeyEnv}\`), or pass --trust-recorded-hosts if this record is yours.`,
  });
}

/** `--embedded DIR`: the models of DIR, run in this process; it takes the place of --host. */
function embeddedHost(args: HostArgs, cwd: string): HostEntry {
  const dir = args.embedded!;
  if (dir.trim() === '') throw new InputError('BAD_FLAG', '--embedded needs a folder.', { hint: 'Pass a folder of .gguf files or an Ollama models folder, e.g. `--embedded ~/.ollama/models`.' });
  if (args.host !== undefined || args.api !== undefined || args['api-key-env'] !== undefined) {
    throw new InputError('BAD_FLAG', '--embedded runs the models in this process: it takes no --host, --api or --api-key-env.', { hint: 'Drop those flags, or drop --embedded to use a server.' });
  }
  const models = resolve(cwd, dir);
  return { url: embeddedUrl(models), api: 'embedded', models };
}
