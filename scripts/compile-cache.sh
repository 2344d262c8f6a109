#!/usr/bin/env bash
# Bakes Node's compile cache of the bundle (the V8 code cache of each chunk's top-level code) into AGENT_DIR/compile-cache,
# made by the image's own node with the bundle at its path on a node (/usr/lib/basalt, bind-mounted in a private
# mount namespace and chrooted into): Node keys an entry on the module's URL and V8 takes it only from the same
# version with the same flags (none: machined and apid set theirs after loading). The entries are flat files; the
# agent links them into the directory Node names for the CPU it runs on (agent/src/cmd/compile-cache.ts).
# usage: scripts/compile-cache.sh TREE AGENT_DIR     (root; TREE's node must run on this host)
set -euo pipefail
tree=$(realpath "$1")
agent=$(realpath "$2")
rm -rf "$agent/compile-cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Every chunk, then the entry: with no command it prints its usage and exits 2, and Node writes the cache as it exits.
unshare -m bash -c '
  mount --bind "$2" "$1/usr/lib/basalt"
  mount -t tmpfs tmpfs "$1/tmp"
  status=0
  env -i NODE_COMPILE_CACHE=/tmp/compile-cache "$(command -v chroot)" "$1" /usr/bin/node --input-type=module -e "
    import { readdirSync } from \"node:fs\";
    for (const f of readdirSync(\"/usr/lib/basalt\").filter((f) => f.endsWith(\".mjs\") && f !== \"basalt.mjs\")) await import(\"/usr/lib/basalt/\" + f);
    await import(\"/usr/lib/basalt/basalt.mjs\");
  " >/dev/null 2>&1 || status=$?
  [ "$status" = 2 ] || { echo "compile-cache: loading the bundle exited $status" >&2; exit 1; }
  cp -r "$1/tmp/compile-cache" "$3/cache"
' _ "$tree" "$agent" "$work"
dirs=$(find "$work/cache" -mindepth 1 -maxdepth 1 -type d | wc -l)
[ "$dirs" = 1 ] || { echo "compile-cache: expected one version directory, found $dirs" >&2; exit 1; }
mkdir "$agent/compile-cache"
cp "$work"/cache/*/* "$agent/compile-cache/"
chmod -R a+rX "$agent/compile-cache"  # apid runs unprivileged
chunks=$(find "$agent" -maxdepth 1 -name '*.mjs' | wc -l)
entries=$(find "$agent/compile-cache" -type f | wc -l)
[ "$entries" -ge "$chunks" ] || { echo "compile-cache: $entries entries for $chunks chunks" >&2; exit 1; }
