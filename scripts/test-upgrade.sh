#!/usr/bin/env bash
# make test-upgrade: an upgrade without downtime, for real (issue 37; test/upgrade/harness.ts). The
# previous release (releases/previous.json) serves a large workspace under load on PostgreSQL 15
# while this tree's `migrate` runs, then both releases serve, then this tree alone; the run fails
# on any 5xx or transport error, on a request slower than 2 s while `migrate` runs, and on a job
# that does not succeed. A second run shows the harness can fail: a throwaway migration that
# rewrites document_chunks (test/upgrade/unsafe-migration.test.ts).
#
# 1. Installs PostgreSQL 15 and pgvector when missing (scripts/pg-server.sh install; root only for that).
# 2. The previous release beside the working tree, in .tmp/previous-release/<commit> (`git archive`
#    of its commit): its node_modules are ours (a link) when our package-lock.json pins every
#    package its own does, at the same version, and the patches are the same; else an `npm ci` of its lockfile (45-75 s, from npm's cache) in
#    $UPGRADE_CACHE/node_modules-<hash of that lockfile>, kept for the next run, also of a fresh
#    clone (UPGRADE_CACHE: ${XDG_CACHE_HOME:-~/.cache}/workspace-api/previous-release by default);
#    then its embedding model (scripts/install-model.ts, into that cache, a check when it is there).
# 3. A throwaway server (scripts/pg-server.sh start), then vitest with test/upgrade/vitest.config.ts
#    (UPGRADE_SERVER_URL, UPGRADE_PREVIOUS_RELEASE); always stops the server and deletes its
#    directory. The exit code is vitest's.
#
# UPGRADE_CHUNKS (default 100000), UPGRADE_PHASE_S (default 20) and UPGRADE_CLIENTS (default 3)
# go to the harness. Extra arguments go to vitest: scripts/test-upgrade.sh test/upgrade/upgrade.test.ts
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive CI=true
started=$SECONDS
say() { echo "test-upgrade: $* ($((SECONDS - started)) s)" >&2; }

# --- 1. PostgreSQL 15 and pgvector -------------------------------------------------------------
scripts/pg-server.sh install
make -s install >&2 # node_modules (vitest; node 24)
node=node_modules/.bin/node

# --- 2. The previous release -------------------------------------------------------------------
commit=$($node -p 'JSON.parse(require("node:fs").readFileSync("releases/previous.json", "utf8")).commit')
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
  say "the previous release's commit $commit is not in this clone (a shallow clone?): git fetch it first"
  exit 1
fi
releases=.tmp/previous-release
previous=$releases/$commit
cache=${UPGRADE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/workspace-api/previous-release}
if [ ! -f "$previous/package-lock.json" ]; then
  rm -rf "$previous" "$previous.partial"
  mkdir -p "$previous.partial"
  git archive "$commit" | tar -x -C "$previous.partial"
  mv "$previous.partial" "$previous"
fi
# Ours when they pin every package its lockfile does and the patches are the same, else its own, cached.
say "previous release $commit in $previous, with $(scripts/tree-modules.sh "$previous" "$cache")"
(cd "$previous" && node_modules/.bin/node scripts/install-model.ts >&2)
say "previous release ready"

# --- 3. A throwaway server, then the runs -------------------------------------------------------
dir=$(mktemp -d "${TMPDIR:-/tmp}/workspace-api-upgrade-pg-XXXXXX")
cleanup() { scripts/pg-server.sh stop "$dir"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# The large workspace's table and indexes (about 1 GB at 100 000 chunks) mostly in shared buffers.
UPGRADE_SERVER_URL=$(scripts/pg-server.sh start "$dir" -c shared_buffers=512MB -c max_wal_size=4GB)
export UPGRADE_SERVER_URL UPGRADE_PREVIOUS_RELEASE="$PWD/$previous"
say "server started"

set +e
npm run --silent test -- --config test/upgrade/vitest.config.ts "$@" </dev/null
code=$?
set -e
say "done (vitest exited $code)"
exit $code
