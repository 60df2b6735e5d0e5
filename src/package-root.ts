import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConclaveError } from './errors.js';

const PACKAGE_NAME = 'conclave';

let cached: string | undefined;

/**
 * The folder holding Conclave's own package.json, found by walking up from this
 * module. Works the same from `src/` (tests, tsx) and from `dist/` (installed).
 */
export function packageRoot(): string {
  if (cached !== undefined) return cached;
  const start = dirname(fileURLToPath(import.meta.url));
  let dir = start;
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && nameOf(manifest) === PACKAGE_NAME) {
      cached = dir;
      return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new ConclaveError('PACKAGE_ROOT_NOT_FOUND', `No package.json named \`${PACKAGE_NAME}\` above ${start}.`, {
    hint: 'The installation looks incomplete. Reinstall Conclave (`npm ci` in a clone, or reinstall the package).',
  });
}

/** A path inside the package, e.g. `packagePath('migrations')`. */
export function packagePath(...parts: string[]): string {
  return join(packageRoot(), ...parts);
}

function nameOf(manifest: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(readFileSync(manifest, 'utf8'));
    if (parsed && typeof parsed === 'object' && 'name' in parsed && typeof parsed.name === 'string') return parsed.name;
  } catch {
    // An unreadable or malformed package.json is not ours; keep walking.
  }
  return undefined;
}
