#!/usr/bin/env bash
# Runs the e2e journeys in three lanes side by side. Every e2e VM has one vCPU (test/e2e/qemu.ts) but the
# Kubernetes journey's two, and the host (CI's too) has two cores. Lane "upgrade" runs the upgrade journey and
# the power-loss boots; lane "kubernetes" the Kubernetes journey when asked for (BASALT_E2E_KUBERNETES=1), which
# first builds and pushes the Kubernetes images (mostly Go's build cache at work, while the VMs of the other
# lanes boot); lane "others" runs every other journey. Each lane runs its files one at a time, in node --test's
# order.
set -uo pipefail
cd "$(dirname "$0")/.."
first=(dist/test/e2e/upgrade.test.js dist/test/e2e/power-loss.test.js)
kubernetes=(dist/test/e2e/kubernetes.test.js)
others=()
for f in dist/test/e2e/*.test.js; do
  case " ${first[*]} ${kubernetes[*]} " in *" $f "*) ;; *) others+=("$f") ;; esac
done

lane() {
  local name=$1 start=$SECONDS rc
  shift
  node --test --test-concurrency=1 "$@" 2>&1 | sed -u "s/^/[$name] /"
  rc=${PIPESTATUS[0]}
  echo "e2e: lane $name took $((SECONDS - start)) s, exit $rc"
  return "$rc"
}

lane upgrade "${first[@]}" &
upgrade=$!
lane kubernetes "${kubernetes[@]}" &
k8s=$!
lane others "${others[@]}" &
rest=$!
wait "$upgrade"; upgrade_rc=$?
wait "$k8s"; k8s_rc=$?
wait "$rest"; others_rc=$?
echo "e2e: the three lanes took ${SECONDS} s"
[ "$upgrade_rc" -eq 0 ] && [ "$k8s_rc" -eq 0 ] && [ "$others_rc" -eq 0 ]
