#!/usr/bin/env bash
# Fails when src/store/schema.ts and the committed migrations/ disagree.
# `drizzle-kit check` does not compare them, so regenerate and look for changes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check-migrations: $(pwd) is not a git work tree; the check compares against committed files." >&2
  exit 2
fi

# stdin from /dev/null: a rename question would otherwise wait for an answer forever.
status=0
output=$(npx --no-install drizzle-kit generate </dev/null 2>&1) || status=$?
printf '%s\n' "$output"

if [ "$status" -ne 0 ]; then
  echo "check-migrations: drizzle-kit generate exited with status $status." >&2
  exit 1
fi
# drizzle-kit has exited 0 after failing, so read what it printed too.
if grep -Eq 'Error|ERROR' <<<"$output"; then
  echo "check-migrations: drizzle-kit generate reported an error (see above)." >&2
  exit 1
fi

changes=$(git status --porcelain --untracked-files=all -- migrations)
if [ -n "$changes" ]; then
  printf '%s\n' "$changes"
  echo "check-migrations: migrations/ does not match src/store/schema.ts." >&2
  echo "Run \`npm run db:generate\`, review the new migration and commit it (never edit a released one)." >&2
  exit 1
fi
echo "check-migrations: migrations/ matches the schema."
