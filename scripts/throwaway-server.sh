# Shell functions the throwaway servers share (scripts/pg-server.sh, scripts/pgbouncer.sh), sourced
# from the repository's root.

# Runs a command as the `postgres` user when this runs as root: PostgreSQL and PgBouncer refuse root.
as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# A free loopback port. The project's Node 24 when installed, else whatever node is on the PATH
# (npm scripts put it there).
free_port() {
  local node=node_modules/.bin/node
  [ -x "$node" ] || node=node
  "$node" -e "const s = require('node:net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })"
}
