#!/usr/bin/env bash
# Builds ncstored and runs it in the foreground on its embedded default: data directory
# ./ncstore-data (SQLite store, host key, users), ietf-interfaces + iana-if-type + the bundled
# Open ROADM models, listening on 127.0.0.1:8830. On first start it creates the user `admin` and
# prints its password. Extra arguments go to ncstored (see `ncstored --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
cmake --build build -j"$(nproc)" --target ncstored ncstore-client ncstore-db
exec build/netconfd/ncstored --data-dir ./ncstore-data --listen 127.0.0.1 --port 8830 "$@"
