"""Runs the real ncstored for end-to-end tests and talks to it like operators' clients do.

Server: a subprocess with a temporary data dir, listening on 127.0.0.1 on a port the kernel
picks (--port 0 --print-port-file), a user added with `ncstored --add-user` (password on
stdin), stopped with SIGTERM or killed with SIGKILL, restarted on the same data dir.

Clients: ncclient (what operators script with), and RawSession, a minimal NETCONF 1.0 client
over paramiko that can send what ncclient refuses to build (malformed XML, an <rpc> without
message-id, oversized messages).

Environment: NCSTORED = path of the ncstored binary (required).
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import paramiko
from ncclient import manager

NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
IF = "urn:ietf:params:xml:ns:yang:ietf-interfaces"
IANA = "urn:ietf:params:xml:ns:yang:iana-if-type"
WD = "urn:ietf:params:xml:ns:yang:ietf-netconf-with-defaults"
MON = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"
YLIB = "urn:ietf:params:xml:ns:yang:ietf-yang-library"
NS = {"nc": NC, "if": IF, "wd": WD, "mon": MON, "yl": YLIB}

USER = "e2e"
PASSWORD = "e2e-Secret-1"
EOM = b"]]>]]>"


def ncstored_binary():
    path = os.environ.get("NCSTORED")
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError("NCSTORED must name the ncstored binary (got %r)" % path)
    return path


class Server:
    """One ncstored process on its own data dir; start() again after stop()/kill() restarts it
    on the same data."""

    def __init__(self, extra_args=(), name="e2e"):
        self.binary = ncstored_binary()
        self.tmp = tempfile.mkdtemp(prefix="ncstore-%s-" % name)
        self.data_dir = os.path.join(self.tmp, "data")
        self.log_path = os.path.join(self.tmp, "ncstored.log")
        self.extra_args = list(extra_args)
        self.proc = None
        self.port = None
        self.add_user(USER, PASSWORD)

    def add_user(self, name, password):
        r = subprocess.run([self.binary, "--data-dir", self.data_dir, "--add-user", name],
                           input=password + "\n", text=True, capture_output=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError("ncstored --add-user %s failed (%d): %s"
                               % (name, r.returncode, r.stderr))

    def start(self, timeout=60):
        assert self.proc is None or self.proc.poll() is not None, "server already running"
        portfile = os.path.join(self.tmp, "port")
        if os.path.exists(portfile):
            os.unlink(portfile)
        cmd = [self.binary, "--data-dir", self.data_dir, "--listen", "127.0.0.1", "--port", "0",
               "--print-port-file", portfile, "--log-level", "info"] + self.extra_args
        with open(self.log_path, "a") as log:
            log.write("\n=== %s\n" % " ".join(cmd))
            log.flush()
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while True:
            text = ""
            if os.path.exists(portfile):
                with open(portfile) as f:
                    text = f.read().strip()
            if text.isdigit():
                self.port = int(text)
                return self
            if self.proc.poll() is not None:
                raise RuntimeError("ncstored exited with %s before listening:\n%s"
                                   % (self.proc.returncode, self.log_tail()))
            if time.time() > deadline:
                self.kill()
                raise RuntimeError("ncstored did not write its port within %ss:\n%s"
                                   % (timeout, self.log_tail()))
            time.sleep(0.05)

    def stop(self, timeout=30):
        """SIGTERM, as systemd does; returns the exit status."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("ncstored did not stop within %ss of SIGTERM" % timeout)

    def kill(self):
        """SIGKILL: no chance to flush anything."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self):
        self.stop()
        return self.start()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def cleanup(self):
        self.kill()
        if os.environ.get("NCSTORE_E2E_KEEP"):
            return
        shutil.rmtree(self.tmp, ignore_errors=True)

    def log_tail(self, n=6000):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return "(no log)"

    def connect(self, user=USER, password=PASSWORD, retries=0, timeout=60):
        """An ncclient session. With retries, connection failures are retried (returns the
        session and how many attempts failed)."""
        failures = 0
        while True:
            try:
                m = manager.connect(host="127.0.0.1", port=self.port, username=user,
                                    password=password, hostkey_verify=False, allow_agent=False,
                                    look_for_keys=False, timeout=timeout,
                                    device_params={"name": "default"})
                return (m, failures) if retries else m
            except Exception:
                failures += 1
                if failures > retries:
                    raise
                time.sleep(0.05 * failures)

    def raw(self, user=USER, password=PASSWORD, version="1.1"):
        return RawSession(self.port, user, password, version=version)


class RawSession:
    """NETCONF over an SSH 'netconf' subsystem, byte for byte: base:1.0 (end-of-message
    framing) or base:1.1 (chunked framing, RFC 6242)."""

    def __init__(self, port, user=USER, password=PASSWORD, timeout=30, version="1.1"):
        self.timeout = timeout
        self.version = version
        self.transport = paramiko.Transport(("127.0.0.1", port))
        self.transport.connect(username=user, password=password)
        self.channel = self.transport.open_session()
        self.channel.settimeout(timeout)
        self.channel.invoke_subsystem("netconf")
        self.buf = b""
        self.chunked = False
        self.server_hello = self.read()
        m = re.search(r"<session-id>(\d+)</session-id>", self.server_hello)
        self.session_id = int(m.group(1)) if m else None
        caps = "<capability>urn:ietf:params:netconf:base:1.0</capability>"
        if version == "1.1":
            caps += "<capability>urn:ietf:params:netconf:base:1.1</capability>"
        self.send('<hello xmlns="%s"><capabilities>%s</capabilities></hello>' % (NC, caps))
        self.chunked = version == "1.1" and "urn:ietf:params:netconf:base:1.1" in self.server_hello

    def send(self, text):
        data = text.encode() if isinstance(text, str) else text
        if self.chunked:
            self.channel.sendall(b"\n#%d\n" % len(data) + data + b"\n##\n")
        else:
            self.channel.sendall(data + EOM)

    def _fill(self, deadline):
        if time.time() > deadline:
            raise TimeoutError("no complete message within %ss; got %r"
                               % (self.timeout, self.buf[:500]))
        chunk = self.channel.recv(65536)
        if not chunk:
            raise EOFError("server closed the session; pending %r" % self.buf[:500])
        self.buf += chunk

    def read(self):
        """The next message, or raises EOFError when the server closed the session."""
        deadline = time.time() + self.timeout
        if not self.chunked:
            while EOM not in self.buf:
                self._fill(deadline)
            msg, self.buf = self.buf.split(EOM, 1)
            return msg.decode(errors="replace")
        msg = b""
        while True:
            while not re.match(rb"\n#(\d+|#)\n", self.buf):
                if len(self.buf) > 16 and not self.buf.startswith(b"\n#"):
                    raise ValueError("bad chunk framing from server: %r" % self.buf[:100])
                self._fill(deadline)
            head = re.match(rb"\n#(\d+|#)\n", self.buf)
            if head.group(1) == b"#":
                self.buf = self.buf[head.end():]
                return msg.decode(errors="replace")
            size = int(head.group(1))
            while len(self.buf) < head.end() + size:
                self._fill(deadline)
            msg += self.buf[head.end():head.end() + size]
            self.buf = self.buf[head.end() + size:]

    def rpc(self, body, message_id="101"):
        attr = ' message-id="%s"' % message_id if message_id is not None else ""
        self.send('<rpc xmlns="%s"%s>%s</rpc>' % (NC, attr, body))
        return self.read()

    def close(self):
        try:
            self.channel.close()
        finally:
            self.transport.close()


def error_tags(reply):
    return re.findall(r"<(?:\w+:)?error-tag>([^<]*)</(?:\w+:)?error-tag>", reply)


# ------------------------------------------------------------------------------------------
# ietf-interfaces payloads and readers shared by the tests.

def iface(name, type_="ethernetCsmacd", description=None, enabled=None, op=None, extra=""):
    attr = ' xmlns:nc="%s" nc:operation="%s"' % (NC, op) if op else ""
    body = "<name>%s</name>" % name
    if type_:
        body += '<type xmlns:ianaift="%s">ianaift:%s</type>' % (IANA, type_)
    if description is not None:
        body += "<description>%s</description>" % description
    if enabled is not None:
        body += "<enabled>%s</enabled>" % ("true" if enabled else "false")
    return "<interface%s>%s%s</interface>" % (attr, body, extra)


def config(*entries, attrs=""):
    return ('<config xmlns="%s"><interfaces xmlns="%s"%s>%s</interfaces></config>'
            % (NC, IF, attrs, "".join(entries)))


IF_FILTER = ("subtree", '<interfaces xmlns="%s"/>' % IF)


def interfaces(m, source="running"):
    """{name: {leaf: value}} of the interfaces in `source`."""
    reply = m.get_config(source=source, filter=IF_FILTER)
    out = {}
    for e in reply.data_ele.xpath("if:interfaces/if:interface", namespaces=NS):
        leaves = {}
        for leaf in e:
            tag = leaf.tag.split("}", 1)[-1]
            text = (leaf.text or "").strip()
            if tag == "type" and ":" in text:
                text = text.split(":", 1)[1]
            leaves[tag] = text
        out[leaves.get("name")] = leaves
    return out


def all_config(m, source="running"):
    """The whole datastore as canonical text (for "unchanged" checks)."""
    return m.get_config(source=source).data_xml


def reset(m):
    """Best effort: empty ietf-interfaces in running (a remove on the container, or when that
    leaves entries, a copy-config of an empty configuration), candidate = running, empty
    startup. The operations themselves are tested elsewhere."""
    for op in (lambda: m.edit_config(target="running", config=config(
                   attrs=' xmlns:nc="%s" nc:operation="remove"' % NC)),
               lambda: interfaces(m) and m.copy_config(
                   source='<source xmlns="%s"><config/></source>' % NC, target="running"),
               lambda: m.discard_changes(),
               lambda: m.delete_config(target="startup")):
        try:
            op()
        except Exception:
            pass
