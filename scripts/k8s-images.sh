#!/usr/bin/env bash
# The Kubernetes images of an air-gapped site, built here and pushed to one registry:
# each program from its Go module (scripts/go-component.sh) or C source (images/pause/build.sh),
# the Debian files the kubelet, kube-proxy and flannel's images exec (images/debian-tree.sh), then the images
# assembled into _out/k8s/images.tar and pushed under the repository paths Talos pulls them from.
#
#   bash scripts/k8s-images.sh --push HOST:PORT [--arch amd64,arm64] [--only etcd,pause] [--insecure]
#                              [--ca F] [--username U --password P]
# `--only echo` builds the test image the e2e journey runs as pods (registry.basalt.test/echo:v1),
# which the default set leaves out.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: k8s-images.sh --push HOST:PORT [--arch amd64,arm64] [--only NAME,...] [--insecure]"
push="" archs=amd64 only="" push_flags=()
while [ $# -gt 0 ]; do
  case "$1" in
    --push) push=${2:?$usage}; shift 2 ;;
    --arch) archs=${2:?$usage}; shift 2 ;;
    --only) only=${2:?$usage}; shift 2 ;;
    --insecure) push_flags+=(--insecure); shift ;;
    --ca|--username|--password) push_flags+=("$1" "${2:?$usage}"); shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[ -n "$push" ] || { echo "$usage" >&2; exit 2; }
all="kubelet kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd coredns pause flannel install-cni"
names=${only:+${only//,/ }}
names=${names:-$all}
export PATH="$PWD/_out/tools/node22/bin:$PATH"
ctl=(node dist/agent/src/cmd/main.js ctl)
[ -f dist/agent/src/cmd/main.js ] || npx tsc -p tsconfig.json

for arch in ${archs//,/ }; do
  for name in $names; do
    case "$name" in
      pause) bash images/pause/build.sh "$arch" 3.8 ;;
      # The image's program is its script; the CNI plugins it installs are its bundle.
      install-cni) bash scripts/go-component.sh cni-plugins "$arch"
        install -D -m 0755 images/install-cni/install-cni.sh "_out/k8s/$arch/install-cni" ;;
      *) bash scripts/go-component.sh "$name" "$arch" ;;
    esac
    case "$name" in kubelet|kube-proxy|flannel|install-cni) bash images/debian-tree.sh "$arch" "$name" ;; esac
    # The etcd image carries etcdutl beside etcd, as upstream's does.
    case "$name" in etcd) bash scripts/go-component.sh etcdutl "$arch" ;; esac
  done
done
# Debian's bundle, as its ca-certificates package generated it on this machine.
cp /etc/ssl/certs/ca-certificates.crt _out/k8s/ca-certificates.crt

"${ctl[@]}" k8s-images build --inputs _out/k8s --output _out/k8s/images.tar --arch "$archs" ${only:+--only "$only"}
"${ctl[@]}" k8s-images push _out/k8s/images.tar "$push" "${push_flags[@]}"
