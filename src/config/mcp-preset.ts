import { resolve } from 'node:path';
import { InputError } from '../errors.js';
import { packagePath } from '../package-root.js';
import { resolvePresetPath } from './load-preset.js';
import { confinedPath, realFolder } from './trust.js';

/**
 * The preset an MCP client names, when it may read it: a built-in preset, or a file under the
 * server's `--allow-dir` folders (not hidden). Anything else is refused before a byte of it is
 * read, so an error quoting a line of the file cannot carry an arbitrary file back to the client.
 */
export function mcpPresetPath(nameOrPath: string, cwd: string, allowDirs: readonly string[], env: NodeJS.ProcessEnv): string {
  const path = resolvePresetPath(nameOrPath, cwd);
  const builtin = realFolder(packagePath('presets'));
  if (realFolder(resolve(path, '..')) === builtin) return path;
  const roots = allowDirs.map((d) => realFolder(resolve(cwd, d)));
  return confinedPath(path, cwd, {
    chooser: 'mcp',
    roots,
    env,
    refuse: (why) =>
      new InputError('MCP_PRESET_REFUSED', `The preset file \`${nameOrPath}\` is refused: ${why}.`, {
        hint: roots.length === 0
          ? 'Use a built-in preset (conclave_presets lists them), or start the server with `conclave mcp --allow-dir DIR` and keep preset files under DIR.'
          : `Use a built-in preset, or a preset file under ${roots.join(' or ')}.`,
      }),
  });
}
