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
/**
 * Dependencies only the command line uses, which its bundle carries whole: the MCP SDK (for
 * `conclave mcp` over stdio) would otherwise bring its HTTP server stack, about 90 packages, that
 * nothing here runs.
 */
const CLI_ONLY = new Set(['@modelcontextprotocol/sdk']);

/**
 * The top-level folders under node_modules that the runtime dependencies reach, leaving out CLI_ONLY
 * and what only they need. Each dependency is resolved from the package that needs it, as Node does.
 */
function runtimeFolders() {
  const modules = join(root, 'node_modules');
  const resolve = (dep, fromDir) => {
    // fromDir is root or a package folder; look in its node_modules, then each enclosing one.
    for (let dir = fromDir; ; ) {
      const candidate = join(dir, 'node_modules', dep);
      if (existsSync(join(candidate, 'package.json'))) return candidate;
      if (dir === root) return null;
      const up = dir.lastIndexOf(`${sep}node_modules${sep}`);
      dir = up < 0 ? root : dir.slice(0, up);
    }
  };
  const seen = new Set();
  const visit = (dir) => {
    if (seen.has(dir)) return;
    seen.add(dir);
    const pkgJson = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    for (const dep of Object.keys({ ...pkgJson.dependencies, ...pkgJson.optionalDependencies })) {
      if (dir === root && CLI_ONLY.has(dep)) continue;
      const found = resolve(dep, dir);
      if (found) visit(found);
    }
  };
  visit(root);
  // A nested package travels inside its top-level folder: keep the top-level folder.
  return new Set([...seen].filter((dir) => dir !== root).map((dir) => relative(modules, dir).split(`${sep}node_modules${sep}`)[0].split(sep).join('/')));
}

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
  const needed = runtimeFolders();
  const topLevel = production
    .filter((path) => !relative(join(root, 'node_modules'), path).includes(`${sep}node_modules${sep}`))
    .filter((path) => needed.has(relative(join(root, 'node_modules'), path).split(sep).join('/')));
  for (const path of topLevel) cpSync(path, join(pkg, 'node_modules', relative(join(root, 'node_modules'), path)), { recursive: true, dereference: true });
  // The native module needs only its binary and its JavaScript: not the SQLite sources or object files.
  const sqlite = join(pkg, 'node_modules', 'better-sqlite3');
  for (const leftover of ['deps', 'src', join('build', 'Release', 'obj'), join('build', 'Release', 'obj.target'), join('build', 'Release', '.deps'), join('build', 'deps'), join('build', 'Release', 'test_extension.node')]) {
    rmSync(join(sqlite, leftover), { recursive: true, force: true });
  }
  if (!existsSync(join(sqlite, 'build', 'Release', 'better_sqlite3.node'))) throw new Error('better-sqlite3 has no compiled binary in node_modules: run `npm ci` first.');

  // 4. A manifest that bundles those dependencies and builds nothing when installed.
  const dependencies = Object.fromEntries(Object.entries(manifest.dependencies).filter(([dep]) => !CLI_ONLY.has(dep)));
  const shipped = { ...manifest, dependencies, bundleDependencies: Object.keys(dependencies), files: [...manifest.files, 'README.md'] };
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
