#!/usr/bin/env bash
# Bakes Node's compile cache (the V8 code cache of the bundle's top-level code) into the agent directory as
# compile-cache/; init hands it to machined (and machined to apid) as NODE_COMPILE_CACHE. Without it each of
# the two processes compiles the 1.7 MB bundle when it starts: ~0.27 s on the build host, seconds under TCG.
# Node keys the cache on the module's path and V8 refuses a cache made by another version or with other
# flags, so it is made by the image's own node with the agent's flags (agentNodeFlags in
# agent/src/cmd/machined-run.ts, init's start_machined), the bundle at its path on a node: bind-mounted on
# /usr/lib/basalt of the system tree in a private mount namespace, chrooted into.
# usage: scripts/compile-cache.sh TREE AGENT_DIR     (root; TREE's node must run on this host)
set -euo pipefail
tree=$(realpath "$1")
agent=$(realpath "$2")
rm -rf "$agent/compile-cache"
mkdir "$agent/compile-cache"
# Loading the bundle compiles its top level, which is all the cache holds (functions compiled later are not
# added); with no command the bundle prints its usage and exits 2.
unshare -m bash -c '
  mount --bind "$2" "$1/usr/lib/basalt"
  status=0
  env -i NODE_COMPILE_CACHE=/usr/lib/basalt/compile-cache "$(command -v chroot)" "$1" /usr/bin/node --optimize-for-size /usr/lib/basalt/basalt.mjs >/dev/null 2>&1 || status=$?
  [ "$status" = 2 ] || { echo "compile-cache: the bundle exited $status while loading" >&2; exit 1; }
' _ "$tree" "$agent"
chmod -R a+rX "$agent/compile-cache"  # apid and trustd run unprivileged
entries=$(find "$agent/compile-cache" -type f | wc -l)
[ "$entries" = 1 ] || { echo "compile-cache: expected 1 cache entry (the bundle), found $entries" >&2; exit 1; }
