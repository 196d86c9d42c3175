#!/usr/bin/env bash
# A throwaway PgBouncer in transaction mode in front of a PostgreSQL server, for `make test-pooler`
# (scripts/test-pooler.sh), the pooler tests (test/pooler/) and the pooled soak.
#
#   scripts/pgbouncer.sh install                          PgBouncer from Debian, when missing (root only)
#   scripts/pgbouncer.sh start DIR SERVER_URL [POOL_SIZE] install, then a pooler in DIR; prints its URL
#   scripts/pgbouncer.sh stop DIR                         stops that pooler and deletes DIR
#
# start: every database name is passed on to SERVER_URL's host and port (the `*` fallback), so test
#   databases made later are reachable without a reload. Connections to the server go through its
#   unix socket when SERVER_SOCKET_DIR is set (scripts/pg-server.sh puts the socket in its DIR): the
#   pooler's server connections then have no client address in pg_stat_activity, which is how the
#   tests tell them from the direct ones (test/pooler/). pool_mode transaction, default_pool_size
#   POOL_SIZE (default 20) per database and user, auth trust, max_client_conn 1000, `postgres` an
#   admin (SHOW POOLS, SHOW CLIENTS on the `pgbouncer` database), and the startup
#   parameters postgres.js and node-postgres send that PgBouncer 1.18 does not track ignored
#   (extra_float_digits, options); never statement_timeout and the like, which must stay refused
#   (docs/deploying.md). PgBouncer refuses to run as root: it runs as `postgres` then, with its ini,
#   auth file, log and pid file in DIR, owned by that user. Prints
#   postgres://postgres@127.0.0.1:PORT/postgres on stdout; everything else goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/throwaway-server.sh
export DEBIAN_FRONTEND=noninteractive

log() { echo "pgbouncer: $*" >&2; }
usage() { log "usage: $0 install | start DIR SERVER_URL [POOL_SIZE] | stop DIR"; exit 2; }

install() {
  [ -x /usr/sbin/pgbouncer ] && return
  [ "$(id -u)" = 0 ] || { log "PgBouncer is missing; run as root once to install it (apt-get)"; exit 1; }
  log "installing pgbouncer (Debian package)"
  apt-get install -y -qq --no-install-recommends pgbouncer </dev/null >/dev/null 2>&1 || {
    apt-get update -qq </dev/null >/dev/null
    apt-get install -y -qq --no-install-recommends pgbouncer </dev/null >/dev/null
  }
}



start() {
  local dir=$1 server=$2 pool_size=${3:-20}
  install
  local rest=${server#postgres://} hostport host port
  rest=${rest#*@}
  hostport=${rest%%/*}
  host=${hostport%%:*}
  port=${hostport##*:}
  [ "$port" != "$hostport" ] || port=5432
  local target="host=$host port=$port"
  if [ -n "${SERVER_SOCKET_DIR:-}" ]; then target="host=$SERVER_SOCKET_DIR port=$port"; fi
  mkdir -p "$dir"
  chmod 700 "$dir"
  echo '"postgres" ""' >"$dir/userlist.txt"
  local attempt listen
  for attempt in 1 2 3; do
    listen=$(free_port)
    cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = $target

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $listen
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
default_pool_size = $pool_size
max_client_conn = 1000
admin_users = postgres
ignore_startup_parameters = extra_float_digits,options
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
    if [ "$(id -u)" = 0 ]; then chown -R postgres: "$dir"; fi
    if as_postgres /usr/sbin/pgbouncer -d -q "$dir/pgbouncer.ini" </dev/null >&2; then
      local i
      for i in $(seq 1 50); do
        if (echo >"/dev/tcp/127.0.0.1/$listen") 2>/dev/null; then
          log "PgBouncer $(/usr/sbin/pgbouncer --version | head -1 | awk '{print $2}') (transaction mode, pool $pool_size) on 127.0.0.1:$listen in front of $target ($dir)"
          echo "postgres://postgres@127.0.0.1:$listen/postgres"
          return
        fi
        sleep 0.1
      done
    fi
    log "pgbouncer did not start on port $listen (attempt $attempt)"
    stop_pooler "$dir" keep
  done
  tail -n 30 "$dir/pgbouncer.log" >&2 || true
  exit 1
}

stop_pooler() {
  local dir=$1
  if [ -f "$dir/pgbouncer.pid" ]; then
    local pid
    pid=$(cat "$dir/pgbouncer.pid")
    # A stopped (SIGSTOP) pooler must run again to act on SIGINT.
    kill -CONT "$pid" 2>/dev/null || true
    kill -INT "$pid" 2>/dev/null || true
    local i
    for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  [ "${2:-}" = keep ] || rm -rf "$dir"
}

case "${1:-}" in
  install) [ $# = 1 ] || usage; install ;;
  start) [ $# -ge 3 ] && [ $# -le 4 ] || usage; shift; start "$@" ;;
  stop) [ $# = 2 ] || usage; stop_pooler "$2" ;;
  *) usage ;;
esac
