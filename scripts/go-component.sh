#!/usr/bin/env bash
# Builds one of the Go programs the Kubernetes images hold, from its wrapper module under images/<name>
# (a go.mod naming the upstream module at Talos v1.7.6's version, and a main calling its entry point),
# with the Go module proxy as the only source. Go's build cache (GOCACHE) makes a second build fast.
#
#   bash scripts/go-component.sh NAME [amd64|arm64]   ->  _out/k8s/<arch>/<name>
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: go-component.sh NAME [ARCH]}
arch=${2:-amd64}
src="images/$name"
[ -f "$src/go.mod" ] || { echo "go-component: no module $src" >&2; exit 2; }
command -v go >/dev/null || { echo "go-component: Go is not installed" >&2; exit 2; }
out="$PWD/_out/k8s/$arch/$name"
mkdir -p "$(dirname "$out")"
ldflags="-s -w"
[ -f "$src/ldflags" ] && ldflags="$ldflags $(tr '\n' ' ' < "$src/ldflags")"
(cd "$src" && CGO_ENABLED=0 GOOS=linux GOARCH="$arch" GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$out.tmp" .)
mv "$out.tmp" "$out"
echo "$out"
