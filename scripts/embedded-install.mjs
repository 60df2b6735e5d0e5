#!/usr/bin/env node
// `npm run embedded:install`: node-llama-cpp, pinned, with only this platform's CPU build of llama.cpp,
// in embedded-engine/ beside node_modules (where src/embedded/engine.ts looks for it). Not in
// node_modules: npm reifies whole trees, so `--omit=optional` there would also drop esbuild's and
// Vitest's platform binaries, and `npm ci` would remove it. Nothing is downloaded or built by its
// install script (--ignore-scripts): the prebuilt binary comes from the registry as a package.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const VERSION = '3.21.1';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const os = process.platform === 'darwin' ? 'mac' : process.platform === 'win32' ? 'win' : process.platform;
const cpu = process.arch === 'arm' ? 'armv7l' : process.arch;
const build = `@node-llama-cpp/${os}-${cpu}${os === 'mac' && cpu === 'arm64' ? '-metal' : ''}`;
const args = ['install', '--prefix', join(root, 'embedded-engine'), '--no-save', '--omit=optional', '--ignore-scripts', '--no-audit', '--no-fund', `node-llama-cpp@${VERSION}`, `${build}@${VERSION}`];
process.stderr.write(`embedded:install: npm ${args.join(' ')}\n`);
execFileSync('npm', args, { stdio: 'inherit', shell: process.platform === 'win32' });
