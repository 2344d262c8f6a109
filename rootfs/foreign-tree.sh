#!/usr/bin/env bash
# Builds a Debian bookworm tree for another architecture (arm64 on an amd64 host) without
# running any of its code: apt resolves the packages (and their dependency closure) against an
# empty status file, downloads them, and each is unpacked; dpkg's status file and per-package
# file lists are written as dpkg would, so rootfs/select-files.py reads this tree exactly as it
# reads mkosi's. Maintainer scripts cannot run here: the files they generate that do not depend
# on the architecture (CA bundle, passwd/group, nsswitch.conf, localtime, timezone) are copied
# from the host-architecture base tree. No ld.so.cache: the host's ldconfig skips foreign
# libraries, and Debian's ld.so searches its multiarch directories without one.
#
# usage: rootfs/foreign-tree.sh <arch> <native-base-tree> <out-tree> <package>...
set -euo pipefail
arch=$1 native=$2 out=$(realpath -m "$3")  # apt takes its directories as absolute paths
shift 3
work="$out.work"
rm -rf "$out" "$work"
mkdir -p "$work/debs/partial" "$work/state" "$out/var/lib/dpkg/info" "$out/usr"
: >"$work/state/status"

if ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
  dpkg --add-architecture "$arch"
  apt-get update -q >&2
fi
apt_opts=(-o "APT::Architecture=$arch" -o "APT::Architectures::=$arch" -o "Dir::State::status=$work/state/status"
  -o "Dir::Cache::archives=$work/debs" -o Debug::NoLocking=1 -o APT::Install-Recommends=false)
apt-get "${apt_opts[@]}" -q -y --download-only install "$@" >"$work/apt.log" 2>&1 ||
  { tail -20 "$work/apt.log" >&2; exit 1; }

# bookworm is merged-/usr: the top-level directories are symlinks that unpacking must keep.
for top in bin sbin lib; do mkdir -p "$out/usr/$top" && ln -s "usr/$top" "$out/$top"; done
n=0
for deb in "$work"/debs/*.deb; do
  pkg=$(dpkg-deb -f "$deb" Package)
  dpkg-deb --fsys-tarfile "$deb" | tar -x --keep-directory-symlink -C "$out"
  { dpkg-deb -f "$deb" | grep -v '^Status:'; echo "Status: install ok installed"; echo; } >>"$out/var/lib/dpkg/status"
  dpkg-deb -c "$deb" | awk '{ p = $6; sub(/^\./, "", p); sub(/\/$/, "", p); print (p == "" ? "/." : p) }' \
    >"$out/var/lib/dpkg/info/$pkg:$arch.list"
  n=$((n + 1))
done

for f in etc/ssl/certs/ca-certificates.crt etc/passwd etc/group etc/nsswitch.conf etc/localtime etc/timezone; do
  mkdir -p "$(dirname "$out/$f")" && cp -a "$native/$f" "$out/$f"
done
# The kernel package's postinst would run depmod; initramfs/modules.py reads modules.dep.
for kver in "$out"/usr/lib/modules/*; do depmod -b "$out" "$(basename "$kver")"; done
rm -rf "$work"
echo "foreign-tree: $n $arch packages unpacked into $out" >&2
