#!/usr/bin/env bash
# Gives another tree of this project (an earlier release or commit, unpacked or a git worktree) the
# node_modules it needs, for scripts that run it beside this one (test-upgrade.sh, bench/tracing.ts):
#   scripts/tree-modules.sh <tree> <cache>
# Run from this tree's root. When every package the other tree's lockfile pins is pinned the same in
# ours (a tree that only lacks dependencies we added) and the patches are the same, ours serve it: a
# symlink, no install. Otherwise `npm ci` of its lockfile (45-75 s, from npm's cache) in
# <cache>/node_modules-<hash of that lockfile>, kept for the next run, also of a fresh clone. Prints
# where its node_modules come from.
set -euo pipefail
tree=$1
cache=$2
node=node_modules/.bin/node
covers() {
  $node -e '
    const read = (file) => JSON.parse(require("node:fs").readFileSync(file, "utf8")).packages;
    const [theirs, ours] = [read(process.argv[1]), read(process.argv[2])];
    const same = Object.entries(theirs).every(([path, pkg]) => path === "" || (ours[path] && ours[path].version === pkg.version && ours[path].resolved === pkg.resolved));
    process.exit(same ? 0 : 1);' "$tree/package-lock.json" package-lock.json &&
    diff -rq "$tree/patches" patches >/dev/null 2>&1
}
if covers; then
  ln -sfn "$PWD/node_modules" "$tree/node_modules"
  echo "this tree's node_modules (they pin every package its lockfile does, the same)"
  exit 0
fi
modules=$cache/node_modules-$(sha256sum "$tree/package-lock.json" | cut -c1-16)
if [ ! -f "$modules/.installed" ]; then
  echo "installing its dependencies (its package-lock.json differs from ours) into $modules" >&2
  rm -rf "$modules"
  mkdir -p "$modules"
  # What `npm ci` and its postinstall (patch-package) read.
  cp "$tree/package.json" "$tree/package-lock.json" "$modules/"
  if [ -d "$tree/patches" ]; then cp -r "$tree/patches" "$modules/"; fi
  (cd "$modules" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error >&2)
  touch "$modules/.installed"
fi
ln -sfn "$modules/node_modules" "$tree/node_modules"
echo "node_modules from $modules"
