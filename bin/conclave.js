#!/usr/bin/env node
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli/entry.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('conclave: the compiled CLI is missing (dist/). Run `npm run build` in the package folder, or reinstall with `npm ci`.\n');
  process.exit(1);
}
await import(entry.href);
