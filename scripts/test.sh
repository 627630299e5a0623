#!/usr/bin/env bash
# Builds and runs every test, then the hardening variants (README.md, "Test variants"):
#   normal  build/       RelWithDebInfo, the whole ctest suite (unit, datastore crash, e2e, models,
#                        packaging)
#   asan    build-asan/  AddressSanitizer + UBSan (+ LeakSanitizer), clang: the whole suite but the
#                        packaging test, the HA failover tests and the benchmark driver's smoke
#                        test, with no sanitizer report
#   tsan    build-tsan/  ThreadSanitizer, clang: the tests labelled `concurrency`
#   fuzz    build-fuzz/  clang libFuzzer targets: committed crash inputs replayed, then each target
#                        fuzzed for NCSTORE_FUZZ_SECONDS (default 30) from its seeds
# Usage: scripts/test.sh [STAGE...]   (default: normal asan tsan fuzz, in that order)
# Each stage prints its duration; the first failure stops the script.
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc)
fuzz_seconds=${NCSTORE_FUZZ_SECONDS:-30}
stages=("$@")
if [ ${#stages[@]} -eq 0 ]; then
    stages=(normal asan tsan fuzz)
fi

# A sanitizer build's processes write their reports under BUILD/sanitizer-reports
# (tests/sanitizers/ctest-env.cmake.in); a report fails the stage even where the test passed.
check_reports() {
    local dir=$1/sanitizer-reports
    if [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
        echo "test.sh: sanitizer reports in $dir:" >&2
        for f in "$dir"/*; do
            echo "--- $f" >&2
            cat "$f" >&2
        done
        return 1
    fi
}

configure() {
    local dir=$1
    shift
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON "$@"
}

stage_normal() {
    configure build
    cmake --build build -j"$jobs"
    local status=0
    ctest --test-dir build --output-on-failure --timeout 900 -j"$jobs" || status=$?
    # ctest shows no output of skipped tests: say once why tests were skipped (or failed under
    # CI=true: data outside the repository missing, see README.md).
    grep -ho 'needs .*: set NCSTORE_SHARED_DIR.*' build/Testing/Temporary/LastTest.log 2>/dev/null \
        | sort -u | sed 's/^/missing shared data: /' || true
    grep -ho 'ha: network namespaces need root.*\|ha: cannot create a network namespace.*' \
        build/Testing/Temporary/LastTest.log 2>/dev/null | sort -u | sed 's/^/skipped: /' || true
    return $status
}

stage_asan() {
    CC=clang CXX=clang++ configure build-asan -DNCSTORE_SANITIZE=address,undefined
    cmake --build build-asan -j"$jobs" --target suite # what ctest runs, not the benchmarks
    rm -rf build-asan/sanitizer-reports
    local status=0
    # Not under ASan: packaging (no instrumented code), the HA failover tests (timings of a cluster
    # in network namespaces; the dqlite client's code runs instrumented in dqlite_tests, the
    # store's contract tests and e2e_cluster) and the benchmark driver's smoke test (it tests
    # the driver; the server's paths are the e2e tests'), and the Python API's tests (label
    # python: they test the Python package; what they reach in the server is e2e_app's, which
    # runs here).
    ctest --test-dir build-asan --output-on-failure --timeout 1800 -j"$jobs" -LE 'packaging|^ha$|^python$' \
        -E '^clients_e2e_benchmarks_smoke$' || status=$?
    check_reports build-asan || status=1 # the reports also explain a failed test
    return $status
}

stage_tsan() {
    CC=clang CXX=clang++ configure build-tsan -DNCSTORE_SANITIZE=thread
    cmake --build build-tsan -j"$jobs" --target ncstored datastore_tests ncstore-crash-driver app_lib_test \
        ncstore-example-ifmgr # e2e_app runs it
    rm -rf build-tsan/sanitizer-reports
    local status=0
    ctest --test-dir build-tsan --output-on-failure --timeout 1800 -L concurrency || status=$?
    check_reports build-tsan || status=1 # the reports also explain a failed test
    return $status
}

stage_fuzz() {
    CC=clang CXX=clang++ configure build-fuzz -DNCSTORE_FUZZ=ON
    cmake --build build-fuzz -j"$jobs" --target fuzz
    ctest --test-dir build-fuzz --output-on-failure -L fuzz
    # The targets fuzz side by side, one per core: fuzz_seconds each, not five times that.
    local targets=(fuzz_rpc fuzz_filter fuzz_edit fuzz_framing fuzz_nacm fuzz_app) pids=() target
    for target in "${targets[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
            wait -n || true # each target's status is read below
        done
        echo "test.sh: fuzzing $target for ${fuzz_seconds}s"
        tests/fuzz/run.sh smoke "build-fuzz/tests/fuzz/$target" "$fuzz_seconds" \
            >"build-fuzz/tests/fuzz/smoke-$target.log" 2>&1 &
        pids+=($!)
    done
    local status=0 i
    for i in "${!targets[@]}"; do
        target=${targets[$i]}
        local log=build-fuzz/tests/fuzz/smoke-$target.log
        if ! wait "${pids[$i]}"; then
            tail -n 80 "$log" >&2
            echo "test.sh: $target found a crash: input in build-fuzz/tests/fuzz/artifacts, log $log" >&2
            status=1
            continue
        fi
        echo "test.sh: $target:"
        grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' "$log"
    done
    return $status
}

durations=()
for stage in "${stages[@]}"; do
    if ! declare -F "stage_$stage" >/dev/null; then
        echo "test.sh: unknown stage $stage (normal, asan, tsan, fuzz)" >&2
        exit 2
    fi
    start=$SECONDS
    echo "=== test.sh: stage $stage"
    "stage_$stage"
    durations+=("$stage $((SECONDS - start))s")
    echo "=== test.sh: stage $stage passed in $((SECONDS - start))s"
done
echo "=== test.sh: all stages passed: ${durations[*]}"
