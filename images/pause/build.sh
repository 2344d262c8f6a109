#!/usr/bin/env bash
# Builds the pod sandbox's pause program, static, for one architecture with Debian's gcc or its
# aarch64 cross gcc (scripts/setup-deps.sh installs both), into _out/k8s/<arch>/pause.
#
#   bash images/pause/build.sh [amd64|arm64] [VERSION]
set -euo pipefail
cd "$(dirname "$0")/../.."
arch=${1:-amd64}
version=${2:-3.8}
case "$arch" in
  amd64) cc=gcc strip=strip ;;
  arm64) cc=aarch64-linux-gnu-gcc strip=aarch64-linux-gnu-strip ;;
  *) echo "pause: unknown arch $arch" >&2; exit 2 ;;
esac
out="$PWD/_out/k8s/$arch/pause"
mkdir -p "$(dirname "$out")"
"$cc" -static -Os -Wall -Wextra -Werror -DPAUSE_VERSION="\"$version\"" -o "$out.tmp" images/pause/pause.c
"$strip" "$out.tmp"
mv "$out.tmp" "$out"
echo "$out"
