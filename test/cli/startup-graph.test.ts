import { build, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';

/**
 * What the everyday commands load before they run, from the bundle's import graph as esbuild
 * resolves it at build. A new import that drags zod, yargs, drizzle or the engine into a plain `list`
 * fails here, before it shows as start-up time (`npm run bench:startup`).
 */
const staticImports = new Map<string, string[]>();
const lazyImports = new Map<string, string[]>();

beforeAll(async () => {
  const result = await build({
    entryPoints: [packagePath('src', 'cli', 'entry.ts')],
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    outdir: packagePath('dist', 'startup-graph-check'),
    external: ['better-sqlite3'],
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  for (const [file, input] of Object.entries((result.metafile as Metafile).inputs)) {
    staticImports.set(file, input.imports.filter((i) => i.kind !== 'dynamic-import').map((i) => i.path));
    lazyImports.set(file, input.imports.filter((i) => i.kind === 'dynamic-import').map((i) => i.path));
  }
}, 60_000);

/** The heavy modules loaded statically from these files, each with the path that leads to it. */
function heavyReached(from: string[]): string[] {
  const seen = new Map<string, string[]>(from.map((f) => [f, [f]]));
  const queue = [...from];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const next of staticImports.get(file) ?? []) {
      if (seen.has(next)) continue;
      seen.set(next, [...seen.get(file)!, next]);
      queue.push(next);
    }
  }
  const heavy = (path: string): boolean => /node_modules\/(zod|yargs|ollama|undici|yaml|drizzle-orm)\//.test(path) || path.startsWith('src/engine/runner');
  return [...seen].filter(([file]) => heavy(file)).map(([, path]) => path.join(' → '));
}

describe('what an everyday command loads', () => {
  it('starts without yargs when the fast path takes the line', () => {
    expect(heavyReached(['src/cli/entry.ts'])).toEqual([]);
  });

  it.each(['list', 'show', 'export', 'verify'])('%s reads the record without zod, yargs, drizzle or the engine', (command) => {
    const file = `src/cli/commands/${command}.ts`;
    // The command's own lazy imports are its work: they load when it runs.
    expect(heavyReached([file, ...(lazyImports.get(file) ?? [])])).toEqual([]);
  });

  it('opens a record for reading without drizzle, which only an older record that needs upgrading loads', () => {
    expect(lazyImports.get('src/cli/shared.ts')).toContain('src/store/open-read.ts');
    expect(heavyReached(['src/store/open-read.ts'])).toEqual([]);
    expect(lazyImports.get('src/store/open-read.ts')).toEqual(['src/store/migrate.ts']);
    expect(heavyReached(['src/store/migrate.ts']).some((path) => path.includes('node_modules/drizzle-orm/'))).toBe(true);
  });
});
