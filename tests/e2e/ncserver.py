"""Runs the real ncstored for end-to-end tests and talks to it like operators' clients do.

Server: a subprocess with a temporary data dir, listening on 127.0.0.1 on a port the kernel
picks (--port 0 --print-port-file), a user added with `ncstored --add-user` (password on
stdin), stopped with SIGTERM or killed with SIGKILL, restarted on the same data dir.

Clients: ncclient (what operators script with), and RawSession, a minimal NETCONF 1.0 client
over paramiko that can send what ncclient refuses to build (malformed XML, an <rpc> without
message-id, oversized messages).

Environment: NCSTORED = path of the ncstored binary (required).

Sanitizer builds (NCSTORE_SANITIZE): every ncstored process writes its AddressSanitizer, UBSan,
LeakSanitizer and ThreadSanitizer reports to files in the server's temporary dir (log_path, added
to the options ctest sets); sanitizer_reports() reads them, and the pytest fixtures fail the test
that was running when one appeared, or the module whose server did not exit cleanly.
"""

import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import paramiko
from lxml import etree
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

    def __init__(self, extra_args=(), name="e2e", user=True):
        """user=False: no user before the first start (the server then creates `admin`)."""
        self.binary = ncstored_binary()
        self.tmp = tempfile.mkdtemp(prefix="ncstore-%s-" % name)
        self.data_dir = os.path.join(self.tmp, "data")
        self.log_path = os.path.join(self.tmp, "ncstored.log")
        self.extra_args = list(extra_args)
        self.proc = None
        self.port = None
        self.sanitizer_prefix = os.path.join(self.tmp, "sanitizer")
        self.env = sanitizer_env(self.sanitizer_prefix)
        if user:
            self.add_user(USER, PASSWORD)

    def add_user(self, name, password):
        r = subprocess.run([self.binary, "--data-dir", self.data_dir, "--add-user", name],
                           input=password + "\n", text=True, capture_output=True, timeout=60,
                           env=self.env)
        if r.returncode != 0:
            raise RuntimeError("ncstored --add-user %s failed (%d): %s"
                               % (name, r.returncode, r.stderr))

    def start(self, timeout=60, wait=True):
        """wait=False: returns once the process runs (a cluster's standby serves only later:
        wait_serving())."""
        assert self.proc is None or self.proc.poll() is not None, "server already running"
        portfile = os.path.join(self.tmp, "port")
        if os.path.exists(portfile):
            os.unlink(portfile)
        cmd = [self.binary, "--data-dir", self.data_dir, "--listen", "127.0.0.1", "--port", "0",
               "--print-port-file", portfile, "--log-level", os.environ.get("NCSTORE_E2E_LOG_LEVEL", "info")] + self.extra_args
        with open(self.log_path, "a") as log:
            log.write("\n=== %s\n" % " ".join(cmd))
            log.flush()
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        return self.wait_serving(timeout) if wait else self

    def serving(self):
        """Whether the server listens now (it wrote its port file since start())."""
        portfile = os.path.join(self.tmp, "port")
        try:
            with open(portfile) as f:
                text = f.read().strip()
        except OSError:
            return False
        if text.isdigit():
            self.port = int(text)
            return True
        return False

    def wait_serving(self, timeout=60):
        deadline = time.time() + timeout
        while True:
            if self.serving():
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

    def sanitizer_reports(self):
        """The text of every sanitizer report ncstored wrote so far ("" when none), each report
        file read once."""
        out = []
        for path in sorted(glob.glob(self.sanitizer_prefix + ".*")):
            with open(path, errors="replace") as f:
                out.append("--- %s\n%s" % (os.path.basename(path), f.read()))
            os.rename(path, path.replace("sanitizer.", "reported-sanitizer.", 1))
        return "\n".join(out)

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

    def raw(self, user=USER, password=PASSWORD, version="1.1", window_size=None):
        return RawSession(self.port, user, password, version=version, window_size=window_size)


def edits_until_kill(server, edit, prefix, writers=4, at_least=40, timeout=30):
    """`writers` sessions each call edit(session, name) with names <prefix><w>-<i> until the
    server is killed with -9, once `at_least` edits were acknowledged (or after `timeout` s).
    Returns the names of the acknowledged edits; an edit the kill cut off is not among them."""
    acked, lock, stop = [], threading.Lock(), threading.Event()

    def writer(w):
        try:
            s = server.connect()
            i = 0
            while not stop.is_set():
                name = "%s%d-%d" % (prefix, w, i)
                edit(s, name)
                with lock:
                    acked.append(name)
                i += 1
        except Exception:
            pass  # killed under us: the reply of the edit in flight may never come

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    deadline = time.time() + timeout
    while len(acked) < at_least and time.time() < deadline:
        time.sleep(0.02)
    server.kill()
    stop.set()
    for t in threads:
        t.join(60)
    with lock:
        return list(acked)


# Notifications an ncclient session received (RFC 5277 and RFC 8639 subscriptions alike).

def take_all(m, timeout=3.0):
    """Every notification that arrives until none comes for `timeout` seconds (XML texts)."""
    out = []
    while True:
        n = m.take_notification(block=True, timeout=timeout)
        if n is None:
            return out
        out.append(n.notification_xml)


