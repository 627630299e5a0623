#!/usr/bin/env bash
# Where the server's time goes on single-entry commits (issue 16): ncstored on a fresh data dir,
# one ncstore-client session committing one new interface per edit-config, after a warm-up that
# fills the commit history (1000 commits) so that the steady state is measured. Prints, per
# commit: throughput and server CPU at each durability, system calls (strace -c), context
# switches per server thread, the CPU split by library (perf, when installed), and the floor of
# a durable commit on this disk (8 WAL-sized frames written and fdatasync'ed, no SQLite).
#
#   benchmarks/profile_commit.sh [BUILD_DIR] [COMMITS]        (root: strace and perf attach)
#
# Not in CI; the figures go into benchmarks/results/ with this command beside them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath "${1:-$here/../build}")
commits=${2:-3000}
ncstored=$build/netconfd/ncstored
client=$build/clients/ncstore-client
py=/usr/bin/python3
work=$(mktemp -d "${TMPDIR:-/tmp}/ncstore-profile.XXXXXX")
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

"$here/../clients/generator/ncstore-gen" interfaces --scenario B8 --name 'b8-@I@' >"$work/b8.xml"

start() { # durability
    [ -n "$server" ] && { kill "$server"; wait "$server" 2>/dev/null || true; }
    rm -rf "$work/data" "$work/port"
    mkdir -m700 "$work/data"
    "$ncstored" --data-dir "$work/data" --add-user bench <<<"benchpw" >/dev/null 2>&1
    "$ncstored" --data-dir "$work/data" --listen 127.0.0.1 --port 0 --print-port-file "$work/port" \
        --durability "$1" --log-level warning --stats-interval 0 >"$work/server.log" 2>&1 &
    server=$!
    for _ in $(seq 400); do [ -s "$work/port" ] && break; sleep 0.05; done
    [ -s "$work/port" ] || { cat "$work/server.log" >&2; exit 1; }
    commit_run 1500 1000000 >/dev/null # warm-up: the history full, the WAL in use
}
commit_run() { # count index-offset [extra client args]
    "$client" --port "$(cat "$work/port")" --user bench --password benchpw --schema-dir "$work/schemas" \
        --json --quiet --server-pid "$server" --sessions 1 --repeat "$1" --index-offset "$2" \
        edit-config --target running --config "$work/b8.xml" | tail -1
}
per_commit() { # json line -> summary
    $py -c 'import json,sys; d=json.loads(sys.argv[1]); print("%.0f commits/s, latency p50 %.2f ms p99 %.2f ms, server CPU %.0f us per commit" % (d["ops_per_s"], d["lat_p50_s"]*1e3, d["lat_p99_s"]*1e3, d["server_cpu_s"]/d["count"]*1e6))' "$1"
}

echo "# single-entry commits, 1 session, $commits commits after a 1500-commit warm-up ($(git -C "$here" rev-parse --short HEAD))"
for durability in full normal off; do
    start "$durability"
    echo "durability $durability: $(per_commit "$(commit_run "$commits" 0)")"
done

start full
observed() { # index-offset tool args...: COMMITS commits while the tool watches the server
    local offset=$1
    shift
    "$@" -p "$server" 2>/dev/null &
    local watcher=$!
    sleep 1
    commit_run "$commits" "$offset" >/dev/null
    kill -INT "$watcher"
    wait "$watcher" 2>/dev/null || true
}
if command -v perf >/dev/null; then
    # Every switch of a server thread off its CPU (voluntary or not), threads that exit included.
    observed 100000 perf record -e sched:sched_switch -o "$work/sched.data"
    echo
    echo "context switches per commit, by server thread (durability full):"
    perf script -i "$work/sched.data" -F comm 2>/dev/null | sort | uniq -c |
        awk -v n="$commits" '{d = $1 / n; if (d >= 0.01) printf "  %-16s %.2f\n", $2, d}'
fi

if command -v strace >/dev/null; then
    observed 200000 strace -f -c -o "$work/strace"
    echo
    echo "system calls per commit (strace -c, durability full):"
    awk -v n="$commits" '$NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ && $NF != "total" {c[$NF] = $4} $NF == "total" {t = $4}
        END {for (s in c) if (c[s] / n >= 0.05) printf "  %-14s %.2f\n", s, c[s] / n; printf "  %-14s %.2f\n", "total", t / n}' \
        "$work/strace" | sort -k2 -nr
fi

if command -v perf >/dev/null; then
    observed 300000 perf record -F 1000 -g -o "$work/perf.data"
    echo
    echo "server CPU by library (perf, durability full):"
    perf report -i "$work/perf.data" --no-children --sort dso -g none 2>/dev/null |
        awk '/^ +[0-9.]+%/ && $1 + 0 >= 0.5 {printf "  %-8s %s\n", $1, $2}'
    echo "top symbols:"
    perf report -i "$work/perf.data" --no-children --sort sym -g none 2>/dev/null |
        awk '/^ +[0-9.]+%/ && n < 12 {printf "  %-8s %s %s\n", $1, $2, $3; n++}'
fi

echo
echo "floor of a durable commit on this disk (no SQLite, no NETCONF):"
$py - "$work/floor.bin" <<'EOF'
# 8 frames of a WAL (24-byte header + 4096-byte page) written in place, then fdatasync: what
# SQLite's WAL commit at synchronous=FULL does for a single-entry commit, the file preallocated
# so that its size does not change (a WAL in steady state).
import os, resource, sys, time
path, frame, per, n = sys.argv[1], os.urandom(4120), 8, 2000
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
for i in range(n * per):
    os.pwrite(fd, frame, i * 4120)
os.fsync(fd)
r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
for i in range(n):
    for j in range(per):
        os.pwrite(fd, frame, (i * per + j) * 4120)
    os.fdatasync(fd)
t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
print("  %.0f commits/s, %.0f us wall and %.0f us CPU each" % (
    n / (t1 - t0), (t1 - t0) / n * 1e6, ((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)) / n * 1e6))
os.close(fd)
EOF
