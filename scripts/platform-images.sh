#!/usr/bin/env bash
# Writes the cloud images _out/<platform>-ARCH.<format> (aws-amd64.raw.xz, gcp-amd64.raw.tar.gz,
# azure-amd64.vhd.xz, vmware-amd64.ova, ...) from _out/metal-ARCH.raw.zst: agent/src/cmd/platform-images.ts
# sets each platform's kernel command line in a copy (loop devices: root) and packs it. No root
# filesystem or initramfs is built again. Run by scripts/image.sh --platforms, or on its own after it.
#
# usage: scripts/platform-images.sh ARCH all|aws,gcp,...
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: scripts/platform-images.sh ARCH all|aws,gcp,..." >&2; exit 2; }
arch=$1 platforms=$2
export PATH="$PWD/_out/tools/node22/bin:$PATH"
metal=_out/metal-$arch.raw.zst
[ -f "$metal" ] || { echo "platform-images.sh: $metal is missing (npm run image first)" >&2; exit 1; }
work=_out/cache/platform-images-$arch
rm -rf "$work" && mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
# zstd writes a sparse file: the 1.3 GB disk takes what its partitions hold.
zstd -q -d -f "$metal" -o "$work/metal.raw"
tool=_out/cache/platform-images.mjs
npx esbuild agent/src/cmd/platform-images.ts --bundle --platform=node --format=esm --target=node22 --log-level=warning --outfile="$tool"
node "$tool" --metal "$work/metal.raw" --arch "$arch" --platforms "$platforms" --out-dir _out --work-dir "$work" --threads 2
