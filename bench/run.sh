#!/usr/bin/env bash
# Prints Basalt's image and boot figures (no thresholds): artifact sizes, seconds
# from QEMU start to the maintenance API answering, kernel uptime at init start,
# at machined start and when the API answered, and the agent's memory (PSS and RSS sums) at
# idle (init reports it on the console); then the sandbox memory and RPC latency
# benches (bench/memory.ts, bench/rpc-latency.ts). Builds the image when it is missing.
# usage: bench/run.sh [--boot iso|pxe] [--firmware uefi|bios]   (default: iso, uefi)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/_out/tools/node22/bin:$PATH"
[ -f _out/metal-amd64.iso ] || bash scripts/image.sh
# Other areas may have compile errors mid-flight; tsc still emits our files.
npx tsc -p tsconfig.json >/dev/null 2>&1 || true
echo "== sizes (bytes)"
column -t -s $'\t' _out/sizes.tsv
echo "== boot"
node dist/bench/boot.js "$@"
echo "== boot beside the baseline (../shared/baseline, same QEMU arguments, alternately)"
[ -f _out/baseline/baseline.iso ] || bash ../shared/baseline/build.sh _out/baseline >/dev/null
node dist/bench/boot-vs-baseline.js
echo "== memory (sandbox)"
node dist/bench/memory.js
echo "== rpc latency (sandbox)"
node dist/bench/rpc-latency.js
echo "== apid fan-out latency (3 sandboxes in network namespaces)"
node dist/bench/fanout.js
