#!/usr/bin/python3
"""Notification clients for benchmarks/run (B13, B14): they frame and scan, never parse XML, so that
the server is what is measured. NETCONF 1.1 over paramiko (Debian python3-paramiko). B12's ten
subscribers are benchmarks/follow (C++): ten of these cost as much CPU as the server.

  notify_bench.py latency --port P --user U --password W --edits N
  notify_bench.py replay  --port P --user U --password W

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
    lt = sub.add_parser("latency")
    lt.add_argument("--edits", type=int, default=1000)
    lt.add_argument("--gap", type=float, default=0.002, help="seconds between edits")
    lt.add_argument("--yang-push", action="store_true", help="an RFC 8641 on-change subscription, not RFC 5277")
    sub.add_parser("replay")
    a = ap.parse_args()
    heap.keep_freed_memory()
    {"latency": latency, "replay": replay}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
