#!/usr/bin/env bash
# make test-pg: the vitest suite's files that open a database (scripts/database-tests.ts; the rest
# would run exactly as in `make test`) against a real PostgreSQL 15 server with pgvector, several
# connections per test file (the embedded PGlite of `make test` has one), so the race and
# multi-instance tests run for real.
#
# 1. Installs PostgreSQL 15 from Debian and builds pgvector from Debian trixie's source package when
#    missing (scripts/pg-server.sh install; needs root only for that, a no-op when both are there).
# 2. Starts a throwaway server (scripts/pg-server.sh start): initdb into a temporary directory (as
#    the `postgres` user when run as root), a free port on 127.0.0.1, its unix socket in that
#    directory, fsync off.
# 3. Runs `npm test` with TEST_DATABASE_URL pointing at it (test/global-setup.ts migrates a template
#    database once; each test file gets its own copy), then always stops the server and deletes its
#    directory. The exit code is vitest's.
#
# Extra arguments go to vitest instead of that list: scripts/test-pg.sh test/concurrency
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive CI=true

# --- 1. PostgreSQL 15 and pgvector -------------------------------------------------------------
scripts/pg-server.sh install

# --- 2. A throwaway server ---------------------------------------------------------------------
make -s install >&2 # node_modules (vitest; node 24 for the free-port probe)

dir=$(mktemp -d "${TMPDIR:-/tmp}/workspace-api-pg-XXXXXX")
cleanup() { scripts/pg-server.sh stop "$dir"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
TEST_DATABASE_URL=$(scripts/pg-server.sh start "$dir")
export TEST_DATABASE_URL

# --- 3. The suite ------------------------------------------------------------------------------
if [ $# -eq 0 ]; then
  mapfile -t files < <(node_modules/.bin/node scripts/database-tests.ts)
  set -- "${files[@]}"
fi
set +e
npm run --silent test -- "$@" </dev/null
code=$?
set -e
exit $code
