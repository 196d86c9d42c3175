#!/usr/bin/env bash
# make test-pg: the whole vitest suite against a real PostgreSQL 15 server with pgvector, several
# connections per test file (the embedded PGlite of `make test` has one), so the race and
# multi-instance tests run for real.
#
# 1. Installs PostgreSQL 15 from Debian and builds pgvector from Debian trixie's source package when
#    missing (docs: /work/shared/design/toolchain.md). Needs root only for that; a no-op when both
#    are there. The machine's own apt lists are never changed: the trixie source list lives in a
#    private directory.
# 2. Starts a throwaway server: initdb into a temporary directory (as the `postgres` user when run as
#    root), a free port on 127.0.0.1, its unix socket in that directory, fsync off.
# 3. Runs `npm test` with TEST_DATABASE_URL pointing at it (test/global-setup.ts migrates a template
#    database once; each test file gets its own copy), then always stops the server and deletes its
#    directory. The exit code is vitest's.
#
# Extra arguments go to vitest: scripts/test-pg.sh test/concurrency
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive CI=true

PG_MAJOR=15
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
PGVECTOR_SUITE=trixie # bookworm has PostgreSQL 15 but no pgvector package

log() { echo "test-pg: $*" >&2; }
as_root_or_die() {
  [ "$(id -u)" = 0 ] || { log "$1 is missing; run as root once to install it (apt-get)"; exit 1; }
}

# --- 1. PostgreSQL 15 and pgvector -------------------------------------------------------------
apt_install() {
  # Try the lists the machine has first; refresh them only when a package cannot be found.
  apt-get install -y -qq --no-install-recommends "$@" </dev/null >/dev/null 2>&1 && return
  log "apt-get update (the machine's own sources)"
  apt-get update -qq </dev/null >/dev/null
  apt-get install -y -qq --no-install-recommends "$@" </dev/null >/dev/null
}

if [ ! -x "$PG_BIN/postgres" ]; then
  as_root_or_die "PostgreSQL $PG_MAJOR"
  log "installing postgresql-$PG_MAJOR (Debian package)"
  apt_install postgresql-$PG_MAJOR
fi

have_pgvector() {
  [ -x "$PG_BIN/pg_config" ] || return 1
  [ -f "$("$PG_BIN/pg_config" --sharedir)/extension/vector.control" ] && [ -f "$("$PG_BIN/pg_config" --pkglibdir)/vector.so" ]
}

if ! have_pgvector; then
  as_root_or_die "pgvector for PostgreSQL $PG_MAJOR"
  log "building pgvector from Debian $PGVECTOR_SUITE's source package"
  apt_install postgresql-server-dev-$PG_MAJOR build-essential
  work=$(mktemp -d "${TMPDIR:-/tmp}/pgvector-build-XXXXXX")
  # A sources list, package lists and no caches of our own: the machine's apt state stays as it was.
  mkdir -p "$work/lists/partial" "$work/src"
  echo "deb-src http://deb.debian.org/debian $PGVECTOR_SUITE main" >"$work/sources.list"
  private_apt=(
    -o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$work/lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
    -o APT::Sandbox::User=root
  )
  apt-get "${private_apt[@]}" update -qq </dev/null >/dev/null
  (cd "$work/src" && apt-get "${private_apt[@]}" source --download-only -qq pgvector </dev/null >/dev/null)
  tar -xzf "$work"/src/pgvector_*.orig.tar.gz -C "$work/src"
  # OPTFLAGS="": no -march=native, so the library runs on any x86-64.
  make -s -C "$work"/src/pgvector-*/ -j"$(nproc)" PG_CONFIG="$PG_BIN/pg_config" OPTFLAGS="" >/dev/null
  make -s -C "$work"/src/pgvector-*/ PG_CONFIG="$PG_BIN/pg_config" OPTFLAGS="" install >/dev/null
  rm -rf "$work"
  have_pgvector || { log "pgvector did not install"; exit 1; }
fi

# --- 2. A throwaway server ---------------------------------------------------------------------
make -s install >&2 # node_modules (vitest; node 24 for the free-port probe)
NODE=node_modules/.bin/node

run_pg() {
  # PostgreSQL refuses to run as root.
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/workspace-api-pg-XXXXXX")
cleanup() {
  if [ -f "$dir/data/postmaster.pid" ]; then run_pg "$PG_BIN/pg_ctl" stop -D "$dir/data" -m immediate -s >/dev/null 2>&1 || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
chmod 700 "$dir"
if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi

run_pg "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null

free_port() {
  "$NODE" -e "const s = require('node:net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })"
}

started=
for attempt in 1 2 3; do
  port=$(free_port)
  # Durability is worthless for a throwaway server; connections: a pool of 10 per test file and
  # per test server, several files at once.
  if run_pg "$PG_BIN/pg_ctl" start -D "$dir/data" -l "$dir/server.log" -w -t 60 -s -o \
    "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" </dev/null; then
    started=1
    break
  fi
  log "server did not start on port $port (attempt $attempt)"
done
if [ -z "$started" ]; then
  tail -n 30 "$dir/server.log" >&2 || true
  exit 1
fi
export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
log "PostgreSQL $("$PG_BIN/postgres" -V | awk '{print $3}') on $TEST_DATABASE_URL ($dir)"

# --- 3. The suite ------------------------------------------------------------------------------
set +e
npm run --silent test -- "$@" </dev/null
code=$?
set -e
exit $code
