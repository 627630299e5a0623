#!/usr/bin/python3
"""Runs the datastore benchmarks (ncstore-ds-bench) and writes
benchmarks/results/<date>-<commit>-datastore.md beside the JSON it measured.

    benchmarks/datastore/report.py BUILD_DIR [--filter REGEX]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# benchmark name prefix -> (what, target as text, check(run) -> bool or None)
TARGETS = [
    ("StoreDevices/1000", "store 1000 CPS devices into an empty store", "<= 100 ms",
     lambda r: r["real_time"] <= 100),
    ("MergeLeaves/1000", "merge 2 leaves on each of 1000 devices", "<= 10 ms", lambda r: r["real_time"] <= 10),
    ("DeleteDevices/300", "delete 300 devices (of 300)", "<= 10 ms", lambda r: r["real_time"] <= 10),
    ("ConcurrentCommits/50/1000/0", "50 committers x 1000 one-entry commits, store of 10,000, durability full",
     ">= 50,000 commits/s", lambda r: r.get("commits_per_second", 0) >= 50000),
    ("ConcurrentCommits/50/1000/1", "the same at durability normal", "-", None),
    ("ConcurrentCommits/5/2000/0", "5 committers x 2000 commits, durability full", "-", None),
    ("ConcurrentCommitsListened/50/1000/0", "50 x 1000 with one change listener registered",
     "within 5% of 50 x 1000", None),
    ("SingleCommit/1000", "one single-entry commit, store of 1k entries", "within 2x of each other", None),
    ("SingleCommit/10000", "one single-entry commit, store of 10k entries", "within 2x of each other", None),
    ("SingleCommit/100000", "one single-entry commit, store of 100k entries", "within 2x of each other", None),
    ("Startup/10000", "open a store of 10,000 devices and read", "-", None),
    ("Startup/50000", "open a store of 50,000 devices (4.3M fragments) and read", "<= 10 s, RSS <= 3 GB",
     lambda r: r["real_time"] <= 10000 and r.get("store_rss_mb", 0) <= 3072),
]

COUNTERS = ["apply_ms", "validate_ms", "serialize_ms", "commit_wait_ms", "commits_per_second",
            "commits_per_transaction", "p50_us", "p99_us", "payload_bytes_per_changed_leaf",
            "disk_bytes_per_changed_leaf", "records_per_op", "store_rss_mb", "file_mb",
            "fragments_per_second"]


def fmt_time(r):
    unit = r.get("time_unit", "ms")
    return f"{r['real_time']:.3g} {unit} (CPU {r['cpu_time']:.3g} {unit})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--filter", default=".")
    args = ap.parse_args()
    bench = os.path.join(args.build, "benchmarks", "datastore", "ncstore-ds-bench")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    day = datetime.datetime.utcnow().strftime("%Y-%m-%d")
    out_dir = os.path.join(ROOT, "benchmarks", "results")
    base = os.path.join(out_dir, f"{day}-{commit}-datastore")
    load_before = open("/proc/loadavg").read().split()[:3]
    cmd = [bench, f"--benchmark_filter={args.filter}", f"--benchmark_out={base}.json",
           "--benchmark_out_format=json"]
    started = datetime.datetime.utcnow()
    subprocess.run(cmd, check=True)
    minutes = (datetime.datetime.utcnow() - started).total_seconds() / 60
    load_after = open("/proc/loadavg").read().split()[:3]
    data = json.load(open(base + ".json"))
    runs = {b["name"]: b for b in data["benchmarks"]}
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    mem = next((l.split(":", 1)[1].strip() for l in open("/proc/meminfo") if l.startswith("MemTotal")), "?")

    lines = [f"# Datastore benchmarks {day}, commit {commit}" + (" (with uncommitted changes)" if dirty else ""),
             "",
             f"Command: `benchmarks/datastore/report.py {args.build}` ({minutes:.1f} min), which runs `{' '.join(cmd[:2])}`",
             "",
             f"Machine: {os.cpu_count()} CPUs ({cpu}), {mem} memory; load average {' '.join(load_before)} before, "
             f"{' '.join(load_after)} after (the machine is shared: other builds and tests may run).",
             "",
             "No network: the datastore API is called in-process; every write includes its durable SQLite "
             "commit (WAL, synchronous=FULL unless stated). Payloads come from clients/generator/ncstore-gen "
             "(CPS device shape: 86 fragments, 116 leaves) and are parsed before the clock starts.",
             "",
             "| scenario | target | measured (wall, CPU of the calling thread) | met | details |",
             "|---|---|---|---|---|"]
    for prefix, what, target, check in TARGETS:
        run = next((r for n, r in runs.items() if n.startswith(prefix + "/") or n == prefix), None)
        if not run:
            continue
        met = "-" if check is None else ("yes" if check(run) else "**no**")
        details = ", ".join(f"{k}={run[k]:.4g}" for k in COUNTERS if k in run)
        lines.append(f"| {what} | {target} | {fmt_time(run)} | {met} | {details} |")
    single = [runs[n]["real_time"] for n in runs if n.startswith("SingleCommit/")]
    if len(single) == 3:
        lines += ["", f"Single-entry commit latency, largest / smallest over 1k, 10k, 100k entries: "
                      f"{max(single) / min(single):.2f}x (target: within 2x)."]
    lines += ["", "Counters: apply/validate/serialize/commit_wait = where the time of one write went "
                  "(WriteTiming); payload_bytes_per_changed_leaf = bytes handed to SQLite per changed leaf; "
                  "disk_bytes_per_changed_leaf = /proc/self/io write_bytes per changed leaf (WAL, checkpoints, "
                  "the real write amplification); store_rss_mb = resident memory the opened store added.",
              "", f"Raw results: `{os.path.basename(base)}.json`."]
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print(base + ".md")


if __name__ == "__main__":
    sys.exit(main())
