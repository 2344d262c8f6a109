#!/usr/bin/env bash
# Writes the installer image, an OCI image layout archive (skopeo's oci-archive), from the
# kernel and initramfs scripts/image.sh just built:
#   _out/installer-ARCH.tar   this architecture (usr/install/ARCH/{vmlinuz,initramfs.xz})
#   _out/installer.tar        amd64 and arm64 under one index, when both architectures are built
# usage: scripts/installer-image.sh ARCH      (run by scripts/image.sh; uses the agent bundle's ctl)
set -euo pipefail
cd "$(dirname "$0")/.."
arch=$1
out=_out
ctl=(node "$out/bundle/basalt.mjs" ctl installer build)
"${ctl[@]}" --output "$out/installer-$arch.tar" --platform "$arch=$out/vmlinuz-$arch,$out/initramfs-$arch.xz" >&2
if [ -f "$out/vmlinuz-amd64" ] && [ -f "$out/initramfs-amd64.xz" ] && [ -f "$out/vmlinuz-arm64" ] && [ -f "$out/initramfs-arm64.xz" ]; then
  "${ctl[@]}" --output "$out/installer.tar" \
    --platform "amd64=$out/vmlinuz-amd64,$out/initramfs-amd64.xz" --platform "arm64=$out/vmlinuz-arm64,$out/initramfs-arm64.xz" >&2
fi
