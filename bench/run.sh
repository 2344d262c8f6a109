#!/usr/bin/env bash
# Prints Basalt's image and boot figures (no thresholds): artifact sizes (amd64 and arm64 side by side), seconds
# from QEMU start to the maintenance API answering, kernel uptime at init start,
# at machined start and when the API answered, and the agent's memory (PSS and RSS sums) at
# idle (init reports it on the console); then the sandbox memory, RPC latency and streamed
# throughput benches (bench/memory.ts, bench/rpc-latency.ts, bench/stream-throughput.ts). The boot figures are measured for amd64, then
# arm64 (qemu-system-aarch64 under TCG, UEFI). Builds the images when they are missing.
# usage: bench/run.sh [--boot iso|pxe] [--firmware uefi|bios]   (default: iso, uefi; arm64: uefi)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/_out/tools/node22/bin:$PATH"
[ -f _out/metal-amd64.iso ] || bash scripts/image.sh
[ -f _out/metal-arm64.iso ] || bash scripts/image.sh --arch arm64
# Other areas may have compile errors mid-flight; tsc still emits our files.
npx tsc -p tsconfig.json >/dev/null 2>&1 || true
echo "== sizes (bytes)"
{ printf 'artifact\tamd64\tarm64\n'; paste <(sed 's/-amd64//' _out/sizes.tsv) <(cut -f2 _out/sizes-arm64.tsv); } | column -t -s $'\t'
echo "== boot (amd64)"
node dist/bench/boot.js --arch amd64 "$@"
echo "== boot (arm64, TCG on this amd64 host)"
node dist/bench/boot.js --arch arm64 "$@"
echo "== boot beside the baseline (../shared/baseline, same QEMU arguments, alternately)"
[ -f _out/baseline/baseline.iso ] || bash ../shared/baseline/build.sh _out/baseline >/dev/null
node dist/bench/boot-vs-baseline.js --boot iso
node dist/bench/boot-vs-baseline.js --boot pxe
echo "== memory (an installed amd64 node in QEMU, containerd and udevd running)"
node dist/bench/memory.js --mode node --idle-seconds 60
echo "== machined's start to the maintenance listener (sandbox from the bundle, as init starts it)"
node dist/bench/start.js --bundles _out/bundle/basalt.mjs
echo "== memory (sandbox)"
node dist/bench/memory.js
echo "== rpc latency (sandbox)"
node dist/bench/rpc-latency.js
echo "== streamed throughput through apid beside machined's socket (sandbox)"
node dist/bench/stream-throughput.js | column -t -s $'\t'
echo "== apid fan-out latency (3 sandboxes in network namespaces)"
node dist/bench/fanout.js
echo "== networking start-up (sandbox in a network namespace, DHCPv4 from dnsmasq)"
node dist/bench/network.js
