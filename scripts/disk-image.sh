#!/usr/bin/env bash
# Writes _out/metal-ARCH.raw.zst: agent/src/cmd/disk-image.ts (the install code) onto a
# sparse raw file through loop devices (root), then zstd. Run by scripts/image.sh.
#
# usage: scripts/disk-image.sh ARCH KERNEL INITRAMFS CMDLINE GRUB_LIB OUT.raw.zst
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 6 ] || { echo "usage: scripts/disk-image.sh ARCH KERNEL INITRAMFS CMDLINE GRUB_LIB OUT.raw.zst" >&2; exit 2; }
arch=$1 kernel=$2 initramfs=$3 cmdline=$4 grub_lib=$5 out=$6
export PATH="$PWD/_out/tools/node22/bin:$PATH"
# The layout's fixed partitions take 1203 MiB (EFI 100, BIOS 1, BOOT 1000, META 1, STATE 100 after
# the first MiB); EPHEMERAL gets 100 MiB here and the rest of the real disk at first boot.
size_mib=1306
tool=_out/cache/disk-image.mjs
npx esbuild agent/src/cmd/disk-image.ts --bundle --platform=node --format=esm --target=node22 --log-level=warning --outfile="$tool"
raw=${out%.zst}
node "$tool" --out "$raw" --size-mib "$size_mib" --kernel "$kernel" --initramfs "$initramfs" --cmdline "$cmdline" --arch "$arch" --grub-lib "$grub_lib"
zstd -q -f -T2 --rm "$raw" -o "$out"
