#!/usr/bin/env bash
# Builds the agent's native helper (syslogd's socket relay, agent/native/syslog-relay.c) into
# DIR (default dist/agent/src/cmd, beside the entry script the sandbox runs). CC picks the
# compiler (scripts/image.sh passes the target architecture's).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist/agent/src/cmd}
mkdir -p "$out"
"${CC:-gcc}" -Os -Wall -Wextra -Werror -o "$out/syslog-relay" agent/native/syslog-relay.c
