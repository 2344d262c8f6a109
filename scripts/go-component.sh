#!/usr/bin/env bash
# Builds one of the Go programs the Kubernetes images hold, from a wrapper module under images/ (a go.mod
# naming the upstream module at Talos v1.7.6's version, and a main calling its entry point), with the Go
# module proxy as the only source. Go's build cache (GOCACHE) makes a second build fast.
#
# A program is either a module of its own (images/<name>/main.go, as etcd and coredns) or one main package
# of a module that holds several (images/<module>/cmd/<name>/main.go, as the Kubernetes programs).
# The module's ldflags file, one flag a line, stamps the version as the upstream release does.
#
#   bash scripts/go-component.sh NAME [amd64|arm64]   ->  _out/k8s/<arch>/<name>
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: go-component.sh NAME [ARCH]}
arch=${2:-amd64}
case "$arch" in amd64|arm64) ;; *) echo "go-component: unknown arch $arch" >&2; exit 2 ;; esac
if [ -f "images/$name/go.mod" ]; then
  module="images/$name" pkg=.
else
  main=$(ls images/*/cmd/"$name"/main.go 2>/dev/null | head -n1 || true)
  [ -n "$main" ] || { echo "go-component: no module images/$name nor package images/*/cmd/$name" >&2; exit 2; }
  module=${main%/cmd/*} pkg="./cmd/$name"
fi
command -v go >/dev/null || { echo "go-component: Go is not installed" >&2; exit 2; }
out="$PWD/_out/k8s/$arch/$name"
mkdir -p "$(dirname "$out")"
ldflags="-s -w"
[ -f "$module/ldflags" ] && ldflags="$ldflags $(tr '\n' ' ' < "$module/ldflags")"
# Two cores are the machine's whole: one package at a time keeps a cold Kubernetes build from starving the rest.
(cd "$module" && CGO_ENABLED=0 GOOS=linux GOARCH="$arch" GOFLAGS=-mod=mod \
  go build -p "${GO_BUILD_JOBS:-2}" -trimpath -ldflags "$ldflags" -o "$out.tmp" "$pkg")
mv "$out.tmp" "$out"
echo "$out"