def take_until(m, pattern, timeout=10.0):
    """Notifications up to and including the first that matches `pattern`."""
    out = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        n = m.take_notification(block=True, timeout=max(0.1, deadline - time.time()))
        if n is None:
            break
        out.append(n.notification_xml.replace("&apos;", "'"))
        if re.search(pattern, out[-1]):
            return out
    raise AssertionError("no notification matching %r within %ss; got %r" % (pattern, timeout, out))


def commit_in_parallel(server, prefix, sessions=10, edits=40):
    """`sessions` sessions at once each commit `edits` interfaces named PREFIX<session>-<i> (with a
    200-byte description); asserts that every commit succeeded."""
    errors, done = [], []

    def committer(n):
        try:
            c = server.connect()
            for i in range(edits):
                c.edit_config(target="running", config=config(iface("%s%d-%d" % (prefix, n, i), description="x" * 200)))
            done.append(n)
            c.close_session()
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=committer, args=(n,)) for n in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert sorted(done) == list(range(sessions))


def sanitizer_env(prefix):
    """The environment for ncstored: the sanitizer options ctest set, with the reports going to
    files under `prefix` (harmless for a build without sanitizers)."""
    env = dict(os.environ)
    for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"):
        kept = [o for o in env.get(var, "").split(":") if o and not o.startswith("log_path=")]
        env[var] = ":".join(kept + ["log_path=" + prefix])
    return env


class RawSession:
    """NETCONF over an SSH 'netconf' subsystem, byte for byte: base:1.0 (end-of-message
    framing) or base:1.1 (chunked framing, RFC 6242). hello=False sends no client <hello>: the
    caller sends what it wants (send / send_bytes, end-of-message framed until chunked is set)."""

    def __init__(self, port, user=USER, password=PASSWORD, timeout=30, version="1.1", hello=True,
                 window_size=None):
        """window_size: the SSH channel window this client grants the server (paramiko's default
        when None); a small one makes the server wait as soon as this client stops reading."""
        self.timeout = timeout
        self.version = version
        self.transport = paramiko.Transport(("127.0.0.1", port))
        self.transport.connect(username=user, password=password)
        self.channel = (self.transport.open_session(window_size=window_size, max_packet_size=16384)
                        if window_size else self.transport.open_session())
        self.channel.settimeout(timeout)
        self.channel.invoke_subsystem("netconf")
        self.buf = b""
        self.chunked = False
        self.server_hello = self.read()
        m = re.search(r"<session-id>(\d+)</session-id>", self.server_hello)
        self.session_id = int(m.group(1)) if m else None
        if hello:
            caps = "<capability>urn:ietf:params:netconf:base:1.0</capability>"
            if version == "1.1":
                caps += "<capability>urn:ietf:params:netconf:base:1.1</capability>"
            self.send('<hello xmlns="%s"><capabilities>%s</capabilities></hello>' % (NC, caps))
            self.chunked = version == "1.1" and "urn:ietf:params:netconf:base:1.1" in self.server_hello

    def send_bytes(self, data):
        """Exactly these bytes, no framing added."""
        self.channel.sendall(data)

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
        except (EOFError, OSError):
            pass  # the server has closed the connection already
        finally:
            self.transport.close()


def run_client(server, schema_dir, *args, timeout=120):
    """ncstore-client, the project's libnetconf2 client ($NCSTORE_CLIENT), run once against
    `server` with `args`; asserts it succeeded and returns what it printed."""
    client = os.environ.get("NCSTORE_CLIENT")
    assert client and os.access(client, os.X_OK), "NCSTORE_CLIENT must name ncstore-client"
    out = subprocess.run([client, "--port", str(server.port), "--user", USER, "--password", PASSWORD,
                          "--schema-dir", str(schema_dir)] + list(args),
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


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


NACM = "urn:ietf:params:xml:ns:yang:ietf-netconf-acm"


def nacm_xml(m):
    """Running's /nacm element as XML ("" when running has none): a copy-config that replaces
    running keeps the access rules only when its content carries them (they are data in running
    like any other, RFC 8341)."""
    data = m.get_config(source="running", filter=("subtree", '<nacm xmlns="%s"/>' % NACM)).data_ele
    found = data.find("{%s}nacm" % NACM)
    return "" if found is None else etree.tostring(found).decode()


def reset(m):
    """Best effort: empty ietf-interfaces in running (a remove on the container, or when that
    leaves entries, a copy-config of a configuration with nothing but the NACM rules), candidate =
    running, empty startup. The operations themselves are tested elsewhere."""
    for op in (lambda: m.edit_config(target="running", config=config(
                   attrs=' xmlns:nc="%s" nc:operation="remove"' % NC)),
               lambda: interfaces(m) and m.copy_config(
                   source='<source xmlns="%s"><config>%s</config></source>' % (NC, nacm_xml(m)), target="running"),
               lambda: m.discard_changes(),
               lambda: m.delete_config(target="startup")):
        try:
            op()
        except Exception:
            pass
