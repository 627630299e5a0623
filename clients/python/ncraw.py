#!/usr/bin/python3
"""Time get-config without parsing the reply: NETCONF 1.1 framing over paramiko (Debian
python3-paramiko), the reply's bytes only counted.

Big replies make XML-parsing clients the bottleneck (ncstore-client's libyang parse of 20 MB,
ncclient's framing in Python): both spend more CPU than the server. This client only frames and
counts, so the figure is the server's and the transport's. A reply that is not an <rpc-reply>, or
holds an <rpc-error>, counts as an error. Output: one JSON line, as nctime.py prints.

  ncraw.py --port 830 --user u --password p get-config --filter filter.xml -r 5

The host key is not checked: this is a benchmark tool for servers on this machine.
"""
import argparse
import socket
import sys
import time

import paramiko

from nctime import proc_cpu_seconds, read, summary

BASE_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"
BASE_11 = "urn:ietf:params:netconf:base:1.1"
EOM = b"]]>]]>"


class RawSession:
    """One NETCONF 1.1 session; call() returns a reply's bytes, unparsed."""

    def __init__(self, args):
        sock = socket.create_connection((args.host, args.port), timeout=args.timeout)
        self.transport = paramiko.Transport(sock)
        self.transport.connect(username=args.user, password=args.password)
        self.chan = self.transport.open_session(timeout=args.timeout)
        self.chan.settimeout(args.timeout)
        self.chan.invoke_subsystem("netconf")
        self.buf = bytearray()
        self.pos = 0
        hello = self._until(EOM)
        if BASE_11.encode() not in hello:
            raise SystemExit("ncraw.py: the server does not offer base:1.1 (chunked framing)")
        self.chan.sendall(f'<?xml version="1.0" encoding="UTF-8"?><hello xmlns="{BASE_NS}"><capabilities>'
                          f'<capability>{BASE_11}</capability></capabilities></hello>'.encode() + EOM)
        self.message_id = 0

    def close(self):
        self.transport.close()

    def call(self, operation):
        self.message_id += 1
        msg = f'<rpc xmlns="{BASE_NS}" message-id="{self.message_id}">{operation}</rpc>'.encode()
        self.chan.sendall(b"\n#%d\n" % len(msg) + msg + b"\n##\n")
        reply = bytearray()
        while True:
            self._need(4)
            if self.buf[self.pos:self.pos + 4] == b"\n##\n":
                self.pos += 4
                return bytes(reply)
            if self.buf[self.pos:self.pos + 2] != b"\n#":
                raise RuntimeError("ncraw.py: bad chunk header from the server")
            end = self._find(b"\n", self.pos + 2)
            size = int(self.buf[self.pos + 2:end])
            self.pos = end + 1
            self._need(size)
            reply += self.buf[self.pos:self.pos + size]
            self.pos += size

    def _fill(self):
        if self.pos > (1 << 20):  # drop what was consumed, keeping the buffer small
            del self.buf[:self.pos]
            self.pos = 0
        data = self.chan.recv(1 << 20)
        if not data:
            raise EOFError("ncraw.py: the server closed the session")
        self.buf += data

    def _need(self, n):
        while len(self.buf) - self.pos < n:
            self._fill()

    def _find(self, marker, start):
        while True:
            at = self.buf.find(marker, start)
            if at >= 0:
                return at
            self._fill()

    def _until(self, marker):
        end = self._find(marker, self.pos)
        out = bytes(self.buf[self.pos:end])
        self.pos = end + len(marker)
        return out


def is_error(reply):
    return b"<rpc-reply" not in reply[:4096] or b"rpc-error>" in reply


def cmd_get_config(args, session):
    filter_xml = read(args.filter) if args.filter else ""
    operation = f"<get-config><source><{args.source}/></source>{filter_xml}</get-config>"
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
    summary(args.name or "get-config (raw)", seconds, client_cpu, server_cpu, errors, {"reply_bytes": size})


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
    args = ap.parse_args()
    session = RawSession(args)
    try:
        cmd_get_config(args, session)
    finally:
        session.close()


if __name__ == "__main__":
    main()
