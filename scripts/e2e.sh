#!/usr/bin/env bash
# Runs the e2e journeys in two lanes side by side. Every e2e VM has one vCPU (test/e2e/qemu.ts) and the host
# (CI's too) has two cores, so two lanes take about as long as the longer one. Lane "upgrade" runs the upgrade
# journey, the longest, and the power-loss boots; lane "others" runs every other journey. Each lane runs its
# files one at a time, in node --test's order. The split keeps the lanes about even.
set -uo pipefail
cd "$(dirname "$0")/.."
first=(dist/test/e2e/upgrade.test.js dist/test/e2e/power-loss.test.js)
others=()
for f in dist/test/e2e/*.test.js; do
  case " ${first[*]} " in *" $f "*) ;; *) others+=("$f") ;; esac
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
lane others "${others[@]}" &
rest=$!
wait "$upgrade"; upgrade_rc=$?
wait "$rest"; others_rc=$?
echo "e2e: both lanes took ${SECONDS} s"
[ "$upgrade_rc" -eq 0 ] && [ "$others_rc" -eq 0 ]
