"""The application API (issue 37, docs/app-protocol.md) end to end: the real ncstored, its
applications as real processes or connections on the data directory's socket, and ncclient on
the NETCONF side. What a NETCONF client notices: an application's refusal with its message,
error-path, error-app-tag and error-info, nothing committed; state data applications push or
provide in <get>; an application's RPC and notification; and that a dead, slow or hostile
application costs nobody else anything."""

import os
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest
from lxml import etree
from ncclient.operations import RPCError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import appclient  # noqa: E402
from appclient import APPLY, INITIAL, MANDATORY, VERIFY, App, AppError, item  # noqa: E402
from ncserver import NC, config, iface, interfaces, reset, take_all  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER_ARGS = ["--yang-dir", os.path.join(HERE, "yang"), "--app-root-user", "e2e"]
APT = "urn:ncstore:test:app"
IFS = "/ietf-interfaces:interfaces"
IF = "/ietf-interfaces:interfaces/interface[name='%s']"
TYPE = "iana-if-type:ethernetCsmacd"


def sock(server):
    return os.path.join(server.data_dir, "app.sock")


@pytest.fixture
def app(server, m):
    reset(m)
    a = App(sock(server), name="roadm")
    yield a
    a.close()


def edit_error(m, *entries):
    with pytest.raises(RPCError) as e:
        m.edit_config(target="running", config=config(*entries))
    return e.value


def verifier(a, refuse=lambda changes: None, seen=None):
    """Answers every Verify on the reader thread: accept, or refuse with refuse(changes)'s dict."""
    def on_verify(msg):
        if seen is not None:
            seen.append(msg)
        why = refuse(msg.changes())
        event = msg.fields.get("Event")
        if why:
            a.refuse(event, **why)
        else:
            a.accept(event)
    a.on("Verify", on_verify)


def test_a_refusal_reaches_ncclient_unchanged_and_nothing_is_committed(server, m, app):
    app.subscribe(IFS, flags=VERIFY)
    verifier(app, refuse=lambda ch: dict(message="port 7 carries no such wavelength",
                                         path=IF % "bad", app_tag="wavelength-in-use",
                                         info='<port xmlns="urn:example:roadm">7</port>',
                                         tag="invalid-value")
             if any("bad" in (c["path"] + (c["xml"] or "")) for c in ch) else None)
    m.edit_config(target="running", config=config(iface("good")))
    e = edit_error(m, iface("bad"))
    assert e.tag == "invalid-value"
    assert e.message == "port 7 carries no such wavelength"
    raw = etree.tostring(e.xml).decode()
    assert e.path.strip() == "/ietf-interfaces:interfaces/interface[name='bad']", raw
    assert "<error-app-tag>wavelength-in-use</error-app-tag>" in raw, raw
    assert '<port xmlns="urn:example:roadm">7</port></error-info>' in raw, raw
    assert set(interfaces(m)) == {"good"}, "the refused interface was committed"


def test_two_verifiers_in_priority_order_one_refuses_the_other_is_told_to_abort(server, m, app):
    second = App(sock(server), name="amplifier")
    try:
        order = []
        app.subscribe(IFS, flags=VERIFY, priority=1)
        second.subscribe(IFS, flags=VERIFY, priority=2)
        verifier(app, seen=order)
        verifier(second, seen=order, refuse=lambda ch: dict(message="amplifier says no"))
        e = edit_error(m, iface("x1"))
        assert "amplifier says no" in e.message
        assert [s.fields.get("Subscription") for s in order][0] < [s.fields.get("Subscription") for s in order][1]
        abort = app.next_event("Abort")
        assert abort.fields.get("Event") == order[0].fields.get("Event")
        assert interfaces(m) == {}
    finally:
        second.close()


def test_apply_gets_exactly_the_durable_change_set_after_an_initial_event(server, m, app):
    m.edit_config(target="running", config=config(iface("pre", description="before")))
    app.subscribe(IFS, flags=APPLY | INITIAL)
    initial = app.next_event("Apply")
    assert initial.fields.get("Flags") == INITIAL
    assert "pre" in initial.changes()[0]["xml"]
    m.edit_config(target="running", config=config(iface("pre", description="after")))
    apply = app.next_event("Apply")
    assert apply.changes() == [dict(op="update", path=IF % "pre" + "/description", old="before", new="after",
                                    xml=None)]
    assert apply.fields.get("CommitId") > initial.fields.get("CommitId")


