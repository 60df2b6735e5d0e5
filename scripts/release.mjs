#!/usr/bin/env node
// `npm run release`: one archive that installs Conclave on a machine with no network and no
// compiler, for this machine's Node major version, platform and CPU architecture. It is an npm
// package with its runtime dependencies bundled (better-sqlite3's compiled binary included), so
// `npm install -g --offline --ignore-scripts ./conclave-….tgz` needs nothing else.
// Prints the archive's path as its last line.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeBuildInfo } from './build-info.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const name = `conclave-${manifest.version}-${process.platform}-${process.arch}`;
const log = (line) => process.stderr.write(`release: ${line}\n`);
const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

// 1. A fresh build of the library and the bundled command line.
log('building');
npm(['run', '--silent', 'build'], root);

// 2. The package as it ships: built code, migrations, presets, the viewer's files.
const stage = mkdtempSync(join(tmpdir(), 'conclave-release-'));
const pkg = join(stage, 'package');
try {
  for (const part of [...manifest.files, 'README.md']) cpSync(join(root, part), join(pkg, part), { recursive: true });
  writeBuildInfo(join(pkg, 'dist'), 'release');

  // 3. Runtime dependencies only, copied from the tree npm installed here (better-sqlite3 as compiled here).
  const production = npm(['ls', '--omit=dev', '--all', '--parseable'], root)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith(join(root, 'node_modules') + sep));
  const topLevel = production.filter((path) => !relative(join(root, 'node_modules'), path).includes(`${sep}node_modules${sep}`));
  for (const path of topLevel) cpSync(path, join(pkg, 'node_modules', relative(join(root, 'node_modules'), path)), { recursive: true, dereference: true });
  // The native module needs only its binary and its JavaScript: not the SQLite sources or object files.
  const sqlite = join(pkg, 'node_modules', 'better-sqlite3');
  for (const leftover of ['deps', 'src', join('build', 'Release', 'obj'), join('build', 'Release', 'obj.target'), join('build', 'Release', '.deps'), join('build', 'deps'), join('build', 'Release', 'test_extension.node')]) {
    rmSync(join(sqlite, leftover), { recursive: true, force: true });
  }
  if (!existsSync(join(sqlite, 'build', 'Release', 'better_sqlite3.node'))) throw new Error('better-sqlite3 has no compiled binary in node_modules: run `npm ci` first.');

  // 4. A manifest that bundles those dependencies and builds nothing when installed.
  const shipped = { ...manifest, bundleDependencies: Object.keys(manifest.dependencies), files: [...manifest.files, 'README.md'] };
  delete shipped.devDependencies;
  delete shipped.scripts;
  writeFileSync(join(pkg, 'package.json'), `${JSON.stringify(shipped, null, 2)}\n`);

  // 5. The archive: an npm package tarball (everything under package/), written with tar rather than
  // `npm pack`, which would apply each bundled dependency's own file list and leave out better-sqlite3's binary.
  const out = join(root, 'release');
  mkdirSync(out, { recursive: true });
  const archive = join(out, `${name}.tgz`);
  execFileSync('tar', ['-czf', archive, '--owner=0', '--group=0', '-C', stage, 'package'], { stdio: ['ignore', 'ignore', 'inherit'] });
  log(`${(statSync(archive).size / 2 ** 20).toFixed(1)} MiB, ${topLevel.length} runtime packages bundled; install with \`npm install -g --offline --ignore-scripts ${relative(process.cwd(), archive)}\``);
  process.stdout.write(`${archive}\n`);
} finally {
  rmSync(stage, { recursive: true, force: true });
}
