import { readFileSync } from 'node:fs';
import { packagePath } from './package-root.js';

/** The package version, read once from package.json. */
export const VERSION: string = (JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { version: string }).version;

/** Which build runs: `release linux-x64 <commit>` for an archive, `checkout <commit>` for a clone (dist/build-info.json); null when the build wrote none. */
export const BUILD: string | null = readBuildLabel();

/** The version every record stores as its engine: the package version and the build, e.g. `0.1.0 (release linux-x64 3cec2fd5a1b2)`. */
export const ENGINE_VERSION: string = BUILD === null ? VERSION : `${VERSION} (${BUILD})`;

function readBuildLabel(): string | null {
  try {
    const info = JSON.parse(readFileSync(packagePath('dist', 'build-info.json'), 'utf8')) as { label?: unknown };
    return typeof info.label === 'string' && info.label !== '' ? info.label : null;
  } catch {
    return null;
  }
}