def test_an_application_killed_while_verifying_fails_that_commit_and_no_other(server, m):
    reset(m)
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "appclient.py"), "verify-sleeper", sock(server),
                             IFS], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        result = {}

        def commit():
            try:
                m.edit_config(target="running", config=config(iface("k1")))
                result["ok"] = True
            except RPCError as e:
                result["error"] = e
        t = threading.Thread(target=commit)
        t.start()
        time.sleep(0.5)  # the commit waits for the application's verdict
        proc.kill()
        t.join(10)
        assert not t.is_alive(), "the commit did not end when its verifier died"
        assert "closed its connection while verifying" in result["error"].message
    finally:
        proc.kill()
        proc.wait()
    m.edit_config(target="running", config=config(iface("k2")))  # no verifier any more
    assert set(interfaces(m)) == {"k2"}


def test_a_verifier_past_its_deadline_refuses_with_its_name(server, m, app):
    app.subscribe(IFS, flags=VERIFY, deadline_ms=300)
    start = time.monotonic()
    e = edit_error(m, iface("slow"))
    assert time.monotonic() - start < 5
    assert "'roadm'" in e.message and "did not verify" in e.message
    assert interfaces(m) == {}


def test_resume_since_n_replays_exactly_the_missed_change_sets(server, m, app):
    app.subscribe(IFS, flags=APPLY)
    m.edit_config(target="running", config=config(iface("r1")))
    last = app.next_event("Apply").fields.get("CommitId")
    app.close()
    m.edit_config(target="running", config=config(iface("r2")))
    m.edit_config(target="running", config=config(iface("r1", description="changed")))
    m.edit_config(target="running", config=config(iface("r2", op="delete")))
    again = App(sock(server), name="roadm")
    try:
        again.subscribe(IFS, flags=APPLY, since=last)
        got = [again.next_event("Apply") for _ in range(3)]
        ids = [g.fields.get("CommitId") for g in got]
        assert ids == sorted(ids) and ids[0] > last
        # r2 created, r1's description created (it had none), r2 deleted
        assert [(c["op"], c["path"]) for g in got for c in g.changes()] == [
            ("create", IF % "r2"), ("create", IF % "r1" + "/description"), ("delete", IF % "r2")]
        assert got[1].changes()[0]["new"] == "changed"
        m.edit_config(target="running", config=config(iface("r3")))
        live = again.next_event("Apply")
        assert live.fields.get("CommitId") > ids[-1]
        with pytest.raises(Exception):
            again.next_event("Apply", timeout=0.5)  # nothing twice
    finally:
        again.close()


PORTS = "/ncstore-app-test:device/port"


def port_config(name, wavelength):
    return ('<config xmlns="%s"><device xmlns="%s"><port><name>%s</name><wavelength>%d</wavelength></port>'
            '</device></config>' % (NC, APT, name, wavelength))


def test_a_mandatory_verifier_absent_refuses_commits_of_its_subtree(server, m, app):
    # Its own subtree: the requirement stays for the server's lifetime.
    app.subscribe(PORTS, flags=VERIFY | MANDATORY)
    verifier(app)
    m.edit_config(target="running", config=port_config("p1", 1))
    app.close()
    time.sleep(0.3)
    with pytest.raises(RPCError) as e:
        m.edit_config(target="running", config=port_config("p2", 2))
    assert "'roadm'" in e.value.message and "not connected" in e.value.message
    assert "p2" not in m.get_config(source="running").data_xml
    m.edit_config(target="running", config=config(iface("elsewhere")))  # other subtrees commit
    back = App(sock(server), name="roadm")
    try:
        back.subscribe(PORTS, flags=VERIFY | MANDATORY)
        verifier(back)
        m.edit_config(target="running", config=port_config("p2", 2))
    finally:
        back.close()


INFO = '<device xmlns="%s"><info><vendor>ACME</vendor><serial>%s</serial></info></device>'


