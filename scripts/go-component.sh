#!/usr/bin/env bash
# Builds one of the Go programs the Kubernetes images hold, from a wrapper module under images/ (a go.mod
# naming the upstream module at Talos v1.7.6's version, and a main calling its entry point), with the Go
# module proxy as the only source. Go's build cache (GOCACHE) makes a second build fast.
#
# A program is either a module of its own (images/<name>/main.go, as etcd and coredns), one main package
# of a module that holds several (images/<module>/cmd/<name>/main.go, as the Kubernetes programs), or an
# upstream main package the module requires, named in images/<name>/package (as flanneld, whose main
# package cannot be imported). A module whose programs file names several main packages, one a line,
# builds them all into a directory, each named as its package's last element (as the CNI plugins).
# The module's ldflags file, one flag a line, stamps the version as the upstream release does.
#
#   bash scripts/go-component.sh NAME [amd64|arm64]   ->  _out/k8s/<arch>/<name>  (a directory for programs)
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: go-component.sh NAME [ARCH]}
arch=${2:-amd64}
case "$arch" in amd64|arm64) ;; *) echo "go-component: unknown arch $arch" >&2; exit 2 ;; esac
if [ -f "images/$name/programs" ]; then
  module="images/$name" pkg=$(grep -v '^#' "images/$name/programs")
elif [ -f "images/$name/package" ]; then
  module="images/$name" pkg=$(grep -v '^#' "images/$name/package")
elif [ -f "images/$name/go.mod" ]; then
  module="images/$name" pkg=.
else
  main=$(ls images/*/cmd/"$name"/main.go 2>/dev/null | head -n1 || true)
  [ -n "$main" ] || { echo "go-component: no module images/$name nor package images/*/cmd/$name" >&2; exit 2; }
  module=${main%/cmd/*} pkg="./cmd/$name"
fi
command -v go >/dev/null || { echo "go-component: Go is not installed" >&2; exit 2; }
out="$PWD/_out/k8s/$arch/$name"
mkdir -p "$(dirname "$out")"
# go build writes several programs into a directory named with a trailing slash.
target="$out.tmp"
[ -f "$module/programs" ] && { rm -rf "$target"; mkdir -p "$target"; target="$target/"; }
ldflags="-s -w"
[ -f "$module/ldflags" ] && ldflags="$ldflags $(tr '\n' ' ' < "$module/ldflags")"
# A module that links C on some architectures names them in its cgo file (flanneld's UDP backend, as its
# Makefile builds amd64, with this machine's gcc); linked static with Go's own resolver, it runs in any image.
cgo=0 tags=""
if [ -f "$module/cgo" ] && grep -qx "$arch" "$module/cgo"; then cgo=1 ldflags="$ldflags -extldflags=-static" tags="-tags=netgo,osusergo"; fi
# Two cores are the machine's whole: one package at a time keeps a cold Kubernetes build from starving the rest.
(cd "$module" && CGO_ENABLED=$cgo GOOS=linux GOARCH="$arch" GOFLAGS=-mod=mod \
  go build -p "${GO_BUILD_JOBS:-2}" -trimpath $tags -ldflags "$ldflags" -o "$target" $pkg)
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
