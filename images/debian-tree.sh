#!/usr/bin/env bash
# Unpacks the Debian packages a Kubernetes image needs at run time into a tree, for one
# architecture, without running any of their code: each .deb (apt-get download, kept in
# _out/k8s/debs/<arch>/) is unpacked with dpkg-deb; documentation is dropped, and of libc6 only
# the dynamic loader and the libraries the programs here link (libc, libm) are kept.
#
#   bash images/debian-tree.sh ARCH TREE   ->  _out/k8s/<arch>/debian/<tree>/
#
# TREE is a file images/debian/<tree>: the packages, one a line, then after a line "--links"
# symlinks to make, "NAME TARGET" a line (what the packages' maintainer scripts would have
# registered with update-alternatives).
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:?usage: debian-tree.sh ARCH TREE} tree=${2:?usage: debian-tree.sh ARCH TREE}
spec="images/debian/$tree"
[ -f "$spec" ] || { echo "debian-tree: no $spec" >&2; exit 2; }
case "$arch" in amd64) triplet=x86_64-linux-gnu ;; arm64) triplet=aarch64-linux-gnu ;; *) echo "debian-tree: unknown arch $arch" >&2; exit 2 ;; esac
packages=$(sed -n '/^--links$/q; /^[a-z0-9]/p' "$spec")
links=$(sed -n '/^--links$/,$p' "$spec" | tail -n +2)

debs="$PWD/_out/k8s/debs/$arch"
mkdir -p "$debs"
if [ "$arch" != "$(dpkg --print-architecture)" ] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
  dpkg --add-architecture "$arch"
  apt-get update -q >&2
fi
missing=()
for p in $packages; do
  compgen -G "$debs/${p}_*.deb" >/dev/null && continue
  # A package for every architecture (netbase) has no candidate as p:<arch>.
  if [ "$(apt-cache show --no-all-versions "$p" | sed -n 's/^Architecture: //p' | head -n1)" = all ]; then missing+=("$p"); else missing+=("$p:$arch"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
  (cd "$debs" && apt-get download -q "${missing[@]}" >&2) || { apt-get update -q >&2 && (cd "$debs" && apt-get download -q "${missing[@]}" >&2); }
fi

out="$PWD/_out/k8s/$arch/debian/$tree"
rm -rf "$out" "$out.libc"
mkdir -p "$out"
for p in $packages; do
  deb=$(ls "$debs/${p}"_*.deb | head -n1)
  if [ "$p" = libc6 ]; then
    dpkg-deb -x "$deb" "$out.libc"
    (cd "$out.libc" && find . \( -name 'ld-linux*' -o -name libc.so.6 -o -name libm.so.6 \) \( -type f -o -type l \) -print0 |
      xargs -0 cp -a --parents -t "$out")
    rm -rf "$out.libc"
  else
    dpkg-deb -x "$deb" "$out"
  fi
done
rm -rf "$out"/usr/share/{doc,man,info,lintian,locale,bug,bash-completion}
while read -r name target; do
  [ -n "$name" ] || continue
  mkdir -p "$out/$(dirname "$name")"
  ln -sfn "$target" "$out/$name"
done <<<"$links"
echo "$out"
