#!/usr/bin/python3
"""Notification clients for benchmarks/run (B12-B14): they frame and scan, never parse XML, so that
the server is what is measured. NETCONF 1.1 over paramiko (Debian python3-paramiko).

  notify_bench.py follow  --port P --user U --password W --names PREFIX --count N [--per-session K]
  notify_bench.py latency --port P --user U --password W --edits N
  notify_bench.py replay  --port P --user U --password W

follow: subscribes (RFC 5277, stream NETCONF; with --yang-push an RFC 8641 on-change subscription to
        running's /interfaces), prints "ready", then reads until it has seen N config-change edits (or
        YANG Patch edits) of interfaces named PREFIX<first+i> (or --idle seconds pass without one). Checks
        what the benchmark must not assume: every i in [0, N) exactly once; with --per-session K, the
        entries of one editing session (i // K) in the order it made them; eventTime never going back.
latency: one session edits, another is subscribed (--yang-push: on change): per edit, the time from the editor's <ok/> to the
        subscriber's reading of its notification (p50/p99/max).
replay: subscribes with a startTime before everything and times the replay up to replayComplete;
        reports notifications/s and the largest number of edits one replayed notification carried.
Each prints one JSON line.
"""
import argparse
import json
import os
import re
import socket
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "clients", "python"))
import heap  # noqa: E402
from ncframed import FramedSession  # noqa: E402

NOTIF_NS = "urn:ietf:params:xml:ns:netconf:notification:1.0"
SN_NS = "urn:ietf:params:xml:ns:yang:ietf-subscribed-notifications"
YP_NS = "urn:ietf:params:xml:ns:yang:ietf-yang-push"
DS_NS = "urn:ietf:params:xml:ns:yang:ietf-datastores"
IF_NS = "urn:ietf:params:xml:ns:yang:ietf-interfaces"
END = b"</notification>"
EVENT_TIME = re.compile(rb"<eventTime>([^<]+)</eventTime>")


class Session(FramedSession):
    """A session that may receive notifications: rpc() skips them on the way to its reply."""

    def __init__(self, a):
        super().__init__(a.host, a.port, a.user, a.password, window_size=64 << 20, nodelay=True)

    def rpc(self, op):
        self.send(op)
        while True:
            m = self.message()
            if m.startswith(b"<rpc-reply") or b"<rpc-reply" in m[:200]:
                if b"rpc-error" in m:
                    raise RuntimeError("rpc-error: " + m[:800].decode(errors="replace"))
                return m


def subscribe(s, yang_push, prefix):
    """Subscribes session `s` (RFC 5277, or YANG-Push on change to running's /interfaces); returns
    the pattern whose group 1 is the number in the name of an interface PREFIX<n> an event changes."""
    if yang_push:
        s.rpc(f'<establish-subscription xmlns="{SN_NS}" xmlns:yp="{YP_NS}" xmlns:ds="{DS_NS}">'
              f'<yp:datastore>ds:running</yp:datastore><yp:datastore-xpath-filter xmlns:if="{IF_NS}">/if:interfaces'
              f'</yp:datastore-xpath-filter><yp:on-change><yp:sync-on-start>false</yp:sync-on-start></yp:on-change>'
              f'</establish-subscription>')
        # One YANG Patch edit per entry: its target (the value repeats the name).
        return re.compile(rb"<target>/ietf-interfaces:interfaces/interface=" + re.escape(prefix.encode()) +
                          rb"(\d+)</target>")
    s.rpc(f'<create-subscription xmlns="{NOTIF_NS}"/>')
    return re.compile(rb"interface\[[\w.-]*:?name=(?:&apos;|')" + re.escape(prefix.encode()) + rb"(\d+)")


