#!/usr/bin/env bash
# A throwaway PostgreSQL 15 server with pgvector, for `make test-pg` (scripts/test-pg.sh) and the
# real-server rows of `make bench` (bench/pg-server.ts).
#
#   scripts/pg-server.sh install              PostgreSQL 15 and pgvector, when missing (root only)
#   scripts/pg-server.sh start DIR [-c k=v]…  install, then a server in DIR; prints its URL
#   scripts/pg-server.sh stop DIR             stops that server and deletes DIR
#
# install: PostgreSQL 15 from Debian, and pgvector built from Debian trixie's source package
#   (docs: /work/shared/design/toolchain.md). Needs root only for that; a no-op when both are
#   there, and otherwise exits 1 saying what is missing. The machine's own apt lists are never
#   changed: the trixie source list lives in a private directory.
# start: initdb into DIR/data (DIR is created when absent; as the `postgres` user when run as
#   root), a free port on 127.0.0.1, the unix socket in DIR, fsync off (durability is worthless
#   here). Extra arguments are server settings added to the defaults. Prints
#   postgres://postgres@127.0.0.1:PORT/postgres on stdout; everything else goes to stderr.
#   PG_SYNCHRONOUS_COMMIT=on (default off) makes a commit wait for its WAL to reach the operating
#   system: one the server confirmed then survives `pg_ctl stop -m immediate` (the fault tests in
#   test/faults/ stop the server so; with off, recent confirmed commits are lost).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/throwaway-server.sh
export DEBIAN_FRONTEND=noninteractive

PG_MAJOR=15
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
PGVECTOR_SUITE=trixie # bookworm has PostgreSQL 15 but no pgvector package

log() { echo "pg-server: $*" >&2; }
as_root_or_die() {
  [ "$(id -u)" = 0 ] || { log "$1 is missing; run as root once to install it (apt-get)"; exit 1; }
}
usage() { log "usage: $0 install | start DIR [-c name=value]... | stop DIR"; exit 2; }

# --- install: PostgreSQL 15 and pgvector -------------------------------------------------------
apt_install() {
  # Try the lists the machine has first; refresh them only when a package cannot be found.
  apt-get install -y -qq --no-install-recommends "$@" </dev/null >/dev/null 2>&1 && return
  log "apt-get update (the machine's own sources)"
  apt-get update -qq </dev/null >/dev/null
  apt-get install -y -qq --no-install-recommends "$@" </dev/null >/dev/null
}

have_pgvector() {
  [ -x "$PG_BIN/pg_config" ] || return 1
  [ -f "$("$PG_BIN/pg_config" --sharedir)/extension/vector.control" ] && [ -f "$("$PG_BIN/pg_config" --pkglibdir)/vector.so" ]
}

install() {
  if [ ! -x "$PG_BIN/postgres" ]; then
    as_root_or_die "PostgreSQL $PG_MAJOR"
    log "installing postgresql-$PG_MAJOR (Debian package)"
    apt_install postgresql-$PG_MAJOR
  fi
  if ! have_pgvector; then
    as_root_or_die "pgvector for PostgreSQL $PG_MAJOR"
    log "building pgvector from Debian $PGVECTOR_SUITE's source package"
    apt_install postgresql-server-dev-$PG_MAJOR build-essential
    local work
    work=$(mktemp -d "${TMPDIR:-/tmp}/pgvector-build-XXXXXX")
    # A sources list, package lists and no caches of our own: the machine's apt state stays as it was.
    mkdir -p "$work/lists/partial" "$work/src"
    echo "deb-src http://deb.debian.org/debian $PGVECTOR_SUITE main" >"$work/sources.list"
    local private_apt=(
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
}

# --- start / stop: a throwaway server ----------------------------------------------------------


start() {
  local dir=$1
  shift
  install
  mkdir -p "$dir"
  chmod 700 "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
  as_postgres "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null

  local sync=${PG_SYNCHRONOUS_COMMIT:-off}
  case $sync in on | off | local) ;; *) log "PG_SYNCHRONOUS_COMMIT must be on, off or local, got \"$sync\""; exit 2 ;; esac
  # Connections: a pool of 10 per test file and per test server, several files at once.
  local settings="-k $dir -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off -c synchronous_commit=$sync -c full_page_writes=off"
  if [ $# -gt 0 ]; then settings="$settings $*"; fi
  local port attempt
  for attempt in 1 2 3; do
    port=$(free_port)
    if as_postgres "$PG_BIN/pg_ctl" start -D "$dir/data" -l "$dir/server.log" -w -t 60 -s -o "-p $port $settings" </dev/null >&2; then
      local url="postgres://postgres@127.0.0.1:$port/postgres"
      log "PostgreSQL $("$PG_BIN/postgres" -V | awk '{print $3}') on $url ($dir)"
      echo "$url"
      return
    fi
    log "server did not start on port $port (attempt $attempt)"
  done
  tail -n 30 "$dir/server.log" >&2 || true
  exit 1
}

stop() {
  local dir=$1
  if [ -f "$dir/data/postmaster.pid" ]; then as_postgres "$PG_BIN/pg_ctl" stop -D "$dir/data" -m immediate -s >/dev/null 2>&1 || true; fi
  rm -rf "$dir"
}

case "${1:-}" in
  install) [ $# = 1 ] || usage; install ;;
  start) [ $# -ge 2 ] || usage; shift; start "$@" ;;
  stop) [ $# = 2 ] || usage; stop "$2" ;;
  *) usage ;;
esac