def test_pushed_state_shows_in_get_and_goes_with_a_killed_application(server, m):
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "appclient.py"), "pusher", sock(server),
                             INFO % (APT, "SN-1")], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        flt = ("subtree", '<device xmlns="%s"/>' % APT)
        assert "SN-1" in m.get(filter=flt).data_xml
        data = m.dispatch(_get_data_operational(APT))
        assert "SN-1" in data.xml
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 5
    while "SN-1" in m.get(filter=("subtree", '<device xmlns="%s"/>' % APT)).data_xml:
        assert time.monotonic() < deadline, "pushed data outlived its application"
        time.sleep(0.05)


def _get_data_operational(ns):
    return etree.fromstring(
        '<get-data xmlns="urn:ietf:params:xml:ns:yang:ietf-netconf-nmda" '
        'xmlns:ds="urn:ietf:params:xml:ns:yang:ietf-datastores"><datastore>ds:operational</datastore>'
        '<subtree-filter><device xmlns="%s"/></subtree-filter></get-data>' % ns)


def test_persistent_state_survives_a_server_restart(server):
    a = App(sock(server), name="inventory")
    a.request("Push", [("Xml", INFO % (APT, "SN-P")), ("Lifetime", 1)])
    a.close()
    server.restart()
    with server.connect() as m:
        assert "SN-P" in m.get(filter=("subtree", '<device xmlns="%s"/>' % APT)).data_xml
    b = App(sock(server), name="inventory")
    b.request("PushDelete", [("XPath", "/ncstore-app-test:device/info"), ("Lifetime", 1)])
    b.close()


def test_a_pull_provider_is_called_once_per_request_with_the_filter(server, m, app):
    calls = []

    def on_pull(msg):
        calls.append(msg.fields.get("XPath"))
        items = "".join("<item><id>%d</id><kind>k%d</kind></item>" % (i, i) for i in range(1000))
        app.send("PullDone", [("Event", msg.fields.get("Event")),
                              ("Xml", '<inventory xmlns="%s">%s</inventory>' % (APT, items))])
    app.on("Pull", on_pull)
    app.request("Provide", [("XPath", "/ncstore-app-test:inventory"), ("DeadlineMs", 2000)])
    reply = m.get(filter=("xpath", ({"apt": APT}, "/apt:inventory/apt:item[apt:id='7']")))
    assert "<kind>k7</kind>" in reply.data_xml and "k8" not in reply.data_xml
    assert calls == ["/ncstore-app-test:inventory/item[id='7']"]  # module names as prefixes
    full = m.get(filter=("subtree", '<inventory xmlns="%s"/>' % APT)).data_xml
    assert full.count("<item>") == 1000 and len(calls) == 2


def test_a_provider_past_its_deadline_fails_that_read_only(server, m, app):
    app.on("Pull", lambda msg: None)  # never answers
    app.request("Provide", [("XPath", "/ncstore-app-test:inventory"), ("DeadlineMs", 300)])
    with server.connect() as other:
        start = time.monotonic()
        with pytest.raises(RPCError) as e:
            m.get(filter=("subtree", '<inventory xmlns="%s"/>' % APT))
        assert "'roadm'" in e.value.message and "within 300 ms" in e.value.message
        assert time.monotonic() - start < 5
        other.get_config(source="running")  # others are served meanwhile and after


def test_an_rpc_handler_answers_ncclient(server, m, app):
    def on_call(msg):
        assert "<port>7</port>" in msg.fields.get("Xml")
        app.send("RpcDone", [("Event", msg.fields.get("Event")),
                             ("Xml", '<status xmlns="%s">blinking</status>' % APT)])
    app.on("Call", on_call)
    app.request("RegisterRpc", [("Path", "/ncstore-app-test:led-control")])
    reply = m.dispatch(etree.fromstring('<led-control xmlns="%s"><port>7</port><on>true</on></led-control>' % APT))
    assert "blinking" in reply.xml
    app.close()
    time.sleep(0.3)
    with pytest.raises(RPCError) as e:
        m.dispatch(etree.fromstring('<led-control xmlns="%s"><port>7</port></led-control>' % APT))
    assert e.value.tag == "operation-not-supported"


