#!/usr/bin/env node
// Bundles the command line into dist/cli-bundle/ with esbuild: one module graph resolved at build
// time instead of at every start. Commands stay lazy (split chunks loaded by dynamic import), and
// better-sqlite3 stays outside, with its native binary. `bin/conclave.js` runs the bundle when it exists.
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist', 'cli-bundle');
rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: [join(root, 'src', 'cli', 'entry.ts')],
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  external: ['better-sqlite3', 'node-llama-cpp'],
  // Bundled CommonJS dependencies (yargs' helpers) call require: give the ES module one.
  banner: { js: "import { createRequire as conclaveRequire } from 'node:module'; const require = conclaveRequire(import.meta.url);" },
  // Whitespace and syntax only: parsing less text is most of a command's start-up, and names stay readable in --debug traces.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});
