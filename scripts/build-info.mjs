#!/usr/bin/env node
// Writes dist/build-info.json: which build this is, so `conclave --version` and every record's
// engine version say it. A checkout build names its commit (with -dirty for uncommitted changes);
// `npm run release` writes its own, naming the archive's platform.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function git(args) {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

/**
 * `target`: the platform and architecture a release archive is built for, when not this machine's. An archive
 * serves every supported Node line (its one native module is built on Node-API), so it names no line.
 */
export function buildInfo(kind, target = {}) {
  const commit = git(['rev-parse', '--short=12', 'HEAD']);
  const dirty = commit !== null && git(['status', '--porcelain', '--untracked-files=no']) !== '';
  const platform = target.platform ?? process.platform;
  const arch = target.arch ?? process.arch;
  const where = `${platform}-${arch}`;
  const at = commit ? `${commit}${dirty ? '-dirty' : ''}` : null;
  const label = kind === 'release' ? `release ${where}${at ? ` ${at}` : ''}` : `checkout ${at ?? 'without git'}`;
  return { kind, label, commit, dirty, platform, arch, node: process.versions.node, builtAt: new Date().toISOString() };
}

export function writeBuildInfo(dir, kind, target) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'build-info.json'), `${JSON.stringify(buildInfo(kind, target), null, 2)}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) writeBuildInfo(join(root, 'dist'), 'checkout');
