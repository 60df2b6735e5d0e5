import { realpathSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';

/** A preset's folder, its symlinks resolved when it exists. */
export function presetRoot(presetDir: string): string {
  try {
    return realpathSync(presetDir);
  } catch {
    return resolve(presetDir);
  }
}

/**
 * Where a file a preset names would be read from, if it stays inside the preset's folder: the
 * path resolved under `root` (its real path when the file exists). Otherwise `refuse` is called
 * with why, in words: an absolute path, a `..` step, or a symlink leading out of the folder.
 * A missing file passes: its reader reports it with its own message.
 */
export function insidePresetFolder(given: string, root: string, refuse: (why: string) => Error): string {
  if (isAbsolute(given) || /^[A-Za-z]:/.test(given)) throw refuse('an absolute path');
  if (given.split(/[\\/]/).includes('..')) throw refuse('a path that climbs out with `..`');
  const path = resolve(root, given);
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    return path;
  }
  const rel = relative(root, real);
  if (rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) throw refuse(`a link to ${real}, outside the preset's folder`);
  return real;
}
