"""Shared pieces of the hostile-client tests (test_hostile_*.py).

Every hostile test attacks an ncstored with ten well-behaved sessions beside it (the tests of a
module share one server and its bystanders until a test fails or the server is gone: then the
next test gets a fresh one, so that one crash does not hide the next case; the SSH-level tests
each get their own), the bystanders: ncclient sessions that each edit and read
back their own interface in a loop, in their own threads. A test checks that every bystander
keeps completing rounds while the hostile client is at work and after it is gone, that none of
them saw an error, and that the server process is alive and a fresh login works.

What a hostile client sees is checked byte for byte: RawSession (ncserver.py) over paramiko for
NETCONF-level cases, plain sockets and hand-built SSH packets for the SSH-level ones.

Timeouts here bound how long a failing test waits; they are not performance expectations.
The only speed a test asserts is a behaviour a user notices: a login that takes seconds instead
of a fraction of one because somebody else's connection holds it up.
"""

import logging
import os
import re
import signal
import socket
import struct
import threading
import time

import pytest

import ncserver
from ncserver import NC, IF, MON, config, error_tags, iface

# Hostile connections make paramiko's transport threads log every failed handshake with a
# traceback; the tests report what matters in their assertions.
logging.getLogger("paramiko.transport").setLevel(logging.CRITICAL)
logging.getLogger("ncclient.transport.ssh").setLevel(logging.CRITICAL)

BYSTANDERS = 10
# Bystander rounds (one edit + one read back) are paced so that ten of them leave most of the
# machine's two cores to the server and the hostile client.
ROUND_PAUSE = 0.2
# How long every bystander gets to complete its rounds before it counts as stalled.
PROGRESS_TIMEOUT = 30
# A login (SSH + hello + one get-config) that takes longer than this is held up by something.
# A login alone takes ~0.1 s; the auth timeout is 10 s by default.
PROMPT_LOGIN = 5.0
# How long a hostile session has to be closed once the server has seen what ends it.
CLOSE_TIMEOUT = 10
# What the server's RSS may grow by during an attack, beyond what the attack's message size
# limit lets it buffer (the bystanders' work included).
MEMORY_SLACK = 64 * 1024 * 1024
# AddressSanitizer keeps freed memory in a quarantine (256 MiB by default) to catch use after free:
# under it a server that frees every buffer still grows by up to that much, so the bound is that
# much looser there (the uninstrumented build keeps the tight one).
ASAN_QUARANTINE = 256 * 1024 * 1024 if "address" in os.environ.get("NCSTORE_SANITIZE", "") else 0

# ---------------------------------------------------------------------------------------------
# The server process


def describe_exit(code):
    if code is None:
        return "running"
    if code < 0:
        try:
            return "killed by signal %s" % signal.Signals(-code).name
        except ValueError:
            return "killed by signal %d" % -code
    return "exited with status %d" % code


def log_end(server, lines=8):
    """The last lines of the server log, for failure messages."""
    return "\n".join(server.log_tail(20000).splitlines()[-lines:])


def timed_login(server, timeout=30, what=""):
    """Seconds a complete login (SSH, hello, one get-config, close) takes; fails the test if it
    does not complete within timeout."""
    started = time.monotonic()
    try:
        m = server.connect(timeout=timeout)
        try:
            m.get_config(source="running", filter=("subtree", '<interfaces xmlns="%s"/>' % IF))
        finally:
            m.close_session()
    except Exception as e:
        pytest.fail("a login%s failed after %.1f s: %r (server %s); log ends:\n%s"
                    % (" " + what if what else "", time.monotonic() - started, e, describe_exit(server.proc.poll()),
                       log_end(server)))
    return time.monotonic() - started


def assert_server_alive(server, what="after the attack"):
    """The process has not exited, and a new client logs in and reads the configuration."""
    code = server.proc.poll()
    if code is not None:
        pytest.fail("ncstored %s %s; log ends:\n%s" % (describe_exit(code), what, log_end(server)))
    timed_login(server, what=what)


def fd_count(server):
    return len(os.listdir("/proc/%d/fd" % server.proc.pid))


