#!/usr/bin/python3
"""Time get-config (or any read RPC) without parsing the reply: NETCONF 1.1 framing over paramiko (Debian
python3-paramiko), the reply's bytes only counted.

Big replies make XML-parsing clients the bottleneck (ncstore-client's libyang parse of 20 MB,
ncclient's framing in Python): both spend more CPU than the server. This client only frames and
counts, so the figure is the server's and the transport's. A reply that is not an <rpc-reply>, or
holds an <rpc-error>, counts as an error. Output: one JSON line, as nctime.py prints.

  ncraw.py --port 830 --user u --password p get-config --filter filter.xml -r 5
  ncraw.py --port 830 --user u --password p rpc --operation get-data.xml -r 5
"""
import argparse
import sys
import time

import heap
from ncframed import FramedSession
from nctime import proc_cpu_seconds, read, summary


def is_error(reply):
    return b"<rpc-reply" not in reply[:4096] or b"rpc-error>" in reply


def cmd_get_config(args, session):
    filter_xml = read(args.filter) if args.filter else ""
    timed(args, session, f"<get-config><source><{args.source}/></source>{filter_xml}</get-config>",
          "get-config (raw)")


def timed(args, session, operation, name):
    """`operation` sent args.repeat times, each reply read whole and checked; one JSON line."""
    seconds, client_cpu, server_cpu, errors, size = [], [], [], 0, 0
    for _ in range(args.repeat):
        s0 = proc_cpu_seconds(args.server_pid) if args.server_pid else None
        c0 = time.process_time()
        t0 = time.perf_counter()
        reply = session.call(operation)
        t1 = time.perf_counter()
        client_cpu.append(time.process_time() - c0)
        if s0 is not None:
            server_cpu.append(proc_cpu_seconds(args.server_pid) - s0)
        seconds.append(t1 - t0)
        size = len(reply)
        if is_error(reply):
            errors += 1
            print(f"rpc-error: {reply[:2000].decode(errors='replace')}", file=sys.stderr)
    summary(args.name or name, seconds, client_cpu, server_cpu, errors, {"reply_bytes": size})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=830)
    ap.add_argument("--user", required=True)
    ap.add_argument("--password", required=True)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--server-pid", type=int, help="a server on this machine: report its CPU seconds")
    ap.add_argument("--name", help="the op name in the JSON line")
    sub = ap.add_subparsers(dest="cmd", required=True)
    get = sub.add_parser("get-config", help="time one get-config")
    get.add_argument("--source", default="running")
    get.add_argument("--filter", help="file holding a <filter> element")
    get.add_argument("-r", "--repeat", type=int, default=3)
    rpc = sub.add_parser("rpc", help="time any RPC whose reply is read whole (get-data, get, ...)")
    rpc.add_argument("--operation", required=True, help="file holding the operation element")
    rpc.add_argument("-r", "--repeat", type=int, default=3)
    args = ap.parse_args()
    heap.keep_freed_memory()
    try:
        session = FramedSession(args.host, args.port, args.user, args.password, args.timeout)
    except RuntimeError as e:
        raise SystemExit(f"ncraw.py: {e}")
    try:
        if args.cmd == "rpc":
            timed(args, session, read(args.operation), "rpc (raw)")
        else:
            cmd_get_config(args, session)
    finally:
        session.close()


if __name__ == "__main__":
    main()
