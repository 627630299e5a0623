"""The Python API against a fake ncstored (a unix socket in a temporary directory whose frames are
built with the e2e tests' protocol client, tests/e2e/appclient.py, not with the package's own
codec): what the real server cannot be made to do on purpose, as tests/app/lib_test.cpp does it
for libncstore-app: a refused hello, a reply that never comes, a late reply, a frame the
protocol does not have, a message too big to send, events in the same write as the hello reply."""

import os
import socket
import struct
import tempfile
import threading
import time

import pytest

import appclient
import ncstore


class FakeServer:
    """Accepts one connection; script(conn, read) plays the server (read() returns the next
    appclient.Message the client sent)."""

    def __init__(self, script):
        self.dir = tempfile.mkdtemp(prefix="ncstore-fake-")
        self.path = os.path.join(self.dir, "app.sock")
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(self.path)
        self.listener.listen(1)
        self.received = []
        self.error = None
        self.thread = threading.Thread(target=self._run, args=(script,), daemon=True)
        self.thread.start()

    def _run(self, script):
        conn, _ = self.listener.accept()
        buffer = b""

        def read():
            nonlocal buffer
            while True:
                if len(buffer) >= 4:
                    (length,) = struct.unpack_from("<I", buffer)
                    if len(buffer) >= 4 + length:
                        body, buffer = buffer[4:4 + length], buffer[4 + length:]
                        type_number, ident = struct.unpack_from("<BI", body)
                        m = appclient.Message(appclient.TYPE_NAMES[type_number], ident,
                                              appclient.decode_fields(body[5:]))
                        self.received.append(m)
                        return m
                data = conn.recv(65536)
                if not data:
                    return None
                buffer += data
        try:
            script(conn, read)
        except Exception as e:  # reported by close()
            self.error = e
        finally:
            time.sleep(0.1)
            conn.close()

    def close(self):
        self.thread.join(10)
        self.listener.close()
        os.unlink(self.path)
        os.rmdir(self.dir)
        if self.error:
            raise self.error


def hello_ok(conn, read, extra=b""):
    hello = read()
    assert hello.type == "Hello" and hello.fields.get("AppName") == "fake" and hello.fields.get("Version") == 1
    conn.sendall(appclient.frame("Ok", hello.id, [("Session", 42), ("Version", 1), ("User", "operator")]) + extra)


@pytest.fixture
def fake():
    servers = []

    def make(script):
        servers.append(FakeServer(script))
        return servers[-1]
    yield make
    for s in servers:
        s.close()


def test_a_refused_hello_raises_the_servers_error(fake):
    s = fake(lambda conn, read: read() and conn.sendall(appclient.frame("Error", 1, [
        ("ErrorTag", "access-denied"), ("Message", "uid 1234 has no user"), ("AppTag", "no-user")])))
    with pytest.raises(ncstore.Error) as e:
        ncstore.connect(s.path, app_name="fake")
    assert (e.value.tag, e.value.message, e.value.app_tag) == ("access-denied", "uid 1234 has no user", "no-user")


def test_the_socket_from_the_environment_and_an_event_in_the_same_write_as_the_hello_reply(fake, monkeypatch):
    # An Apply of subscription 9 right behind the hello reply, before the client subscribed: the
    # reader keeps the frame; with no subscription 9 it is dropped, and what follows is read.
    apply = appclient.frame("Apply", 0, [("Subscription", 9), ("CommitId", 3)])

    def script(conn, read):
        hello_ok(conn, read, extra=apply)
        get = read()
        conn.sendall(appclient.frame("Data", get.id, [("Xml", "<data/>"), ("CommitId", 3)]))
        read()  # until the client closes
    s = fake(script)
    monkeypatch.setenv("NCSTORE_APP_SOCKET", s.path)
    with ncstore.connect(app_name="fake") as conn:
        assert (conn.session, conn.user) == (42, "operator")
        assert conn.get("operational", "/x:y", with_defaults="report-all") == "<data/>"
    get = s.received[1]
    assert get.type == "Get" and get.fields.get("Datastore") == 3 and get.fields.get("XPath") == "/x:y"
    assert get.fields.get("WithDefaults") == 2


