"""Hostile clients, SSH and TCP: connections that stop halfway through the SSH handshake,
garbage instead of an SSH identification line, wrong passwords in a loop, 1,000 connections at
once, logins past --max-sessions. Each case: the server stays up, ten other sessions keep being
served during and after it (hostile.py), and the docstring says what else is expected.

--max-sessions bounds connections, authenticated or not: past it, a new connection is closed at
once instead of waiting in the listen queue or holding a descriptor.
"""

import random
import selectors
import socket
import threading
import time

import paramiko
import pytest

from hostile import (BYSTANDERS, CLIENT_BANNER, PROMPT_LOGIN, PeakSampler, check_survived,
                     closed_by_peer, fd_count, kexinit_packet, read_banner, ssh_packet, tcp_connect,
                     timed_login)
from ncserver import EOM, NC, PASSWORD, USER

# Each test on a server of its own: stalled handshakes and failed logins leave per-source delays
# and connections held until a timeout, which the next test would meet.
FRESH_SERVER_PER_TEST = True
DEFAULT_AUTH_TIMEOUT = 10  # ncstored's default --auth-timeout, which these tests keep
ATTACKER = "127.0.0.2"     # a second loopback source address for per-source behaviour


# ---- connections that stop halfway


class Stalled:
    """One connection driven to `stage` of the SSH/NETCONF handshake and left there."""

    STAGES = ("tcp-only", "after-banner", "after-kexinit", "after-key-exchange", "after-auth",
              "after-subsystem")

    def __init__(self, server, stage):
        self.server, self.stage = server, stage
        self.sock = None
        self.transport = None
        self.reached = threading.Event()
        self.error = None
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        try:
            self.sock = tcp_connect(self.server, timeout=60)
            if self.stage == "after-banner":
                self.sock.sendall(CLIENT_BANNER)
            elif self.stage == "after-kexinit":
                self.sock.sendall(CLIENT_BANNER)
                read_banner(self.sock, timeout=60)
                self.sock.sendall(kexinit_packet())
            elif self.stage != "tcp-only":
                self.transport = paramiko.Transport(self.sock)
                self.transport.start_client(timeout=60)
                if self.stage in ("after-auth", "after-subsystem"):
                    self.transport.auth_password(USER, PASSWORD, fallback=False)
                if self.stage == "after-subsystem":
                    channel = self.transport.open_session(timeout=60)
                    channel.invoke_subsystem("netconf")  # and no <hello>
            self.reached.set()
        except Exception as e:  # reported by the test when it matters
            self.error = e
            self.reached.set()

    def closed_by_server(self, timeout):
        if self.transport is not None:
            deadline = time.monotonic() + timeout
            while self.transport.is_active() and time.monotonic() < deadline:
                time.sleep(0.1)
            return not self.transport.is_active()
        return self.sock is not None and closed_by_peer(self.sock, timeout)

    def close(self):
        if self.transport is not None:
            self.transport.close()
        if self.sock is not None:
            self.sock.close()


STALLED_CONNECTIONS = 20