def rss_bytes(server):
    with open("/proc/%d/status" % server.proc.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class PeakSampler:
    """Samples a number (fd count, RSS) of the server in a thread; .peak after stop()."""

    def __init__(self, server, probe, interval=0.05):
        self.server, self.probe, self.interval = server, probe, interval
        self.baseline = self.peak = probe(server)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.probe(self.server))
            except OSError:
                return  # the process is gone; assert_server_alive reports it
            self._stop.wait(self.interval)

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.peak


class MemoryWatch(PeakSampler):
    """The server's RSS from now until stop()."""

    def __init__(self, server):
        super().__init__(server, rss_bytes)

    def assert_growth_below(self, limit):
        grew = self.peak - self.baseline
        limit += ASAN_QUARANTINE
        assert grew < limit, "server RSS grew by %d MiB (limit %d MiB)" % (grew >> 20, limit >> 20)


# ---------------------------------------------------------------------------------------------
# Bystanders


class Bystanders:
    """Ten sessions editing and reading back their own interface (bystander-NN) in a loop."""

    def __init__(self, server, count=BYSTANDERS):
        self.server = server
        self.count = count
        self.rounds = [0] * count
        self.errors = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sessions = []
        self._threads = []
        self._started = time.monotonic()

    def start(self):
        for i in range(self.count):
            m = self.server.connect()
            m.timeout = PROGRESS_TIMEOUT
            self._sessions.append(m)
        for i, m in enumerate(self._sessions):
            t = threading.Thread(target=self._run, args=(i, m), daemon=True, name="bystander-%d" % i)
            t.start()
            self._threads.append(t)
        self.wait_progress(self.snapshot(), "before the attack")
        return self

    def _run(self, i, m):
        name = "bystander-%02d" % i
        flt = ("subtree", '<interfaces xmlns="%s"><interface><name>%s</name></interface></interfaces>'
               % (IF, name))
        k = 0
        while not self._stop.is_set():
            k += 1
            try:
                m.edit_config(target="running", config=config(iface(name, description="round %d" % k)))
                reply = m.get_config(source="running", filter=flt).data_xml
                if "round %d<" % k not in reply:
                    raise AssertionError("read back %r after writing round %d" % (reply[:300], k))
            except Exception as e:
                with self._lock:
                    self.errors.append("bystander %d, round %d, at %.1f s: %r"
                                       % (i, k, time.monotonic() - self._started, e))
                return  # a broken session stops counting; wait_progress reports it
            self.rounds[i] += 1
            self._stop.wait(ROUND_PAUSE)

    def snapshot(self):
        return list(self.rounds)

    def wait_progress(self, since, when, rounds=2, timeout=PROGRESS_TIMEOUT):
        """Every bystander completes `rounds` more rounds than in `since` within timeout."""
        deadline = time.monotonic() + timeout
        while True:
            lagging = [i for i in range(self.count) if self.rounds[i] < since[i] + rounds]
            if not lagging:
                return
            if self.errors or time.monotonic() > deadline:
                pytest.fail("bystanders %s made no progress %s (%s within %d s); errors: %s; server %s"
                            % (lagging, when, "stalled" if not self.errors else "failed", timeout,
                               self.errors[:5], describe_exit(self.server.proc.poll())))
            time.sleep(0.05)

    def assert_no_errors(self):
        assert not self.errors, "bystanders saw errors: %s" % self.errors[:5]

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(PROGRESS_TIMEOUT + 5)
        for m in self._sessions:
            try:
                m.close_session()
            except Exception:
                pass


def check_survived(server, bystanders, during):
    """The end of every hostile test: bystanders progressed during the attack (snapshot `during`
    taken while it went on) and go on after it, the server is alive and takes a new login."""
    bystanders.wait_progress(during, "during the attack")
    after = bystanders.snapshot()
    assert_server_alive(server)
    bystanders.wait_progress(after, "after the attack")
    bystanders.assert_no_errors()


# ---------------------------------------------------------------------------------------------
# NETCONF-level hostile sessions


def send_while_open(raw, data):
    """Sends data; the server may rightly close the session before it has read all of it."""
    try:
        raw.send_bytes(data)
    except (OSError, EOFError):
        pass


