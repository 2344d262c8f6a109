#!/usr/bin/env bash
# The README's test command: set up a fresh machine, then run every test
# (unit, integration, and the QEMU boots of the built image) under Node 22.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/_out/tools/node22/bin:$PATH"
echo "test: node $(node --version)"
npm test
npm run test:e2e
