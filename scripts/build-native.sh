#!/usr/bin/env bash
# Builds the agent's native programs into DIR (default dist/agent/src/cmd, beside the entry script
# the sandbox runs): syslogd's socket relay (agent/native/syslog-relay.c), PacketCapture's reader
# (agent/native/packet-capture.c) and the kernel-calls
# addon (agent/native/kernel-calls.c) as DIR/native/kernel-calls-<node arch>.node. CC picks the compiler
# (scripts/image.sh passes the target architecture's).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist/agent/src/cmd}
cc=${CC:-gcc}
case "$("$cc" -dumpmachine)" in
  x86_64-*) node_arch=x64 ;;
  aarch64-*) node_arch=arm64 ;;
  *) echo "build-native: no Node architecture for $("$cc" -dumpmachine)" >&2; exit 1 ;;
esac
mkdir -p "$out/native"
"$cc" -Os -Wall -Wextra -Werror -o "$out/syslog-relay" agent/native/syslog-relay.c
"$cc" -Os -Wall -Wextra -Werror -o "$out/packet-capture" agent/native/packet-capture.c
# A Node-API addon links against nothing of node's: the process that loads it provides the symbols.
"$cc" -Os -Wall -Wextra -Werror -shared -fPIC -I _out/tools/node22/include/node -o "$out/native/kernel-calls-$node_arch.node" agent/native/kernel-calls.c