def hostile_session(server, version="1.1", hello=True):
    """A logged-in RawSession; hello=False leaves the client's <hello> to the test."""
    raw = ncserver.RawSession(server.port, version=version, hello=hello, timeout=CLOSE_TIMEOUT)
    raw.server = server
    return raw


def fail_if_server_died(raw, what):
    """A session that ended because the whole server died is reported as that."""
    time.sleep(0.2)  # the process may still be dying when its socket is already closed
    code = raw.server.proc.poll()
    if code is not None:
        pytest.fail("%s: ncstored %s; log ends:\n%s" % (what, describe_exit(code), log_end(raw.server)))


def hello_message(caps=("urn:ietf:params:netconf:base:1.0", "urn:ietf:params:netconf:base:1.1"),
                  extra=""):
    return ('<hello xmlns="%s"><capabilities>%s</capabilities>%s</hello>'
            % (NC, "".join("<capability>%s</capability>" % c for c in caps), extra)).encode()


def rpc_message(body, message_id="101"):
    return ('<rpc xmlns="%s" message-id="%s">%s</rpc>' % (NC, message_id, body)).encode()


GET_CONFIG = "<get-config><source><running/></source></get-config>"


def chunk(data):
    return b"\n#%d\n" % len(data) + data


END_OF_CHUNKS = b"\n##\n"


def send_until_closed(raw, limit, filler, frame=lambda block: block):
    """Sends filler blocks (each passed through frame) until limit bytes or until the server
    stops taking them; returns the bytes sent."""
    block = frame(filler)
    raw.channel.settimeout(CLOSE_TIMEOUT)
    sent = 0
    try:
        while sent < limit:
            raw.channel.sendall(block)
            sent += len(block)
    except (OSError, EOFError):
        pass
    return sent


def is_rpc_error(msg):
    return bool(error_tags(msg))


def expect_closed(raw, allowed_tags=None, required_tag=None, what="", timeout=CLOSE_TIMEOUT):
    """The server closes the session within timeout; whatever it sends before is an rpc-error,
    with tags from allowed_tags (None: any) and required_tag among them when given."""
    deadline = time.monotonic() + timeout
    messages = []
    closed = False
    while time.monotonic() < deadline:
        raw.timeout = max(0.1, deadline - time.monotonic())
        raw.channel.settimeout(raw.timeout)
        try:
            msg = raw.read()
        except (EOFError, OSError) as e:  # OSError: the transport went away under the channel
            closed = not isinstance(e, TimeoutError)
            break
        except ValueError as e:  # framing from the server we cannot read
            msg = "<!-- unreadable: %s -->" % e
        messages.append(msg)
        if not is_rpc_error(msg):
            fail_if_server_died(raw, what)
            pytest.fail("%s: the server answered with something else than an rpc-error: %r"
                        % (what, msg[:500]))
    fail_if_server_died(raw, what)
    tags = [t for msg in messages for t in error_tags(msg)]
    if allowed_tags is not None:
        unexpected = [t for t in tags if t not in allowed_tags]
        assert not unexpected, "%s: unexpected error-tags %s (allowed: %s)" % (what, unexpected, allowed_tags)
    state = "closed" if closed else "still open after %d s" % timeout
    if required_tag:
        assert required_tag in tags, "%s: no %s rpc-error (got %s; session %s)" % (
            what, required_tag, [m[:300] for m in messages], state)
    assert closed, "%s: session %s (server sent %s)" % (what, state, [m[:300] for m in messages])


