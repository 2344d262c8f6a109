#!/bin/sh
# The install-cni image's program: copies the CNI plugins this image holds to the host's plugin
# directory, which the flannel DaemonSet's init container mounts at /host/opt/cni/bin. Each plugin
# is copied beside its target and renamed over it, so a plugin the runtime is executing at that
# moment is replaced, not written into.
set -eu
src=/opt/cni/bin
dst=/host/opt/cni/bin
mkdir -p "$dst"
for plugin in "$src"/*; do
  name=${plugin##*/}
  cp -f "$plugin" "$dst/.$name.tmp"
  mv -f "$dst/.$name.tmp" "$dst/$name"
done
