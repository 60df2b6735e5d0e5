#!/usr/bin/env bash
# Builds the release archive, installs it into an empty prefix with the network off (a network
# namespace with only loopback: `unshare -n`, and `ip` to bring loopback up) and an empty npm cache, then runs --version, a demo
# and verify from the installed copy, with no node_modules of the checkout in reach.
# `npm run check:release -- --node PATH` does it for the archive of another Node line, run on that line.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

target=$(command -v node)
case "${1:-}" in
  --node) target=${2:?--node needs a path}; [ -x "$target/bin/node" ] && target="$target/bin/node" ;;
  --node=*) target=${1#--node=}; [ -x "$target/bin/node" ] && target="$target/bin/node" ;;
  "") ;;
  *) echo "check-release: unknown argument $1 (use --node PATH)" >&2; exit 2 ;;
esac
target=$(cd "$(dirname "$target")" && pwd)/$(basename "$target")

if ! unshare -n true 2>/dev/null; then
  echo "check-release: \`unshare -n\` is not permitted here; run this check as root (or with CAP_SYS_ADMIN) to install with the network off." >&2
  exit 2
fi

archive=$(node scripts/release.mjs --node "$target" | tail -1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
# A fresh network namespace has only loopback, and that down: bring it up (the demo's simulator listens there), nothing else.
offline() { unshare -n -- env -i PATH="$prefix/bin:$(dirname "$target"):/usr/bin:/bin:/usr/sbin:/sbin" HOME="$work/home" npm_config_cache="$work/npm-cache" sh -c 'ip link set lo up && exec "$@"' sh "$@"; }

echo "== install $(basename "$archive") ($(du -h "$archive" | cut -f1)) offline into an empty prefix, for node $("$target" --version)"
start=$(date +%s%N)
offline npm install -g --offline --ignore-scripts --no-audit --no-fund --prefix "$prefix" "$archive" >/dev/null
echo "installed in $(( ($(date +%s%N) - start) / 1000000 )) ms"

installed="$prefix/lib/node_modules/conclave"
for dev in vitest drizzle-kit playwright-core tsx typescript esbuild fast-check; do
  if [ -e "$installed/node_modules/$dev" ]; then
    echo "check-release: the archive holds the dev dependency $dev." >&2
    exit 1
  fi
done

cd "$work"
echo "== conclave --version"
version=$(offline conclave --version)
echo "$version"
case "$version" in
  *"(release $("$target" -p 'process.platform + "-" + process.arch') node$("$target" -p 'process.versions.node.split(".")[0]')"*) ;;
  *) echo "check-release: --version does not name the release build: $version" >&2; exit 1 ;;
esac

echo "== conclave demo"
offline conclave demo --db "$work/demo.db" --quiet >/dev/null
echo "== conclave verify --all"
offline conclave verify --all --db "$work/demo.db"
engine=$(offline conclave show "$(offline conclave list --db "$work/demo.db" --json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.parse(s)[0].id))')" --db "$work/demo.db" --json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.parse(s).engineVersion))')
echo "record engine version: $engine"
[ "$engine" = "$version" ] || { echo "check-release: the record's engine version ($engine) is not the build's ($version)." >&2; exit 1; }
echo "== conclave mcp (its SDK travels inside the bundle, not in node_modules)"
hello='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"check-release","version":"1"}}}'
reply=$(echo "$hello" | offline conclave mcp --db "$work/demo.db" 2>/dev/null)
case "$reply" in
  *'"serverInfo":{"name":"conclave"'*) echo "initialize answered" ;;
  *) echo "check-release: conclave mcp did not answer the MCP handshake: $reply" >&2; exit 1 ;;
esac
echo "== the installed binary is the one for node $("$target" --version)"
offline node -e "require('$prefix/lib/node_modules/conclave/node_modules/better-sqlite3')(':memory:').close()"
echo "check-release: ok"
