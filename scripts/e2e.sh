#!/usr/bin/env bash
# Runs the e2e journeys in two lanes side by side; a lane runs its files one at a time (node --test's order is
# the files' names). Every e2e VM has one vCPU (test/e2e/qemu.ts) but the Kubernetes journey's two, and the host
# (CI's too) has two cores. Lane "upgrade" runs the upgrade journey and the power-loss boots, then lane
# "kubernetes" follows it: the Kubernetes journey builds and pushes its images first (Go's build cache at work)
# while lane "others" finishes, so its API server, which must start within its own deadlines, then has the
# host to itself; the cloud images' boots (two VMs at a time) end that lane, once lane "others", which runs
# every other journey, is done. BASALT_E2E_KUBERNETES=0 leaves the Kubernetes journey out. Each lane's failed
# tests are printed again once every lane has ended (scripts/failure-reporter.mjs): CI keeps the output's end.
set -uo pipefail
cd "$(dirname "$0")/.."
failures=_out/e2e-failures
rm -rf "$failures" && mkdir -p "$failures"
first=(dist/test/e2e/upgrade.test.js dist/test/e2e/power-loss.test.js)
kubernetes=(dist/test/e2e/kubernetes.test.js)
last=(dist/test/e2e/cloud-formats.test.js)
others=()
for f in dist/test/e2e/*.test.js; do
  case " ${first[*]} ${kubernetes[*]} ${last[*]} " in *" $f "*) ;; *) others+=("$f") ;; esac
done

lane() {
  local name=$1 start=$SECONDS rc
  shift
  node --test --test-concurrency=1 --test-reporter=tap --test-reporter-destination=stdout \
    --test-reporter=./scripts/failure-reporter.mjs --test-reporter-destination="$failures/$name" "$@" 2>&1 |
    sed -u "s/^/[$name] /"
  rc=${PIPESTATUS[0]}
  echo "e2e: lane $name took $((SECONDS - start)) s, exit $rc"
  return "$rc"
}

{
  lane upgrade "${first[@]}"; rc=$?
  lane kubernetes "${kubernetes[@]}" || rc=1
  lane formats "${last[@]}" || rc=1
  exit "$rc"
} &
upgrade=$!
lane others "${others[@]}" &
rest=$!
wait "$upgrade"; upgrade_rc=$?
wait "$rest"; others_rc=$?
echo "e2e: every lane took ${SECONDS} s"
for f in "$failures"/*; do
  [ -s "$f" ] && printf 'e2e: lane %s failed:\n%s\n' "$(basename "$f")" "$(cat "$f")"
done
[ "$upgrade_rc" -eq 0 ] && [ "$others_rc" -eq 0 ]
