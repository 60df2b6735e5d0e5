#!/usr/bin/env bash
# Builds the release archive, then, for each Node line given, installs it into an empty prefix with the
# network off (a network namespace with only loopback: `unshare -n`, and `ip` to bring loopback up) and
# an empty npm cache, and runs --version, a demo, verify, list | true and an MCP handshake from the
# installed copy, with no node_modules of the checkout in reach.
# `npm run check:release -- --node PATH [--node PATH …]` checks the one archive on each of those Nodes
# (a node binary, or a folder with bin/node); with none, on the Node on PATH. `--with-embedded` checks the
# archive built with node-llama-cpp (`npm run release -- --with-embedded`, after `npm run embedded:install`)
# and also runs, offline, a debate on a tiny random-weight GGUF model through its llama.cpp.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

targets=()
embedded=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    --with-embedded) embedded="--with-embedded"; shift; continue ;;
    --node) given=${2:?--node needs a path}; shift 2 ;;
    --node=*) given=${1#--node=}; shift ;;
    *) echo "check-release: unknown argument $1 (use --node PATH)" >&2; exit 2 ;;
  esac
  [ -x "$given/bin/node" ] && given="$given/bin/node"
  [ -x "$given" ] || { echo "check-release: there is no node at $given." >&2; exit 2; }
  targets+=("$(cd "$(dirname "$given")" && pwd)/$(basename "$given")")
done
[ "${#targets[@]}" -gt 0 ] || targets=("$(command -v node)")

if ! unshare -n true 2>/dev/null; then
  echo "check-release: \`unshare -n\` is not permitted here; run this check as root (or with CAP_SYS_ADMIN) to install with the network off." >&2
  exit 2
fi

archive=$(node scripts/release.mjs --node "${targets[0]}" $embedded | tail -1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "$embedded" ]; then
  # The tiny model is written here, with the checkout's tools, before anything goes offline.
  mkdir -p "$work/gguf"
  npx tsx -e "import { writeTinyGguf } from './test/helpers/gguf.ts'; writeTinyGguf(process.argv[1]);" "$work/gguf/tiny.gguf"
  printf '%s\n' 'name: tiny' 'agents:' '  - { id: a, model: tiny }' '  - { id: b, model: tiny }' 'judge: { model: tiny }' 'synthesizer: { model: tiny }' 'protocol: { maxRounds: 1, maxAnswerTokens: 160 }' > "$work/tiny.yaml"
fi

check_on() {
target=$1
line=$("$target" -p 'process.versions.node.split(".")[0]')
run="$work/node$line"
mkdir -p "$run"
prefix="$run/prefix"
# A fresh network namespace has only loopback, and that down: bring it up (the demo's simulator listens there), nothing else.
offline() { unshare -n -- env -i PATH="$prefix/bin:$(dirname "$target"):/usr/bin:/bin:/usr/sbin:/sbin" HOME="$run/home" npm_config_cache="$run/npm-cache" sh -c 'ip link set lo up && exec "$@"' sh "$@"; }

echo "== install $(basename "$archive") ($(du -h "$archive" | cut -f1)) offline into an empty prefix, on node $("$target" --version)"
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

cd "$run"
echo "== conclave --version"
version=$(offline conclave --version)
echo "$version"
case "$version" in
  *"(release $("$target" -p 'process.platform + "-" + process.arch') "*) ;;
  *) echo "check-release: --version does not name the release build: $version" >&2; exit 1 ;;
esac

echo "== conclave demo"
offline conclave demo --db "$run/demo.db" --quiet >/dev/null
echo "== conclave verify --all"
offline conclave verify --all --db "$run/demo.db"
echo "== conclave list | true (ends quietly)"
offline sh -c 'conclave list --db "$1" 2>"$2" | true' sh "$run/demo.db" "$run/list.err"
if [ -s "$run/list.err" ]; then
  echo "check-release: \`conclave list | true\` wrote to stderr on node $line:" >&2
  cat "$run/list.err" >&2
  exit 1
fi
engine=$(offline conclave show "$(offline conclave list --db "$run/demo.db" --json | "$target" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.parse(s)[0].id))')" --db "$run/demo.db" --json | "$target" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.parse(s).engineVersion))')
echo "record engine version: $engine"
[ "$engine" = "$version" ] || { echo "check-release: the record's engine version ($engine) is not the build's ($version)." >&2; exit 1; }
echo "== conclave mcp (its SDK travels inside the bundle, not in node_modules)"
hello='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"check-release","version":"1"}}}'
reply=$(echo "$hello" | offline conclave mcp --db "$run/demo.db" 2>/dev/null)
case "$reply" in
  *'"serverInfo":{"name":"conclave"'*) echo "initialize answered" ;;
  *) echo "check-release: conclave mcp did not answer the MCP handshake: $reply" >&2; exit 1 ;;
esac
if [ -n "$embedded" ]; then
  echo "== conclave run --embedded: a debate on a tiny GGUF model through the archive's llama.cpp"
  # A random-weight model may give no usable synthesis (exit 5); the record must be whole and sealed either way.
  status=0
  offline conclave run "Is a tiny model a useful test?" --preset "$work/tiny.yaml" --embedded "$work/gguf" --db "$run/tiny.db" --quiet >/dev/null 2>"$run/tiny.err" || status=$?
  case "$status" in
    0|5) ;;
    *) echo "check-release: the embedded debate exited $status:" >&2; cat "$run/tiny.err" >&2; exit 1 ;;
  esac
  offline conclave verify --all --db "$run/tiny.db"
fi
cd - >/dev/null
}

for target in "${targets[@]}"; do check_on "$target"; done
echo "check-release: ok on node $(for t in "${targets[@]}"; do "$t" -p 'process.versions.node'; done | paste -sd ' ')"