def test_an_applications_notification_reaches_a_subscriber_and_is_replayed(server, m, app):
    with server.connect() as sub:
        sub.create_subscription()
        app.request("Notify", [("Xml", '<alarm xmlns="%s"><text>fiber cut</text><severity>critical</severity></alarm>'
                                % APT)])
        got = take_all(sub, timeout=2)
        assert any("fiber cut" in n for n in got)
    with server.connect() as replay:
        replay.create_subscription(start_time="2000-01-01T00:00:00Z")
        assert any("fiber cut" in n for n in take_all(replay, timeout=2))
    with pytest.raises(AppError) as e:
        app.request("Notify", [("Xml", '<alarm xmlns="%s"><severity>loud</severity></alarm>' % APT)])
    assert e.value.tag == "invalid-value"


def test_a_callback_that_writes_does_not_deadlock(server, m, app):
    app.subscribe(IFS, flags=VERIFY)
    results = {}

    def on_verify(msg):
        event = msg.fields.get("Event")
        results["view"] = app.get("/ietf-interfaces:interfaces/interface/name", view_event=event)
        # A write from inside the callback: queued after the commit being verified.
        threading.Thread(target=lambda: results.setdefault("deferred", app.edit(
            [item("merge", IF % "echo" + "/type", TYPE)], deferred=True))).start()
        time.sleep(0.2)
        app.accept(event)
    # Not on the test client's reader thread: on_verify waits for a reply that thread reads.
    app.on("Verify", lambda msg: threading.Thread(target=on_verify, args=(msg,)).start())
    m.edit_config(target="running", config=config(iface("w1")))
    deadline = time.monotonic() + 10
    while "deferred" not in results:
        assert time.monotonic() < deadline, "the deferred write never ran"
        time.sleep(0.05)
    assert "w1" in results["view"]
    assert set(interfaces(m)) == {"w1", "echo"}


def test_local_edits_obey_locks_and_nacm(server, m, app):
    m.lock(target="running")
    try:
        with pytest.raises(AppError) as e:
            app.edit([item("merge", IF % "l1" + "/type", TYPE)])
        assert e.value.tag == "in-use"
    finally:
        m.unlock(target="running")
    app.edit([item("merge", IF % "l1" + "/type", TYPE)])
    assert set(interfaces(m)) == {"l1"}
    assert app.get(IFS).count("<name>l1</name>") == 1


def test_hostile_local_clients_disturb_no_netconf_session(server, m):
    path = sock(server)
    garbage = socket.socket(socket.AF_UNIX)
    garbage.connect(path)
    garbage.sendall(os.urandom(4096))
    oversize = socket.socket(socket.AF_UNIX)
    oversize.connect(path)
    oversize.sendall(struct.pack("<I", 1 << 30) + b"x" * 100)
    # Says hello, subscribes to every change, and never reads again.
    silent = socket.socket(socket.AF_UNIX)
    silent.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    silent.connect(path)
    silent.sendall(appclient.frame("Hello", 1, [("AppName", "never-reads"), ("Version", 1)]) +
                   appclient.frame("Subscribe", 2, [("XPath", IFS), ("Flags", APPLY)]))
    many = []
    for _ in range(500):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        many.append(s)
    try:
        for i in range(20):
            start = time.monotonic()
            m.edit_config(target="running", config=config(iface("h%d" % i, description="x" * 2000)))
            assert time.monotonic() - start < 2, "a NETCONF edit waited for a hostile application"
        assert len(interfaces(m)) >= 20
        with server.connect() as fresh:
            fresh.get_config(source="running")
        # Past --app-max-connections (128) the server closes what it cannot serve.
        many[-1].settimeout(5)
        assert many[-1].recv(16) == b""
    finally:
        for s in many + [garbage, oversize, silent]:
            s.close()
    assert server.alive()


def test_a_data_directory_deeper_than_a_socket_path_still_serves_applications():
    """sun_path holds 107 bytes; a deep data directory's socket is bound and reached through the
    directory's descriptor (/proc/self/fd/N/app.sock), by the server and by libncstore-app."""
    from ncserver import Server
    deep = Server(name="app-" + "d" * 100)
    try:
        deep.start()
        path = sock(deep)
        assert len(path) > 107 and os.path.exists(path)
        ifmgr = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(os.environ["NCSTORED"]))), "app",
                             "ncstore-example-ifmgr")
        proc = subprocess.Popen([ifmgr, "--socket", path], stdout=subprocess.PIPE, text=True)
        try:
            assert any(line.startswith("ifmgr: session ") for line in proc.stdout)
        finally:
            proc.terminate()
            proc.wait(10)
    finally:
        deep.stop()
        deep.cleanup()