def test_a_request_times_out_and_its_late_reply_is_ignored(fake):
    def script(conn, read):
        hello_ok(conn, read)
        push = read()
        time.sleep(0.6)
        conn.sendall(appclient.frame("Ok", push.id, []))  # late
        notify = read()
        conn.sendall(appclient.frame("Ok", notify.id, []))
        read()
    s = fake(script)
    with ncstore.connect(s.path, app_name="fake", timeout=0.3) as conn:
        start = time.monotonic()
        with pytest.raises(ncstore.Error) as e:
            conn.push("<x/>")
        assert "no reply of ncstored to Push within 300 ms" == e.value.message
        assert time.monotonic() - start < 0.55
        conn.timeout = 5
        conn.notify("<n/>", event_time="2026-12-07T10:00:00Z")  # its own reply, not the late one
        assert conn.connected
    assert [m.type for m in s.received] == ["Hello", "Push", "Notify"]
    assert s.received[2].fields.get("EventTime") == "2026-12-07T10:00:00Z"


def test_a_frame_the_protocol_does_not_have_closes_the_connection_and_fails_what_waits(fake):
    def script(conn, read):
        hello_ok(conn, read)
        read()
        conn.sendall(struct.pack("<IBI", 5, 99, 0))  # type 99: none
        read()
    s = fake(script)
    with ncstore.connect(s.path, app_name="fake") as conn:
        with pytest.raises(ncstore.Error) as e:
            conn.get("running")
        assert "closed" in e.value.message
        deadline = time.monotonic() + 5
        while conn.connected:
            assert time.monotonic() < deadline
            time.sleep(0.02)


def test_a_message_too_big_is_refused_before_it_is_sent(fake):
    def script(conn, read):
        hello_ok(conn, read)
        notify = read()
        conn.sendall(appclient.frame("Ok", notify.id, []))
        read()
    s = fake(script)
    with ncstore.connect(s.path, app_name="fake") as conn:
        with pytest.raises(ncstore.Error) as e:
            conn.push("<x>%s</x>" % ("y" * (16 << 20)))
        assert e.value.tag == "too-big"
        conn.notify("<n/>")  # the connection goes on
    assert [m.type for m in s.received] == ["Hello", "Notify"]


def test_verify_answers_carry_the_event_and_the_refusal_fields(fake):
    answers = []

    def script(conn, read):
        hello_ok(conn, read)
        sub = read()
        assert sub.fields.get("Flags") == 1 | 2 | 8 | 16 and sub.fields.get("Since") == 7
        assert sub.fields.get("Priority") == 2 ** 64 - 3 and sub.fields.get("DeadlineMs") == 1500
        conn.sendall(appclient.frame("Ok", sub.id, [("Subscription", 5)]))
        change = [("ChangeOp", 0), ("Path", "/m:c/l[k='1']"), ("Xml", "<l><k>1</k></l>"), ("Where", 1),
                  ("Anchor", "/m:c/l[k='0']")]
        for event in (11, 12):
            conn.sendall(appclient.frame("Verify", 0, [("Subscription", 5), ("Event", event), ("Change", change),
                                                       ("DeadlineMs", 1000)]))
            answers.append(read())
        conn.sendall(appclient.frame("Abort", 0, [("Subscription", 5), ("Event", 11)]))
        read()
    s = fake(script)
    seen, aborted = [], threading.Event()

    def verify(changes, v):
        seen.append(list(changes))
        if len(seen) == 2:
            raise ncstore.Error("no", "invalid-value", path="/m:c", app_tag="t", info="<i/>")

    with ncstore.connect(s.path, app_name="fake") as conn:
        conn.subscribe("/m:c", verify=verify, abort=lambda changes: aborted.set() or seen.append(list(changes)),
                       mandatory=True, since=7, priority=-3, deadline=1.5)
        assert aborted.wait(5)
    assert seen[0] == [ncstore.Change("create", "/m:c/l[k='1']", xml="<l><k>1</k></l>", anchor="/m:c/l[k='0']")]
    assert seen[2] == seen[0]  # the abort of event 11 gets the change set of its verify
    accept, refuse = answers
    assert accept.type == "VerifyDone" and accept.id == 11 and list(accept.fields) == [("Event", 11)]
    assert refuse.id == 12 and dict(refuse.fields) == dict(Event=12, ErrorTag="invalid-value", AppTag="t",
                                                           Path="/m:c", Message="no", Info="<i/>")