@pytest.mark.parametrize("stage", Stalled.STAGES)
def test_stalled_handshakes_do_not_hold_up_logins(hostile_server, bystanders, stage):
    """20 connections stop at one point of the handshake (TCP only, after the SSH identification
    line, after KEXINIT, after the key exchange, after authentication, after opening the netconf
    subsystem without a <hello>). With the default 10 s auth timeout, a normal login by somebody
    else completes within a few seconds all the same (handshakes must not be serial), and the
    server drops the stalled connections once its timeouts expire (RFC 4252 §4: a server should
    disconnect a client that has not authenticated within a timeout)."""
    stalled = [Stalled(hostile_server, stage) for _ in range(STALLED_CONNECTIONS)]
    try:
        deadline = time.monotonic() + 15
        for s in stalled:
            s.reached.wait(max(0.1, deadline - time.monotonic()))
        reached = sum(1 for s in stalled if s.reached.is_set() and s.error is None)
        during = bystanders.snapshot()
        for i in range(3):
            took = timed_login(hostile_server)
            assert took < PROMPT_LOGIN, (
                "login %d took %.1f s beside %d connections stalled %s (%d had reached that point; "
                "a login alone takes ~0.1 s)" % (i + 1, took, STALLED_CONNECTIONS, stage, reached))
        bystanders.wait_progress(during, "while connections stall %s" % stage)
        failed = [repr(s.error) for s in stalled if s.error is not None]
        assert not failed, "stalled clients could not even reach %s: %s" % (stage, failed[:3])
        limit = 2 * DEFAULT_AUTH_TIMEOUT + 5
        deadline = time.monotonic() + limit
        kept = [s for s in stalled if not s.closed_by_server(max(0.1, deadline - time.monotonic()))]
        assert not kept, "%d of %d connections stalled %s are still open after %d s" % (
            len(kept), STALLED_CONNECTIONS, stage, limit)
    finally:
        for s in stalled:
            s.close()
    check_survived(hostile_server, bystanders, during)


# ---- garbage instead of an SSH identification line (RFC 4253 §4.2)

_rng = random.Random(10)
GARBAGE = {
    "http-request": b"GET / HTTP/1.1\r\nHost: netconf\r\n\r\n",
    "binary": bytes(_rng.getrandbits(8) for _ in range(65536)),
    "endless-line": b"SSH-2.0-" + b"x" * 200000,
    "ssh-1": b"SSH-1.5-ancient\r\n",
    "lines-before-banner": b"hello there\r\n" * 20000,
    # a valid identification line, then a binary packet announcing 4 GB
    "huge-packet-length": CLIENT_BANNER + b"\xff\xff\xff\xf0" + b"\x00" * 64,
    # a valid identification line, then a KEXINIT whose first name-list says it is 4 GB long
    "huge-name-list": CLIENT_BANNER + ssh_packet(bytes([20]) + b"\x00" * 16 + b"\xff\xff\xff\xff" + b"a" * 200),
}


@pytest.mark.parametrize("case", list(GARBAGE))
def test_garbage_instead_of_ssh(hostile_server, bystanders, case):
    """Bytes that are not an SSH-2.0 identification line (RFC 4253 §4.2: "SSH-2.0-..." ending in
    CR LF, at most 255 characters; lines before it only from servers) or a valid line followed by
    an impossible packet: the server closes that connection at once (not at the auth timeout),
    reading no more than it needs, and a login by somebody else meanwhile is prompt."""
    sock = tcp_connect(hostile_server)
    try:
        try:
            sock.sendall(GARBAGE[case])
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed while we were still sending: fine
        during = bystanders.snapshot()
        took = timed_login(hostile_server)
        assert took < PROMPT_LOGIN, "a login took %.1f s beside a client sending %s" % (took, case)
        assert closed_by_peer(sock, DEFAULT_AUTH_TIMEOUT / 2), (
            "the server still holds a connection that sent %s after %d s" % (case, DEFAULT_AUTH_TIMEOUT / 2))
    finally:
        sock.close()
    check_survived(hostile_server, bystanders, during)


# ---- wrong passwords


def wrong_passwords(server, source, passwords):
    """One SSH connection from `source` trying the passwords one after the other while the server
    keeps the connection open; returns True when the server closed it before the last one."""
    transport = paramiko.Transport(tcp_connect(server, source=source, timeout=60))
    try:
        transport.start_client(timeout=60)
        for pw in passwords:
            if not transport.is_active():
                return True
            try:
                transport.auth_password(USER, pw, fallback=False)
            except paramiko.AuthenticationException:
                # a refusal, or the connection closed while waiting for one: paramiko says the
                # same; the server log counts the refusals
                time.sleep(0.1)
                continue
            except (paramiko.SSHException, EOFError, OSError):
                return True
            pytest.fail("password %r was accepted" % pw)
        return not transport.is_active()
    finally:
        transport.close()


