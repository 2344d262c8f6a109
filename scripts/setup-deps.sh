#!/usr/bin/env bash
# Debian packages the project needs, by area; scripts/setup.sh installs them.
apt_packages=()
# foundation: the sandbox and integration tests
apt_packages+=(iproute2 util-linux)
