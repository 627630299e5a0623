"""A NETCONF 1.1 session over paramiko (Debian python3-paramiko) that frames messages and does
nothing else: no XML parsing, a message is its bytes. The raw client shared by ncraw.py, the
notification benchmark (benchmarks/notify_bench.py) and the soak (benchmarks/soak/soak.py), where a
parsing client would cost more CPU than the server it measures.

The host key is not checked: these tools talk to servers on this machine.
"""
import re
import socket

import paramiko

BASE_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"
BASE_11 = "urn:ietf:params:netconf:base:1.1"
EOM = b"]]>]]>"


class ReplyMismatch(RuntimeError):
    """The server's next message was not the reply to the request just sent."""


class FramedSession:
    """One NETCONF 1.1 session: send() an operation, read the next message(), or call() both."""

    def __init__(self, host, port, user, password, timeout=600, window_size=None, nodelay=False):
        sock = socket.create_connection((host, port), timeout=timeout)
        if nodelay:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.transport = paramiko.Transport(sock)
        self.transport.connect(username=user, password=password)
        extra = {"window_size": window_size, "max_packet_size": 1 << 20} if window_size else {}
        self.chan = self.transport.open_session(timeout=timeout, **extra)
        self.chan.settimeout(timeout)
        self.chan.invoke_subsystem("netconf")
        self.buf = bytearray()
        self.pos = 0
        hello = self._until(EOM)
        if BASE_11.encode() not in hello:
            raise RuntimeError("the server does not offer base:1.1 (chunked framing)")
        m = re.search(rb"<session-id>(\d+)</session-id>", hello)
        self.id = int(m.group(1)) if m else 0
        self.chan.sendall(f'<?xml version="1.0" encoding="UTF-8"?><hello xmlns="{BASE_NS}"><capabilities>'
                          f'<capability>{BASE_11}</capability></capabilities></hello>'.encode() + EOM)
        self.message_id = 0

    def close(self):
        try:
            self.transport.close()
        except Exception:
            pass

    def send(self, operation):
        """Sends <rpc> around `operation` (XML text); returns its message-id."""
        self.message_id += 1
        msg = f'<rpc xmlns="{BASE_NS}" message-id="{self.message_id}">{operation}</rpc>'.encode()
        self.chan.sendall(b"\n#%d\n" % len(msg) + msg + b"\n##\n")
        return self.message_id

    def message(self):
        """The next message from the server (a reply or a notification), as bytes."""
        out = bytearray()
        while True:
            self._need(4)
            if self.buf[self.pos:self.pos + 4] == b"\n##\n":
                self.pos += 4
                return bytes(out)
            if self.buf[self.pos:self.pos + 2] != b"\n#":
                raise RuntimeError("bad chunk header from the server")
            end = self._find(b"\n", self.pos + 2)
            size = int(self.buf[self.pos + 2:end])
            self.pos = end + 1
            self._need(size)
            out += self.buf[self.pos:self.pos + size]
            self.pos += size

    def call(self, operation):
        """The reply to `operation`, on a session that receives no notifications. Raises
        ReplyMismatch when the next message is not the reply to it (its message-id differs)."""
        sent = self.send(operation)
        reply = self.message()
        m = re.search(rb'message-id="(\d+)"', reply[:512])
        if not m or int(m.group(1)) != sent:
            raise ReplyMismatch(f"sent message-id {sent}, next message: {reply[:300]!r}")
        return reply

    def _fill(self):
        if self.pos > (1 << 20):  # drop what was consumed, keeping the buffer small
            del self.buf[:self.pos]
            self.pos = 0
        data = self.chan.recv(4 << 20)
        if not data:
            raise EOFError("the server closed the session")
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