def log_lines_with(server, *words):
    return [line for line in server.log_tail(10 ** 8).splitlines() if all(w in line for w in words)]


@pytest.mark.server_args("--auth-attempts", "3")
def test_wrong_passwords_in_a_loop(hostile_server, bystanders):
    """Wrong passwords from one address, two connections trying six each: the server closes each
    connection after --auth-attempts 3 failures (RFC 4252 §4: a server should limit failed
    attempts per connection), logs every failure with the source address, and answers that
    address ever more slowly (a delay growing with its failures: the six take seconds, not the
    fraction of a second they take undelayed), while logins from another address stay prompt
    throughout: the delay is per source and holds up nobody else."""
    logins = []
    stop = threading.Event()

    def other_source_logins():
        while not stop.is_set():
            try:
                logins.append(timed_login(hostile_server))
            except BaseException as e:  # pytest.fail inside a thread: keep it for the assert
                logins.append(repr(e))
            stop.wait(0.5)

    during = bystanders.snapshot()
    other = threading.Thread(target=other_source_logins, daemon=True)
    other.start()
    started = time.monotonic()
    try:
        closed_early = [wrong_passwords(hostile_server, ATTACKER, ["wrong-%d-%d" % (c, k) for k in range(6)])
                        for c in range(2)]
        attack = time.monotonic() - started
    finally:
        stop.set()
        other.join(60)
    assert all(closed_early), "connections closed by the server before six attempts: %s" % closed_early
    logged = log_lines_with(hostile_server, ATTACKER, "password", "fail")
    assert 2 <= len(logged) <= 2 * 3, (
        "%d failures logged with the source address for 2 connections (expected 1 to 3 each):\n%s"
        % (len(logged), "\n".join(logged[-5:])))
    assert attack >= 3, "%d wrong passwords from one address took only %.1f s" % (len(logged), attack)
    slow = [x for x in logins if not isinstance(x, float) or x >= PROMPT_LOGIN]
    assert logins and not slow, "logins from another address during the attack: %s" % logins
    check_survived(hostile_server, bystanders, during)


# ---- many connections


FLOOD = 1000
FLOOD_MAX_SESSIONS = 40


@pytest.mark.server_args("--max-sessions", str(FLOOD_MAX_SESSIONS), "--auth-timeout", "3")
def test_thousand_connections_at_once(hostile_server, bystanders):
    """1,000 TCP connections opened at once, sending nothing: the server holds at most
    --max-sessions connections (the ten bystanders included) and closes the others at once, so
    its descriptors stay bounded and none is left hanging in the listen queue; the bystanders go
    on; the connections it held are dropped at the auth timeout; once all are closed, a new login
    is prompt."""
    baseline = fd_count(hostile_server)
    fds = PeakSampler(hostile_server, fd_count)
    socks = []
    sel = selectors.DefaultSelector()
    try:
        for _ in range(FLOOD):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", hostile_server.port))
            socks.append(s)
            sel.register(s, selectors.EVENT_READ)
        during = bystanders.snapshot()
        bystanders.wait_progress(during, "while 1,000 connections are open")
        closed = 0
        deadline = time.monotonic() + 15
        while closed < FLOOD and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=0.2):
                try:
                    data = key.fileobj.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(key.fileobj)
                    closed += 1
        peak = fds.stop()
        # A connection may cost the server a few descriptors (socket, wake-up, timer); the
        # bound is about not growing with the 1,000.
        slots = FLOOD_MAX_SESSIONS - BYSTANDERS
        assert peak - baseline <= 4 * slots + 20, (
            "the server's descriptors grew from %d to %d under 1,000 connections (--max-sessions %d)"
            % (baseline, peak, FLOOD_MAX_SESSIONS))
        assert closed == FLOOD, ("%d of %d connections were neither refused nor dropped within 15 s "
                                 "(--max-sessions %d, --auth-timeout 3)" % (FLOOD - closed, FLOOD,
                                                                             FLOOD_MAX_SESSIONS))
    finally:
        fds.stop()
        sel.close()
        for s in socks:
            s.close()
    took = timed_login(hostile_server)
    assert took < PROMPT_LOGIN, "the first login after the flood took %.1f s" % took
    check_survived(hostile_server, bystanders, during)


