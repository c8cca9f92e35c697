#!/usr/bin/env bash
# What the test suite needs besides the Python packages: Chromium (tests/browser), PostgreSQL 15 and Redis
# (the replica tests start their own throw-away servers from these binaries). Idempotent: when all are present
# it only checks and returns. As root it installs what is missing with apt; otherwise it fetches Playwright's
# Chromium when it can, and stops with one line naming the command to run for anything else. With the argument
# `bench` it also checks for wrk (bench/service_bench.py loads the server with it).
set -euo pipefail
BIN=${BIN:-.venv/bin}
missing=()
have_chromium() { command -v chromium >/dev/null || compgen -G "${PLAYWRIGHT_BROWSERS_PATH:-$HOME/.cache/ms-playwright}/chromium-*" >/dev/null; }
have_chromium || missing+=(chromium)
compgen -G "${PG_BINARIES:-/usr/lib/postgresql/*/bin/postgres}" >/dev/null || missing+=(postgresql)
command -v redis-server >/dev/null || missing+=(redis-server)
[ "${1:-}" = bench ] && { command -v wrk >/dev/null || missing+=(wrk); }
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "installing with apt-get: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi
rest=()
for name in "${missing[@]}"; do
  [ "$name" = chromium ] && "$BIN/playwright" install chromium >/dev/null 2>&1 && continue
  rest+=("$name")
done
[ ${#rest[@]} -eq 0 ] && exit 0
rest=${rest[*]}
echo "make ${1:-test} needs: $rest; run \`sudo apt-get install -y $rest\` (or \`$BIN/playwright install chromium\` for the browser), then \`make test\` again" >&2
exit 1