def expect_answer_then_usable(raw, allowed_tags, what="", answer_may_be_data=False):
    """The server answers what was sent with rpc-error(s) with tags in allowed_tags (or, with
    answer_may_be_data, with a normal reply), and the session still works: get-configs with
    message-ids "after" and "after-2" are answered. Returns the answers before them."""
    try:
        raw.send(rpc_message(GET_CONFIG, message_id="after"))
    except OSError:
        pass  # closed already: reading says so below
    answers = []
    while True:
        try:
            msg = raw.read()
        except EOFError:
            fail_if_server_died(raw, what)
            pytest.fail("%s: the server closed the session instead of answering with an rpc-error "
                        "(answers before: %s)" % (what, [a[:300] for a in answers]))
        except TimeoutError:
            fail_if_server_died(raw, what)
            pytest.fail("%s: no answer within %d s (answers before: %s)"
                        % (what, raw.timeout, [a[:300] for a in answers]))
        if 'message-id="after"' in msg:
            assert not is_rpc_error(msg), "%s: the session no longer works: %r" % (what, msg[:500])
            break
        answers.append(msg)
    try:  # and it stays open: no close scheduled behind the answers
        again = raw.rpc(GET_CONFIG, message_id="after-2")
    except (EOFError, OSError) as e:
        fail_if_server_died(raw, what)
        pytest.fail("%s: the server closed the session after answering (%r)" % (what, e))
    assert not is_rpc_error(again), "%s: the session no longer works: %r" % (what, again[:500])
    assert answers, "%s: the server answered the next rpc but nothing before it" % what
    for msg in answers:
        if answer_may_be_data and not is_rpc_error(msg):
            continue
        tags = error_tags(msg)
        assert tags, "%s: expected an rpc-error, got %r" % (what, msg[:500])
        wrong = [t for t in tags if t not in allowed_tags]
        assert not wrong, "%s: error-tags %s, expected one of %s" % (what, tags, sorted(allowed_tags))
    return answers


def session_ids(m):
    """Session ids the server lists in /netconf-state/sessions."""
    reply = m.get(filter=("subtree", '<netconf-state xmlns="%s"><sessions/></netconf-state>' % MON)).data_xml
    return {int(x) for x in re.findall(r"<(?:\w+:)?session-id>(\d+)</", reply)}


def wait_session_gone(server, session_id, timeout=CLOSE_TIMEOUT):
    """The server no longer lists session_id: it noticed the session ended and cleaned up."""
    m = server.connect(timeout=30)
    try:
        deadline = time.monotonic() + timeout
        while session_id in session_ids(m):
            if time.monotonic() > deadline:
                pytest.fail("session %d is still listed %d s after its client was gone"
                            % (session_id, timeout))
            time.sleep(0.1)
    finally:
        m.close_session()


def interface_names(server):
    m = server.connect(timeout=30)
    try:
        return set(ncserver.interfaces(m))
    finally:
        m.close_session()


# ---------------------------------------------------------------------------------------------
# SSH-level hostile connections


CLIENT_BANNER = b"SSH-2.0-hostile_0.1\r\n"


def tcp_connect(server, source=None, timeout=10):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=timeout,
                                 source_address=(source, 0) if source else None)
    return s


def read_banner(sock, timeout=10):
    """The server's SSH identification line (RFC 4253 §4.2)."""
    sock.settimeout(timeout)
    data = b""
    while b"\n" not in data:
        part = sock.recv(256)
        if not part:
            raise EOFError("server closed before its banner: %r" % data)
        data += part
    return data


def _name_list(names):
    raw = ",".join(names).encode()
    return struct.pack(">I", len(raw)) + raw


def ssh_packet(payload, block=8):
    """An unencrypted SSH binary packet (RFC 4253 §6): before NEWKEYS no cipher and no MAC."""
    padding = block - (len(payload) + 5) % block
    if padding < 4:
        padding += block
    return struct.pack(">IB", len(payload) + padding + 1, padding) + payload + os.urandom(padding)


def kexinit_packet():
    """A client SSH_MSG_KEXINIT (RFC 4253 §7.1) with algorithms libssh 0.10 offers."""
    payload = bytes([20]) + os.urandom(16)
    for names in (["curve25519-sha256", "curve25519-sha256@libssh.org", "ecdh-sha2-nistp256",
                   "diffie-hellman-group14-sha256"],
                  ["ssh-ed25519", "rsa-sha2-512", "rsa-sha2-256", "ecdsa-sha2-nistp256", "ssh-rsa"],
                  ["aes128-ctr", "aes256-ctr"], ["aes128-ctr", "aes256-ctr"],
                  ["hmac-sha2-256", "hmac-sha1"], ["hmac-sha2-256", "hmac-sha1"],
                  ["none"], ["none"], [], []):
        payload += _name_list(names)
    payload += b"\x00" + struct.pack(">I", 0)
    return ssh_packet(payload)


