#!/usr/bin/env bash
# make test-pooler: the multi-instance suites through a connection pooler in transaction mode, as a
# growing deployment on a managed PostgreSQL runs (docs/deploying.md).
#
# 1. Installs PostgreSQL 15 with pgvector (scripts/pg-server.sh install) and PgBouncer
#    (scripts/pgbouncer.sh install) from Debian when missing (root only for that).
# 2. Starts a throwaway server (as scripts/test-pg.sh does) and a throwaway PgBouncer in front of
#    it: pool_mode transaction, default_pool_size TEST_POOLER_POOL_SIZE (default 20) per database,
#    connecting to the server over its unix socket (the tests tell the pooler's server connections
#    from direct ones by that).
# 3. Runs vitest on the suites that start several instances or processes, with TEST_DATABASE_URL
#    the server (templates, CREATE/DROP DATABASE) and TEST_POOLER_URL the pooler: every service
#    client and every spawned process then has the pooled address as DATABASE_URL, with
#    DATABASE_POOL_MODE=transaction and the server as DATABASE_DIRECT_URL
#    (test/support/database.ts). TEST_API_INSTANCES=3 and TEST_WORKERS=2 for the suites that take
#    their instance counts from test/concurrency/support.ts. Always stops both and deletes their
#    directories; the exit code is vitest's.
#
# Extra arguments replace the list of test files: scripts/test-pooler.sh test/pooler
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive CI=true

# --- 1. PostgreSQL 15, pgvector and PgBouncer --------------------------------------------------
scripts/pg-server.sh install
scripts/pgbouncer.sh install

# --- 2. A throwaway server and a pooler in front of it ------------------------------------------
make -s install >&2 # node_modules (vitest; node 24 for the free-port probe)

dir=$(mktemp -d "${TMPDIR:-/tmp}/workspace-api-pooler-XXXXXX")
# Both run as `postgres` when this runs as root: they must reach their own subdirectories.
chmod 711 "$dir"
cleanup() {
  scripts/pgbouncer.sh stop "$dir/pgbouncer" || true
  scripts/pg-server.sh stop "$dir/pg" || true
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
TEST_DATABASE_URL=$(scripts/pg-server.sh start "$dir/pg")
export TEST_POOLER_POOL_SIZE=${TEST_POOLER_POOL_SIZE:-20}
TEST_POOLER_URL=$(SERVER_SOCKET_DIR="$dir/pg" scripts/pgbouncer.sh start "$dir/pgbouncer" "$TEST_DATABASE_URL" "$TEST_POOLER_POOL_SIZE")
# The server's unix socket: the tests' own poolers connect through it too (test/pooler/support.ts).
export TEST_DATABASE_URL TEST_POOLER_URL TEST_DATABASE_SOCKET_DIR="$dir/pg"
export TEST_API_INSTANCES=${TEST_API_INSTANCES:-3} TEST_WORKERS=${TEST_WORKERS:-2}

# --- 3. The multi-instance suites ---------------------------------------------------------------
suites=(
  test/concurrency
  test/idempotency/two-instances.test.ts
  test/jobs/stream-instances.test.ts
  test/jobs/stream-revocation.test.ts
  test/process/worker-child.test.ts
  test/pooler
)
if [ $# -gt 0 ]; then suites=("$@"); fi
set +e
npm run --silent test -- "${suites[@]}" </dev/null
code=$?
set -e
exit $code
