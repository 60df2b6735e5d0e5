import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdirSync, readFileSync, renameSync, rmSync, type Stats, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';

/**
 * Where the sha256s of model files read in full are kept between runs: `$XDG_CACHE_HOME/conclave/model-sha256.json`,
 * else `~/.cache/conclave/model-sha256.json`. Deleting it costs one more read of each model file, nothing else.
 */
export function modelHashCacheFile(env: NodeJS.ProcessEnv = process.env): string {
  // The XDG spec says to ignore a relative XDG_CACHE_HOME.
  const cacheHome = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(cacheHome, 'conclave', 'model-sha256.json');
}

/** How far the read of one model file has gone: `bytesRead` 0 as it starts, `done` once as it ends. */
export interface HashProgress {
  path: string;
  bytesRead: number;
  size: number;
  done: boolean;
}

/** Files under this size are read without progress: a fraction of a second. */
export const PROGRESS_MIN_BYTES = 256 << 20;

let progressListener: ((p: HashProgress) => void) | null = null;

/** Who hears of reads of model files of `PROGRESS_MIN_BYTES` or more (the CLI's stderr); one for the process, as the engine is. */
export function onHashProgress(listener: ((p: HashProgress) => void) | null): void {
  progressListener = listener;
}

/**
 * One version of a file: a write changes its mtime and ctime, and a copy put in its place (rsync, cp then mv)
 * its inode. ctime cannot be set back, so a file changed in place with its mtime restored is read again.
 */
interface FileVersion {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
}

interface Entry extends FileVersion {
  sha256: string;
}

const versionOf = (s: Stats): FileVersion => ({ size: s.size, mtimeMs: s.mtimeMs, ctimeMs: s.ctimeMs, ino: s.ino });
const sameVersion = (a: FileVersion, b: FileVersion): boolean => a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.ino === b.ino;

/** A cache file larger than this is not ours to parse: a few hundred entries take a few tens of KiB. */
const MAX_CACHE_BYTES = 4 << 20;
const CACHE_FORMAT = 1;

/**
 * The sha256 of model files, each read in full once per file version: remembered in this process and in
 * `file` (null: in this process only), so the next run trusts a file whose size, mtime, ctime and inode
 * are those it had when read. The cache is read as untrusted input: an entry not of its shape is ignored,
 * and a cache that is not JSON is rewritten.
 */
export class FileHashes {
  readonly file: string | null;
  readonly #known = new Map<string, Promise<string>>();

  constructor(file: string | null) {
    this.file = file;
  }

  async sha256(path: string): Promise<string> {
    const version = versionOf(statSync(path));
    const key = JSON.stringify([path, version]);
    let known = this.#known.get(key);
    if (!known) {
      known = this.#readOrHash(path, version);
      this.#known.set(key, known);
      known.catch(() => this.#known.delete(key));
    }
    return known;
  }

  async #readOrHash(path: string, version: FileVersion): Promise<string> {
    const cached = this.#entries().get(path);
    if (cached && sameVersion(cached, version)) return cached.sha256;
    const sha256 = await hashFile(path, version.size);
    // A file that changed while it was read has no one sha256 worth remembering.
    const after = statSync(path, { throwIfNoEntry: false });
    if (after && sameVersion(versionOf(after), version)) this.#remember(path, { ...version, sha256 });
    return sha256;
  }

  #entries(): Map<string, Entry> {
    const entries = new Map<string, Entry>();
    if (!this.file) return entries;
    let parsed: unknown;
    try {
      if (statSync(this.file).size > MAX_CACHE_BYTES) return entries;
      parsed = JSON.parse(readFileSync(this.file, 'utf8'));
    } catch {
      return entries;
    }
    if (typeof parsed !== 'object' || parsed === null) return entries;
    const { format, files } = parsed as { format?: unknown; files?: unknown };
    if (format !== CACHE_FORMAT || typeof files !== 'object' || files === null || Array.isArray(files)) return entries;
    for (const [path, e] of Object.entries(files as Record<string, unknown>)) {
      const entry = asEntry(e);
      if (entry && isAbsolute(path)) entries.set(path, entry);
    }
    return entries;
  }

  /** Written to a file of its own and renamed over the cache, so a reader never sees half of it; a cache that cannot be written costs a read next run. */
  #remember(path: string, entry: Entry): void {
    if (!this.file) return;
    const entries = this.#entries();
    entries.set(path, entry);
    const files: Record<string, Entry> = {};
    for (const [p, e] of entries) {
      // Files gone or changed since are dropped, so the cache holds what is on disk and does not grow for ever.
      const now = statSync(p, { throwIfNoEntry: false });
      if (now && sameVersion(versionOf(now), e)) files[p] = e;
    }
    const temp = `${this.file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      writeFileSync(temp, `${JSON.stringify({ format: CACHE_FORMAT, files }, null, 1)}\n`, { mode: 0o600 });
      renameSync(temp, this.file);
    } catch {
      rmSync(temp, { force: true });
    }
  }
}

function asEntry(value: unknown): Entry | null {
  if (typeof value !== 'object' || value === null) return null;
  const e = value as Record<string, unknown>;
  const finite = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;
  if (!finite(e.size) || !finite(e.mtimeMs) || !finite(e.ctimeMs) || !finite(e.ino)) return null;
  if (typeof e.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(e.sha256)) return null;
  return { size: e.size, mtimeMs: e.mtimeMs, ctimeMs: e.ctimeMs, ino: e.ino, sha256: e.sha256 };
}

/** The file's sha256, read in 4 MiB chunks; a large file's read is reported to the progress listener. */
export async function hashFile(path: string, size: number): Promise<string> {
  const listener = size >= PROGRESS_MIN_BYTES ? progressListener : null;
  const hash = createHash('sha256');
  let bytesRead = 0;
  listener?.({ path, bytesRead, size, done: false });
  for await (const chunk of createReadStream(path, { highWaterMark: 4 << 20 })) {
    hash.update(chunk as Buffer);
    bytesRead += (chunk as Buffer).length;
    listener?.({ path, bytesRead, size, done: false });
  }
  listener?.({ path, bytesRead, size, done: true });
  return hash.digest('hex');
}
