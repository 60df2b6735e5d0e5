import { dirname, extname, resolve } from 'node:path';
import { embeddedUrl, serverUrl } from '../backend/url.js';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ConclaveError, InputError } from '../errors.js';
import { formatInputIssues } from './input-issues.js';
import { FILE_LIMITS, readTextFile } from './read-file.js';
import { type HostEntry, hostEntrySchema } from './preset-schema.js';

const hostsFileSchema = z.array(hostEntrySchema).min(1, 'list at least one host');

/** Read a `--hosts FILE`: a YAML or JSON list of `{url, vramGiB?, numParallel?}`. */
export function loadHostsFile(path: string, cwd = process.cwd()): HostEntry[] {
  const file = resolve(cwd, path);
  const hint = 'Pass a YAML or JSON list such as `- url: http://gpu-1:11434` with optional vramGiB and numParallel.';
  const text = readTextFile(file, { what: 'Hosts file', code: 'HOSTS', maxBytes: FILE_LIMITS.hosts, hint });
  let data: unknown;
  try {
    data = extname(file) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new InputError('HOSTS_UNREADABLE', `Cannot read the hosts file ${file}: ${(err as Error).message}`, {
      hint: 'Pass a YAML or JSON list such as `- url: http://gpu-1:11434` with optional vramGiB and numParallel.',
    });
  }
  if (data !== null && typeof data === 'object' && !Array.isArray(data) && Array.isArray((data as { hosts?: unknown }).hosts)) {
    throw new InputError('HOSTS_INVALID', `The hosts file ${file} is a mapping with \`hosts:\`, as a preset writes it; a hosts file is the list alone.`, {
      hint: 'Remove the `hosts:` line and un-indent its entries, so the file starts with `- url: …`.',
    });
  }
  const entries = withEmbeddedUrls(data, dirname(file));
  const parsed = hostsFileSchema.safeParse(entries);
  if (!parsed.success) {
    throw new InputError('HOSTS_INVALID', `The hosts file ${file} is invalid:\n${formatInputIssues(parsed.error, entries, hostsFileSchema)}`, {
      hint: 'Each entry is {url, vramGiB?, numParallel?}; vramGiB above 0, numParallel a whole number from 1 up.',
    });
  }
  const problems = hostUrlProblems(parsed.data, '');
  if (problems.length > 0) {
    throw new InputError('HOSTS_INVALID', `The hosts file ${file} is invalid:\n${problems.join('\n')}`, { hint });
  }
  return parsed.data;
}

/**
 * Each entry whose url cannot be used (a scheme mistyped, a port past 65535), as `  - PATH.url: why`
 * lines, so the file and the entry are named before any host is asked.
 */
export function hostUrlProblems(hosts: readonly HostEntry[], prefix: string): string[] {
  return hosts.flatMap((host, i) => {
    if (host.api === 'embedded') return [];
    try {
      serverUrl(host);
      return [];
    } catch (err) {
      if (!(err instanceof ConclaveError)) throw err;
      return [`  - ${prefix}${i}.url: ${err.message}${err.hint ? ` ${err.hint}` : ''}`];
    }
  });
}

/** An `api: embedded` entry names its folder with `models`, relative to the hosts file; its url is made from that folder. */
function withEmbeddedUrls(data: unknown, base: string): unknown {
  if (!Array.isArray(data)) return data;
  return data.map((entry: unknown) => {
    if (!entry || typeof entry !== 'object') return entry;
    const e = entry as Record<string, unknown>;
    if (e.api !== 'embedded' || typeof e.models !== 'string' || e.models === '') return entry;
    const models = resolve(base, e.models.replace(/^~(?=$|\/)/, process.env.HOME ?? '~'));
    return { ...e, models, url: e.url ?? embeddedUrl(models) };
  });
}
