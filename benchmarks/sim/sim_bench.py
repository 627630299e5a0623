#!/usr/bin/python3
"""A hundred simulated Open ROADM devices on one machine (issue 38's goal: 100 devices started in
<= 60 s, <= 3 GB resident in total, every device answering a controller's <get> of info within 1 s
while all are up), measured in one run:

1. `ncstore-sim start` of --count devices from --dump (wall time; each device's first start
   includes its SSH host keys, its user and the lenient load of the dump);
2. memory with all up: the sum of every device process's VmRSS (pages shared between them, such
   as the binary and libraries, counted once per process) and of its Pss (shared pages divided
   among their users: what the devices cost together);
3. a controller's <get> of /org-openroadm-device/info on every device while all are up, with
   --clients sessions in parallel (the project's framing-only client, clients/python/ncframed.py,
   so that the client's XML handling is not what is timed): login time and <get> time per device,
   then the <get> again on all sessions open at once;
4. `ncstore-sim stop`.

  /usr/bin/python3 benchmarks/sim/sim_bench.py --count 100 --dump DUMP --yang-dir DIR --out results.json
"""

import argparse
import concurrent.futures
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "clients", "python"))
from ncframed import FramedSession  # noqa: E402

SIM = os.path.join(REPO, "tools", "ncstore-sim")
INFO = ('<get><filter type="subtree"><org-openroadm-device xmlns="http://org/openroadm/device">'
        '<info/></org-openroadm-device></filter></get>')


def pids(root):
    out = []
    for d in sorted(os.listdir(root)):
        p = os.path.join(root, d, "pid")
        if d.startswith("dev-") and os.path.exists(p):
            out.append(int(open(p).read()))
    return out


def memory_kib(pid):
    rss = pss = 0
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    for line in open("/proc/%d/smaps_rollup" % pid):
        if line.startswith("Pss:"):
            pss = int(line.split()[1])
    return rss, pss


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def stats(values):
    return {"p50_ms": round(pct(values, 0.5) * 1000, 1), "p99_ms": round(pct(values, 0.99) * 1000, 1),
            "max_ms": round(max(values) * 1000, 1), "mean_ms": round(statistics.mean(values) * 1000, 1)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--dump", required=True)
    p.add_argument("--yang-dir", action="append", required=True)
    p.add_argument("--base-port", type=int, default=27830)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--parallel", type=int, default=os.cpu_count() or 2)
    p.add_argument("--out")
    args = p.parse_args()
    root = tempfile.mkdtemp(prefix="ncstore-sim-bench-")
    models = sum((["--yang-dir", d] for d in args.yang_dir), [])
    result = {"count": args.count, "dump": os.path.basename(args.dump), "clients": args.clients,
              "machine": "%s, %d cores, %s" % (platform.platform(), os.cpu_count(), platform.python_version())}
    try:
        t0 = time.perf_counter()
        subprocess.run([SIM, "start", "--dir", root, "--count", str(args.count), "--dump", args.dump,
                        "--base-port", str(args.base_port), "--parallel", str(args.parallel)] + models,
                       check=True, stdout=subprocess.DEVNULL)
        result["start_s"] = round(time.perf_counter() - t0, 1)

        mem = [memory_kib(pid) for pid in pids(root)]
        result["devices_running"] = len(mem)
        result["rss_total_mib"] = round(sum(r for r, _ in mem) / 1024)
        result["pss_total_mib"] = round(sum(p for _, p in mem) / 1024)
        result["pss_per_device_mib"] = round(sum(p for _, p in mem) / 1024 / max(1, len(mem)), 1)

        ports = [args.base_port + n for n in range(args.count)]
        sessions, logins, gets, errors = {}, [], [], 0

        def controller(port):
            t = time.perf_counter()
            s = FramedSession("127.0.0.1", port, "admin", "admin", timeout=30, nodelay=True)
            t1 = time.perf_counter()
            reply = s.call(INFO)
            t2 = time.perf_counter()
            return port, s, t1 - t, t2 - t1, b"<node-id" in reply and b"<vendor" in reply

        with concurrent.futures.ThreadPoolExecutor(max_workers=args.clients) as pool:
            for port, s, login, get, ok in pool.map(controller, ports):
                sessions[port] = s
                logins.append(login)
                gets.append(get)
                errors += 0 if ok else 1
        result["login"] = stats(logins)
        result["get_info_first"] = stats(gets)
        result["login_plus_get_max_ms"] = round(max(a + b for a, b in zip(logins, gets)) * 1000, 1)

        def again(port):
            t = time.perf_counter()
            reply = sessions[port].call(INFO)
            return time.perf_counter() - t, b"<node-id" in reply

        with concurrent.futures.ThreadPoolExecutor(max_workers=args.clients) as pool:
            second = list(pool.map(again, ports))
        errors += sum(0 if ok else 1 for _, ok in second)
        result["get_info_all_open"] = stats([t for t, _ in second])
        result["errors"] = errors
        for s in sessions.values():
            s.close()
    finally:
        t0 = time.perf_counter()
        subprocess.run([SIM, "stop", "--dir", root], check=False, stdout=subprocess.DEVNULL)
        result["stop_s"] = round(time.perf_counter() - t0, 1)
        subprocess.run(["rm", "-rf", root], check=False)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0 if result.get("errors", 1) == 0 and result.get("devices_running") == args.count else 1


if __name__ == "__main__":
    sys.exit(main())
