#!/usr/bin/env bash
# Runs one libFuzzer target of tests/fuzz with its committed seeds, dictionary and crash inputs.
#
#   run.sh replay BINARY           every committed seed and crash input once (ctest -L fuzz)
#   run.sh smoke  BINARY SECONDS   fuzz for SECONDS from the seeds in a scratch corpus (CI)
#   run.sh long   BINARY RUNS [CORPUS_DIR]
#                                  fuzz until RUNS executions (nice -n 19, FUZZ_JOBS workers,
#                                  default 1), keeping the corpus in CORPUS_DIR (default:
#                                  BINARY's dir/corpus-<target>), and print the line for
#                                  tests/fuzz/results/
#
# A crash stops the run with a non-zero status; its input is saved in FUZZ_ARTIFACTS (default:
# the binary's directory/artifacts) and printed in base64, to be committed under
# tests/fuzz/crashes/<target>/ once fixed (README.md).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
mode=${1:?mode: replay | smoke | long}
binary=$(realpath "${2:?fuzz target binary}")
target=$(basename "$binary")
seeds=$here/corpus/$target
crashes=$here/crashes/$target
artifacts=${FUZZ_ARTIFACTS:-$(dirname "$binary")/artifacts}
mkdir -p "$artifacts"

# libFuzzer takes one dictionary: the XML one plus the target's own.
dict_args=()
case $target in
fuzz_rpc) parts=("$here/dict/xml.dict" "$here/dict/netconf.dict") ;;
fuzz_filter) parts=("$here/dict/xml.dict" "$here/dict/filter.dict") ;;
fuzz_framing) parts=("$here/dict/framing.dict") ;;
fuzz_nacm) parts=("$here/dict/xml.dict") ;;
fuzz_app) parts=("$here/dict/app.dict") ;;
*) parts=() ;; # fuzz_edit reads bytes as choices, not text
esac
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ncstore-$target.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
if [ ${#parts[@]} -gt 0 ]; then
    cat "${parts[@]}" >"$scratch/dict"
    dict_args=(-dict="$scratch/dict")
fi

# Leaks are not checked per input (-detect_leaks=0): libFuzzer would stop on the first leak of a
# library cache; the ASan+UBSan build's test suite checks leaks instead.
common=(-artifact_prefix="$artifacts/" -print_final_stats=1 -detect_leaks=0 "${dict_args[@]}")

case $mode in
replay)
    inputs=()
    for dir in "$seeds" "$crashes"; do
        [ -d "$dir" ] && inputs+=("$dir"/*)
    done
    if [ ${#inputs[@]} -eq 0 ]; then
        echo "run.sh: no seeds or crash inputs for $target" >&2
        exit 1
    fi
    exec "$binary" "${common[@]}" "${inputs[@]}"
    ;;
smoke)
    seconds=${3:?seconds}
    mkdir "$scratch/corpus"
    exec "$binary" "${common[@]}" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 \
        "$scratch/corpus" "$seeds"
    ;;
long)
    runs=${3:?runs}
    corpus=${4:-$(dirname "$binary")/corpus-$target}
    jobs=${FUZZ_JOBS:-1}
    mkdir -p "$corpus"
    start=$(date -u +%FT%TZ)
    commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
    log=$(dirname "$binary")/long-$target
    # FUZZ_JOBS workers share the corpus directory (libFuzzer reloads what the others add) and
    # each runs its share of RUNS; the line for results/ sums their executions.
    pids=()
    for ((job = 1; job <= jobs; job++)); do
        share=$((runs / jobs + (job <= runs % jobs ? 1 : 0)))
        # Without the allocation and free stacks that ASan keeps for its reports (a crash input
        # is replayed with them afterwards, see README.md): fuzz_edit, whose time goes to ASan's
        # allocator, runs ~1.2x more inputs per second.
        # With autogroup scheduling (Debian's kernels), nice only ranks processes of one session:
        # against a build started from another terminal the fuzzer would still take a whole
        # core. In a session of its own with its group at nice 19, it gets only what is left.
        # -timeout is wall-clock time: at the lowest priority a worker can wait many seconds for a
        # core while builds and tests run (a 13 ms input took 14 s), hence 300 s, not 30.
        # The worker sets its group itself, once in its session: written from here, the write
        # could land before setsid and nice the caller's group instead (seen: the caller's
        # benchmarks at nice 19, the fuzzers at 0).
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}malloc_context_size=0 \
            nice -n 19 setsid sh -c 'echo 19 >/proc/self/autogroup 2>/dev/null
                chrt --idle 0 true 2>/dev/null && exec chrt --idle 0 "$@"; exec "$@"' fuzz \
            "$binary" "${common[@]}" -runs="$share" -timeout=300 -rss_limit_mb=4096 \
            "$corpus" "$seeds" >"$log-$job.log" 2>&1 &
        pids+=($!)
    done
    status=0
    for pid in "${pids[@]}"; do
        set +e
        wait "$pid"
        code=$?
        set -e
        # The first crash stops everyone: its input is in the artifacts, the others' time is
        # better spent on the fix.
        if [ "$code" -ne 0 ] && [ "$status" -eq 0 ]; then
            status=$code
            kill "${pids[@]}" 2>/dev/null || true
        fi
    done
    execs=0
    rate=0
    cov=
    for ((job = 1; job <= jobs; job++)); do
        n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log-$job.log" | tail -1)
        r=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log-$job.log" | tail -1)
        execs=$((execs + ${n:-0}))
        rate=$((rate + ${r:-0}))
        # This run's logs only (a longer earlier run left more); -a: a log can hold stray bytes.
        c=$(grep -aE '^#[0-9]+.*cov: ' "$log-$job.log" | tail -1 |
            sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/cov \1, ft \2, corpus \3/')
        cov=${c:-$cov}
    done
    # exit 0: RUNS executions without a crash; anything else: see the logs and the artifacts
    echo "| $target | $start .. $(date -u +%FT%TZ) | $commit | $execs ($jobs jobs) | $rate |" \
        "${cov:-?} | exit $status |"
    exit $status
    ;;
*)
    echo "run.sh: unknown mode $mode" >&2
    exit 2
    ;;
esac
