#!/usr/bin/env bash
# Installs everything ncstore needs to build, test and package on Debian 12 (bookworm).
# Idempotent: packages already present are left alone. Must run as root (or via sudo).
set -euo pipefail

packages=(
    build-essential cmake pkg-config git clang-format
    # tests/fuzz (libFuzzer and its runtime), llvm-symbolizer for the sanitizer builds' reports
    clang libclang-rt-14-dev llvm
    libnetconf2-dev libyang2-dev libyang2-tools libssh-dev
    libsqlite3-dev sqlite3 libsqlitecpp-dev
    # dqlite (Raft-replicated SQLite): the HA backend of issue 17 (dqlite/, tests/dqlite)
    libdqlite-dev
    libboost-log-dev libboost-program-options-dev libboost-system-dev
    libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
    python3 python3-ncclient python3-paramiko python3-matplotlib python3-pytest libyuma-base yangcli
    openssh-client procps
    lintian rpm fakeroot dpkg-dev
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#packages[@]} packages present"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
