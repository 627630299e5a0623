#!/usr/bin/python3
"""Time NETCONF operations against any server with ncclient (Debian python3-ncclient).

Every sub-command prints one JSON line per measured operation with median/min/max over the
repeats, the client's CPU seconds and, with --server-pid (a server on this machine), the
server's CPU seconds over the same window.

  nctime.py --port 830 --user u --password p edit --config set.xml --reset reset.xml -r 5
  nctime.py ... get-config --filter filter.xml -r 5
  nctime.py ... concurrent --procs 5 --count 1000 --template b8.xml   # B8: @I@ = unique index

Payload files hold a <config> (edit-config) or a <filter> (get-config) element, as written by
clients/generator/ncstore-gen. `edit --setup FILE` edit-configs run before each repeat, outside
the clock (e.g. remove everything, then load the starting state).

ncclient is slow (pure Python SSH framing and lxml): compare its CPU seconds to the elapsed time
before trusting a figure, and prefer ncstore-client (C++) for throughput tests. ncclient 0.6.13's
session thread sends a queued request only when its select() wakes up, every TICK = 0.1 s when the
server is quiet: up to 100 ms added to every request. --tick (default 0.001 s) lowers that module
constant; --tick 0.1 reproduces stock ncclient.
"""
import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time

import ncclient.transport.ssh
from ncclient import manager
from ncclient.operations.rpc import RPCError

import heap

CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu_seconds(pid):
    """utime + stime of a process from /proc/<pid>/stat (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def connect(args):
    return manager.connect(host=args.host, port=args.port, username=args.user, password=args.password,
                           hostkey_verify=False, look_for_keys=False, allow_agent=False,
                           timeout=args.timeout, device_params={"name": "default"})


def read(path):
    with open(path) as f:
        return f.read()


def summary(name, seconds, client_cpu, server_cpu, errors, extra=None):
    out = {"op": name, "runs": len(seconds), "median_s": statistics.median(seconds), "min_s": min(seconds),
           "max_s": max(seconds), "client_cpu_s": statistics.median(client_cpu), "errors": errors}
    if server_cpu:
        out["server_cpu_s"] = statistics.median(server_cpu)
    if extra:
        out.update(extra)
    print(json.dumps(out), flush=True)


def timed(args, fn):
    """Runs fn once, returns (seconds, client cpu, server cpu or None, error or None)."""
    s0 = proc_cpu_seconds(args.server_pid) if args.server_pid else None
    c0 = time.process_time()
    t0 = time.perf_counter()
    error = None
    try:
        fn()
    except RPCError as e:
        error = f"{e.tag}: {e.message}"
    t1 = time.perf_counter()
    c1 = time.process_time()
    s1 = proc_cpu_seconds(args.server_pid) if args.server_pid else None
    return t1 - t0, c1 - c0, (s1 - s0) if s0 is not None else None, error


def cmd_edit(args, m):
    payload = read(args.config)
    setups = [read(p) for p in args.setup]
    seconds, ccpu, scpu, errors = [], [], [], 0
    for _ in range(args.repeat):
        for s in setups:
            try:
                m.edit_config(target=args.target, config=s)
            except RPCError:
                pass  # e.g. removing what is not there
        t, c, s, err = timed(args, lambda: m.edit_config(target=args.target, config=payload))
        seconds.append(t)
        ccpu.append(c)
        if s is not None:
            scpu.append(s)
        if err:
            errors += 1
            print(f"rpc-error: {err}", file=sys.stderr)
    summary(args.name or "edit-config", seconds, ccpu, scpu, errors, {"bytes": len(payload)})


def cmd_get_config(args, m):
    flt = read(args.filter) if args.filter else None
    if args.xpath:
        flt = ("xpath", args.xpath)
    seconds, ccpu, scpu, errors, size = [], [], [], 0, 0

    def run():
        nonlocal size
        reply = m.get_config(source=args.source, filter=flt)
        size = len(reply.xml)

    for _ in range(args.repeat):
        t, c, s, err = timed(args, run)
        seconds.append(t)
        ccpu.append(c)
        if s is not None:
            scpu.append(s)
        if err:
            errors += 1
            print(f"rpc-error: {err}", file=sys.stderr)
    summary(args.name or "get-config", seconds, ccpu, scpu, errors, {"reply_bytes": size})


def concurrent_worker(args, index, template, barrier, queue):
    try:
        m = connect(args)
        payloads = [template.replace("@I@", str(args.index_offset + index * args.count + i))
                    .replace("@S@", str(index)).replace("@N@", str(i)) for i in range(args.count)]
        barrier.wait()
        c0 = time.process_time()
        lat, errors = [], 0
        for p in payloads:
            t0 = time.perf_counter()
            try:
                m.edit_config(target=args.target, config=p)
            except RPCError:
                errors += 1
            lat.append(time.perf_counter() - t0)
        end = time.time()
        queue.put({"lat": lat, "errors": errors, "cpu": time.process_time() - c0, "end": end})
        m.close_session()
    except Exception as e:  # reported to the parent, which fails
        queue.put({"failure": f"{type(e).__name__}: {e}"})
        barrier.abort()


def cmd_concurrent(args, _):
    template = read(args.template)
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(args.procs + 1)
    queue = ctx.Queue()
    procs = [ctx.Process(target=concurrent_worker, args=(args, i, template, barrier, queue))
             for i in range(args.procs)]
    for p in procs:
        p.start()
    barrier.wait(timeout=600)
    s0 = proc_cpu_seconds(args.server_pid) if args.server_pid else None
    start = time.time()
    results = [queue.get(timeout=3600) for _ in procs]
    for p in procs:
        p.join()
    s1 = proc_cpu_seconds(args.server_pid) if args.server_pid else None
    failures = [r["failure"] for r in results if "failure" in r]
    if failures:
        sys.exit("concurrent: " + "; ".join(failures))
    lat = sorted(x for r in results for x in r["lat"])
    total = max(r["end"] for r in results) - start

    def pct(p):
        return lat[min(len(lat) - 1, max(0, int(-(-p * len(lat) // 100)) - 1))]

    out = {"op": args.name or "concurrent-edit", "procs": args.procs, "count": len(lat),
           "errors": sum(r["errors"] for r in results), "seconds": total, "ops_per_s": len(lat) / total,
           "lat_min_s": lat[0], "lat_avg_s": sum(lat) / len(lat), "lat_p50_s": pct(50), "lat_p99_s": pct(99),
           "lat_max_s": lat[-1], "client_cpu_s": sum(r["cpu"] for r in results)}
    if s0 is not None:
        out["server_cpu_s"] = s1 - s0
    print(json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=830)
    ap.add_argument("--user", default=os.environ.get("USER", "root"))
    ap.add_argument("--password")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per reply")
    ap.add_argument("--server-pid", type=int, help="report this local server process's CPU time")
    ap.add_argument("--name", help="label of the JSON line")
    ap.add_argument("--tick", type=float, default=0.001,
                    help="ncclient's send-queue polling period in seconds (stock: 0.1)")
    sub = ap.add_subparsers(dest="command", required=True)
    e = sub.add_parser("edit", help="time one edit-config payload")
    e.add_argument("--target", default="running")
    e.add_argument("--config", required=True)
    e.add_argument("--setup", action="append", default=[], help="untimed edit-config before each repeat")
    e.add_argument("-r", "--repeat", type=int, default=3)
    g = sub.add_parser("get-config", help="time one get-config")
    g.add_argument("--source", default="running")
    g.add_argument("--filter", help="file with a <filter> element")
    g.add_argument("--xpath")
    g.add_argument("-r", "--repeat", type=int, default=3)
    c = sub.add_parser("concurrent", help="P processes x K sequential edit-configs (B8)")
    c.add_argument("--target", default="running")
    c.add_argument("--procs", type=int, default=5)
    c.add_argument("--count", type=int, default=100)
    c.add_argument("--template", required=True, help="<config> with @I@ (unique index), @S@, @N@")
    c.add_argument("--index-offset", type=int, default=0)
    args = ap.parse_args()
    heap.keep_freed_memory()
    ncclient.transport.ssh.TICK = args.tick  # read by the session thread on every loop
    if args.command == "concurrent":
        cmd_concurrent(args, None)
        return
    with connect(args) as m:
        {"edit": cmd_edit, "get-config": cmd_get_config}[args.command](args, m)


if __name__ == "__main__":
    main()
