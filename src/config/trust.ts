import { readlinkSync, realpathSync, statSync, type Stats } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { serverUrl } from '../backend/url.js';
import { InputError } from '../errors.js';
import type { HostEntry } from './preset-schema.js';

/**
 * Who chose a thing that leaves the machine or is read from it. The user speaks through the
 * command line, a hosts file and the environment; a preset file and an MCP client are others,
 * who may have been written by someone else: what they name passes the rules below.
 */
export type Chooser = 'user' | 'preset' | 'mcp';

/** Names of Conclave's own key files: never readable by a preset or an MCP client, whatever folder they lie in. */
const KEY_FILE_NAMES = new Set(['conclave-seal.key']);
const PRIVATE_KEY = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/;

/** Where a preset or an MCP client may read files from, and what the refusals say. */
export interface Confinement {
  chooser: Exclude<Chooser, 'user'>;
  /** Real paths of the folders reads must stay under: the preset's folder, or `mcp --allow-dir`s. */
  roots: string[];
  /** The environment, for the signing key it names (never readable). */
  env: NodeJS.ProcessEnv;
  /** Builds the refusal of `given`, with why in words. */
  refuse: (why: string) => InputError;
}

/** A folder's real path when it exists, else its resolved path. */
export function realFolder(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return resolve(dir);
  }
}

/**
 * The checks on a path a preset or MCP client gives, before it is opened: a preset names files
 * relative to its folder, without `..`; nobody but the user names a dot-file or dot-folder.
 * Returns the path to open.
 */
export function confinedPath(given: string, base: string, c: Confinement): string {
  const parts = given.split(/[\\/]/).filter((p) => p !== '' && p !== '.');
  if (c.chooser === 'preset') {
    if (isAbsolute(given) || /^[A-Za-z]:/.test(given)) throw c.refuse('an absolute path');
    if (parts.includes('..')) throw c.refuse('a path that climbs out with `..`');
  }
  const path = resolve(base, given);
  // The allowed folders are real paths: a path through a symlinked parent is compared by its real path.
  const lexical = c.roots.find((r) => within(r, path));
  const real = lexical === undefined ? realFolder(path) : path;
  const root = lexical ?? c.roots.find((r) => within(r, real));
  if (c.chooser === 'mcp' && root === undefined) throw c.refuse(outsideRoots(c));
  const rel = root === undefined ? parts : relative(root, real).split(sep);
  if (rel.some((p) => p.startsWith('.') && p !== '..')) throw c.refuse('a hidden file or folder (its name starts with a dot)');
  return path;
}

/**
 * A `guard` for `readRegularFile`: where the opened file really is (read from the descriptor
 * itself), inside a root, no hidden part below it, not a key file. The same descriptor is then
 * read, so a symlink swapped in after the check changes nothing.
 */
export function confinedGuard(path: string, c: Confinement): (fd: number, stats: Stats) => void {
  return (fd, stats) => {
    const real = realPathOfFd(fd, path, stats, c);
    const root = c.roots.find((r) => within(r, real));
    if (root === undefined) throw c.refuse(c.chooser === 'preset' ? `a link to ${real}, outside the preset's folder` : `${real}${c.roots.length === 0 ? ':' : ','} ${outsideRoots(c)}`);
    if (relative(root, real).split(sep).some((p) => p.startsWith('.'))) throw c.refuse(`${real}, a hidden file or folder (its name starts with a dot)`);
    const name = real.split(sep).at(-1) ?? '';
    if (KEY_FILE_NAMES.has(name) || isSigningKey(stats, c.env)) throw c.refuse(`${real}, a signing key of Conclave`);
  };
}

/** Refuses text that holds a private key, whatever the file is called. */
export function refusePrivateKey(content: string, c: Confinement): void {
  if (PRIVATE_KEY.test(content)) throw c.refuse('a file holding a private key');
}

function outsideRoots(c: Confinement): string {
  return c.roots.length === 0 ? 'this server reads no files (it was started without --allow-dir)' : `outside the folders this server may read (${c.roots.join(', ')})`;
}

function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' ? false : !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

/**
 * The real path of an open file. Linux names it in /proc/self/fd; elsewhere the path's real
 * path is taken and must be the very file opened (same device and inode), or the read is refused.
 */
function realPathOfFd(fd: number, path: string, stats: Stats, c: Confinement): string {
  try {
    const link = readlinkSync(`/proc/self/fd/${fd}`);
    if (isAbsolute(link)) return link;
  } catch {
    // No /proc: fall through to the comparison.
  }
  const real = realFolder(path);
  let again: Stats;
  try {
    again = statSync(real);
  } catch {
    throw c.refuse('a file that moved while it was opened');
  }
  if (again.dev !== stats.dev || again.ino !== stats.ino) throw c.refuse('a file that was replaced while it was opened');
  return real;
}

function isSigningKey(stats: Stats, env: NodeJS.ProcessEnv): boolean {
  const key = env.CONCLAVE_SIGNING_KEY;
  if (!key) return false;
  try {
    const st = statSync(key);
    return st.dev === stats.dev && st.ino === stats.ino;
  } catch {
    return false;
  }
}

/** Where a run's calls go and who chose those servers. */
export interface Destinations {
  hosts: HostEntry[];
  chosenBy: Exclude<Chooser, 'mcp'>;
}