LIMIT = BYSTANDERS + 5
ATTEMPTS = 20


def read_eom(channel, buf):
    """(message, rest) at the next end-of-message delimiter, or None when the server closes."""
    while EOM not in buf:
        part = channel.recv(65536)
        if not part:
            return None
        buf += part
    return tuple(buf.split(EOM, 1))


HELLO_AND_GET_CONFIG = (('<hello xmlns="%s"><capabilities><capability>urn:ietf:params:netconf:base:1.0'
                         '</capability></capabilities></hello>]]>]]><rpc xmlns="%s" message-id="1">'
                         '<get-config><source><running/></source></get-config></rpc>]]>]]>')
                        % (NC, NC)).encode()


def try_login(server, outcomes, keep):
    """A raw login: 'served' (hello exchanged, a get-config answered), 'refused' (the server
    ended it before any <hello>), 'dropped-after-hello' or 'stalled' (no outcome within 10 s;
    paramiko reports some timeouts as SSHException, hence the clock)."""
    transport = None
    outcome = "refused"
    started = time.monotonic()
    try:
        transport = paramiko.Transport(tcp_connect(server, timeout=30))
        transport.connect(username=USER, password=PASSWORD)
        channel = transport.open_session(timeout=30)
        channel.settimeout(30)
        channel.invoke_subsystem("netconf")
        hello = read_eom(channel, b"")
        if hello is not None:
            outcome = "dropped-after-hello"
            channel.sendall(HELLO_AND_GET_CONFIG)
            if read_eom(channel, hello[1]) is not None:
                outcome = "served"
    except (socket.timeout, TimeoutError):
        outcome = "stalled"
    except Exception:
        pass  # the server ended the login at the point `outcome` names
    if time.monotonic() - started > 10:
        outcome = "stalled"
    outcomes.append(outcome)
    if outcome == "served":
        keep.append(transport)
    elif transport is not None:
        transport.close()


@pytest.mark.server_args("--max-sessions", str(LIMIT))
def test_logins_past_max_sessions_are_refused_cleanly(hostile_server, bystanders):
    """20 simultaneous logins while the ten bystanders leave 5 of --max-sessions 15: at most 5
    are served; the others are refused before the server's <hello> (a client is never offered a
    session that is then dropped), none waits more than 10 s, the refusals are logged naming the
    limit; once the served ones close, a new login works."""
    outcomes, keep = [], []
    threads = [threading.Thread(target=try_login, args=(hostile_server, outcomes, keep), daemon=True)
               for _ in range(ATTEMPTS)]
    during = bystanders.snapshot()
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        bystanders.wait_progress(during, "while logins are refused")
        counts = {k: outcomes.count(k) for k in set(outcomes)}
        assert len(outcomes) == ATTEMPTS, "%d logins never finished: %s" % (ATTEMPTS - len(outcomes), counts)
        assert counts.get("stalled", 0) == 0 and counts.get("dropped-after-hello", 0) == 0, counts
        assert 1 <= counts.get("served", 0) <= LIMIT - BYSTANDERS, counts
        assert log_lines_with(hostile_server, "max-sessions"), "no refusal naming --max-sessions in the log"
    finally:
        for t in keep:
            t.close()
    # The served sessions' slots free up once the server has seen their connections close.
    m, _ = hostile_server.connect(retries=20)
    m.close_session()
    check_survived(hostile_server, bystanders, during)

