import { resolve } from 'node:path';
import { InputError } from '../errors.js';
import { packagePath } from '../package-root.js';
import { resolvePresetPath } from './load-preset.js';
import type { FileRules } from './read-file.js';
import { confinedGuard, confinedPath, realFolder, type Confinement } from './trust.js';

/**
 * How to read the preset an MCP client names, when it may read it: a built-in preset, or a file
 * under the server's `--allow-dir` folders (not hidden). Anything else is refused before a byte of
 * it is read, so an error quoting a line of the file cannot carry an arbitrary file back to the
 * client. The path is checked first; the returned guard then checks the file as opened, every
 * symlink followed, so a link under an allowed folder to a file outside it is refused too.
 * Undefined for a built-in preset, which needs no guard.
 */
export function mcpPresetGuard(nameOrPath: string, cwd: string, allowDirs: readonly string[], env: NodeJS.ProcessEnv): FileRules['guard'] {
  const path = resolvePresetPath(nameOrPath, cwd);
  const builtin = realFolder(packagePath('presets'));
  if (realFolder(resolve(path, '..')) === builtin) return undefined;
  const roots = allowDirs.map((d) => realFolder(resolve(cwd, d)));
  const confinement: Confinement = {
    chooser: 'mcp',
    roots,
    env,
    refuse: (why) =>
      new InputError('MCP_PRESET_REFUSED', `The preset file \`${nameOrPath}\` is refused: ${why}.`, {
        hint: roots.length === 0
          ? 'Use a built-in preset (conclave_presets lists them), or start the server with `conclave mcp --allow-dir DIR` and keep preset files under DIR.'
          : `Use a built-in preset, or a preset file under ${roots.join(' or ')}.`,
      }),
  };
  return confinedGuard(confinedPath(path, cwd, confinement), confinement);
}
