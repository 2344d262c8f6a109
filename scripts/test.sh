#!/usr/bin/env bash
# The README's test command: set up a fresh machine, check the commit messages
# made since the form was set (scripts/commit-msg.mjs), then run every test
# (npm test: the formatter and linter first, unit, integration; then the QEMU
# boots of the built image) under Node 22.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/_out/tools/node22/bin:$PATH"
echo "test: node $(node --version)"
node scripts/commit-msg.mjs --since
npm test
echo "test: setup, unit and integration tests took ${SECONDS} s"
e2e_start=$SECONDS
npm run test:e2e
echo "test: image builds and e2e boots took $((SECONDS - e2e_start)) s; all ${SECONDS} s"