/**
 * What a run may send where. A host the preset names (not the user's --host, --hosts or
 * OLLAMA_HOST) receives no API key from the environment, and no file a preset or MCP client
 * chose, unless the user consents with `--trust-preset-hosts`. Returns the URLs each thing goes to.
 */
export function checkDestinations(opts: {
  destinations: Destinations;
  presetSource: string;
  /** Files chosen by someone other than the user (the preset, an MCP client), by name. */
  foreignFiles: string[];
  trustPresetHosts: boolean;
  env: NodeJS.ProcessEnv;
  /** How the consent is given where this runs, e.g. `--trust-preset-hosts` or `conclave mcp --trust-preset-hosts`. */
  consent: string;
}): void {
  const { destinations: d } = opts;
  if (d.chosenBy === 'user' || opts.trustPresetHosts) return;
  const envHost = opts.env.OLLAMA_HOST?.trim() ? safeUrl({ url: opts.env.OLLAMA_HOST }) : null;
  // OLLAMA_HOST names the server, not the secret: which value of the environment goes to it stays the user's to say.
  const ownKeyed = d.hosts.find((h) => h.apiKeyEnv !== undefined && safeUrl(h) === envHost);
  if (ownKeyed) {
    throw new InputError('PRESET_HOST_KEY', `The preset ${opts.presetSource} asks to send your server ${safeUrl(ownKeyed)} (OLLAMA_HOST) the value of $${ownKeyed.apiKeyEnv} as its API key: which of your environment's values a server receives is yours to choose, not a preset's.`, {
      hint: `Name the key yourself (--host URL --api openai --api-key-env ${ownKeyed.apiKeyEnv}, or a --hosts file), or pass ${opts.consent} if you trust the preset.`,
    });
  }
  const foreign = d.hosts.filter((h) => safeUrl(h) !== envHost);
  const local = foreign.find((h) => h.api === 'embedded');
  if (local) throw presetModelsRefused(opts.presetSource, local, opts.consent);
  const keyed = foreign.find((h) => h.apiKeyEnv !== undefined);
  if (keyed) {
    throw new InputError('PRESET_HOST_KEY', `The preset ${opts.presetSource} names its own server ${safeUrl(keyed)} and asks to send it the API key in $${keyed.apiKeyEnv}: a server named by a preset never receives a key from your environment without your consent.`, {
      hint: `Name the server yourself (--host URL --api openai --api-key-env ${keyed.apiKeyEnv}, or a --hosts file), or pass ${opts.consent} if you trust every server the preset names.`,
    });
  }
  if (foreign.length > 0 && opts.foreignFiles.length > 0) {
    throw new InputError('PRESET_HOST_FILES', `The preset ${opts.presetSource} names its own server${foreign.length === 1 ? '' : 's'} ${foreign.map(safeUrl).join(', ')}, and ${opts.foreignFiles.map((f) => `\`${f}\``).join(', ')} ${opts.foreignFiles.length === 1 ? 'was' : 'were'} attached by someone other than you: such files never go to a preset's own server without your consent.`, {
      hint: `Name the server yourself (--host or --hosts), or pass ${opts.consent} if you trust every server the preset names.`,
    });
  }
}

function safeUrl(h: { url: string; api?: HostEntry['api'] }): string {
  try {
    return serverUrl(h);
  } catch {
    return h.url;
  }
}

/** The server URLs of a host list, as the notice names them. */
export function destinationUrls(hosts: readonly HostEntry[]): string {
  return hosts.map(safeUrl).join(', ');
}

/**
 * The hosts a preset names, for an engine given no host list of its own: refused when one would
 * be sent an API key from the environment and the caller has not consented. The command line's
 * checks (`checkDestinations`) pass the hosts on explicitly; this catches every other road
 * (a bench, a library caller) that would fall back to the preset's list.
 */
export function presetHostsFor(hosts: readonly HostEntry[] | undefined, trusted: boolean): HostEntry[] | undefined {
  if (!hosts?.length) return undefined;
  const local = hosts.find((h) => h.api === 'embedded');
  if (local && !trusted) throw presetModelsRefused('', local, '--trust-preset-hosts (trustPresetHosts: true in the library)');
  const keyed = hosts.find((h) => h.apiKeyEnv !== undefined);
  if (keyed && !trusted) {
    throw new InputError('PRESET_HOST_KEY', `The preset names its own server ${safeUrl(keyed)} and asks to send it the API key in $${keyed.apiKeyEnv}: a server named by a preset never receives a key from the environment without consent.`, {
      hint: 'Name the servers yourself (--host or --hosts), or pass --trust-preset-hosts (trustPresetHosts: true in the library) if you trust every server the preset names.',
    });
  }
  return [...hosts];
}

/** A preset's own `api: embedded` host would have this process load and run the files of a folder the preset chose. */
function presetModelsRefused(source: string, host: HostEntry, consent: string): InputError {
  return new InputError('PRESET_HOST_MODELS', `The preset${source ? ` ${source}` : ''} names its own embedded host, the models folder ${host.models ?? host.url}: a preset never has Conclave load model files from a folder it chose without your consent.`, {
    hint: `Name the folder yourself (--embedded DIR, or a --hosts file), or pass ${consent} if you trust the preset.`,
  });
}