def follow(a):
    s = Session(a)
    names = subscribe(s, a.yang_push, a.names)
    print("ready", flush=True)
    seen = {}
    dup = 0
    order = 0
    last_by_session = {}
    last_time = b""
    time_back = 0
    start = time.perf_counter()
    s.chan.settimeout(a.idle)
    try:
        while len(seen) < a.count:
            m = s.message()
            if END not in m:
                continue
            t = EVENT_TIME.search(m)
            if t:
                if t.group(1) < last_time:
                    time_back += 1
                last_time = t.group(1)
            for i in (int(x) - a.first for x in names.findall(m)):
                if i in seen:
                    dup += 1
                seen[i] = True
                if a.per_session:
                    sess = i // a.per_session
                    if last_by_session.get(sess, -1) > i:
                        order += 1
                    last_by_session[sess] = i
    except (socket.timeout, TimeoutError, EOFError) as e:
        err = repr(e)
    else:
        err = None
    missing = sum(1 for i in range(a.count) if i not in seen)
    print(json.dumps({"received": len(seen), "duplicates": dup, "missing": missing, "order_violations": order,
                      "time_going_back": time_back, "seconds": time.perf_counter() - start,
                      "cpu_s": time.process_time(), "error": err}),
          flush=True)


def iface_edit(name):
    return (f'<edit-config><target><running/></target><config><interfaces xmlns="{IF_NS}"><interface>'
            f'<name>{name}</name><type xmlns:ia="urn:ietf:params:xml:ns:yang:iana-if-type">ia:ethernetCsmacd</type>'
            f'</interface></interfaces></config></edit-config>')


def latency(a):
    sub = Session(a)
    names = subscribe(sub, a.yang_push, "lat")
    editor = Session(a)
    received = {}

    def reader():
        while len(received) < a.edits:
            m = sub.message()
            now = time.perf_counter()
            for i in names.findall(m):
                received.setdefault(int(i), now)

    editor.rpc(iface_edit("lat-sentinel"))  # the container exists: each edit then names its entry
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    acked = {}
    for i in range(a.edits):
        editor.rpc(iface_edit(f"lat{i}"))
        acked[i] = time.perf_counter()
        time.sleep(a.gap)
    t.join(timeout=60)
    lat = sorted(received[i] - acked[i] for i in acked if i in received)
    print(json.dumps({"edits": a.edits, "received": len(lat),
                      "p50_s": statistics.median(lat) if lat else None,
                      "p99_s": lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else None,
                      "max_s": lat[-1] if lat else None,
                      # A notification read before its <ok/> came back: negative latency.
                      "before_ok": sum(1 for x in lat if x < 0)}), flush=True)


def replay(a):
    s = Session(a)
    t0 = time.perf_counter()
    s.send(f'<create-subscription xmlns="{NOTIF_NS}"><startTime>2000-01-01T00:00:00Z</startTime>'
           f'</create-subscription>')
    count = 0
    most_edits = 0
    total_bytes = 0
    while True:
        m = s.message()
        total_bytes += len(m)
        if b"replayComplete" in m:
            break
        if END in m:
            count += 1
            most_edits = max(most_edits, m.count(b"<edit>"))
    secs = time.perf_counter() - t0
    print(json.dumps({"notifications": count, "seconds": secs, "per_s": count / secs if secs else None,
                      "most_edits_in_one": most_edits, "bytes": total_bytes}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--user", required=True)
    ap.add_argument("--password", required=True)
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("follow")
    f.add_argument("--names", required=True)
    f.add_argument("--count", type=int, required=True)
    f.add_argument("--first", type=int, default=0, help="the names are PREFIX<first> .. PREFIX<first+count-1>")
    f.add_argument("--per-session", type=int, default=0)
    f.add_argument("--idle", type=float, default=120)
    f.add_argument("--yang-push", action="store_true", help="an RFC 8641 on-change subscription, not RFC 5277")
    lt = sub.add_parser("latency")
    lt.add_argument("--edits", type=int, default=1000)
    lt.add_argument("--gap", type=float, default=0.002, help="seconds between edits")
    lt.add_argument("--yang-push", action="store_true", help="an RFC 8641 on-change subscription, not RFC 5277")
    sub.add_parser("replay")
    a = ap.parse_args()
    heap.keep_freed_memory()
    {"follow": follow, "latency": latency, "replay": replay}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