def closed_by_peer(sock, timeout):
    """True when the server closes the connection (EOF or reset) within timeout; whatever it sends
    before is read and dropped."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        sock.settimeout(left)
        try:
            if not sock.recv(65536):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except (socket.timeout, TimeoutError):
            return False


# ---------------------------------------------------------------------------------------------
# Fixtures (imported by the test modules)


HOST_KEYS = ("ssh_host_ed25519_key", "ssh_host_rsa_key")
_host_keys = {}


def reuse_host_keys(server):
    """Before start: the host keys of the first server of this run, if there was one (an RSA key
    takes up to a second to generate, and every hostile test starts a server)."""
    for name, key in _host_keys.items():
        with open(os.open(os.path.join(server.data_dir, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                          0o600), "wb") as f:
            f.write(key)


def remember_host_keys(server):
    if not _host_keys:
        for name in HOST_KEYS:
            with open(os.path.join(server.data_dir, name), "rb") as f:
                _host_keys[name] = f.read()


def start_hostile_server(args, name):
    s = ncserver.Server(extra_args=args, name=name[:40])
    reuse_host_keys(s)
    try:
        s.start()
    except Exception:
        s.cleanup()
        raise
    remember_host_keys(s)
    return s


def stop_hostile_server(s, during):
    code = s.proc.poll()
    if code is None:
        try:
            s.stop(timeout=30)
        except RuntimeError as e:  # a server that does not stop is a finding too
            print("%s; log ends:\n%s" % (e, log_end(s, 30)))
    else:
        print("ncstored %s during %s; log ends:\n%s" % (describe_exit(code), during, log_end(s, 30)))
    s.cleanup()


class SharedServer:
    """The server and bystanders the tests of one module share while they stay healthy: starting
    a server and logging ten bystanders in took more time than most attacks. A test that failed,
    or after which the server is gone, ends them: the next test gets a fresh server, so that one
    crash does not hide the next case."""

    def __init__(self):
        self.server = None
        self.bystanders = None

    def get(self, args, name):
        if self.server is None:
            self.server = start_hostile_server(args, name)
        return self.server

    def get_bystanders(self):
        if self.bystanders is None:
            self.bystanders = Bystanders(self.server).start()
        return self.bystanders

    def discard(self, during):
        if self.bystanders is not None:
            self.bystanders.stop()
            self.bystanders = None
        if self.server is not None:
            stop_hostile_server(self.server, during)
            self.server = None


@pytest.fixture(scope="module")
def shared_hostile_server(request):
    shared = SharedServer()
    yield shared
    shared.discard(request.module.__name__)


@pytest.fixture
def hostile_server(request, shared_hostile_server):
    """The ncstored a hostile test attacks, with the module's SERVER_ARGS: the module's shared one
    (SharedServer), or a fresh one for a test with @pytest.mark.server_args(...) and for every
    test of a module with FRESH_SERVER_PER_TEST (attacks whose traces outlive them: per-source
    login delays, connections held until a timeout)."""
    args = list(getattr(request.module, "SERVER_ARGS", ()))
    marker = request.node.get_closest_marker("server_args")
    if marker or getattr(request.module, "FRESH_SERVER_PER_TEST", False):
        if marker:
            args += list(marker.args)
        s = start_hostile_server(args, request.node.name)
        yield s
        stop_hostile_server(s, request.node.name)
        return
    s = shared_hostile_server.get(args, request.node.name)
    yield s
    call = getattr(request.node, "rep_call", None)
    if call is None or not call.passed or s.proc.poll() is not None:
        shared_hostile_server.discard(request.node.name)


@pytest.fixture
def bystanders(hostile_server, shared_hostile_server):
    if shared_hostile_server.server is hostile_server:
        yield shared_hostile_server.get_bystanders()  # they stop with the shared server
        return
    b = Bystanders(hostile_server).start()
    yield b
    b.stop()
