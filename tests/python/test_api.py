"""The Python API (python/ncstore, issue 38) against the real ncstored over its real socket, with
ncclient over SSH as the NETCONF client that sees what the application does: the scenarios of
the application API's tests (tests/e2e/test_app.py, tests/app/lib_test.cpp), from Python."""

import asyncio
import os
import queue
import select
import threading
import time

import pytest
from lxml import etree
from ncclient.operations import RPCError

import ncstore
import ncstore.aio
from ncserver import NC, config, iface, interfaces, reset, take_all

E2E = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e")
SERVER_ARGS = ["--yang-dir", os.path.join(E2E, "yang"), "--app-root-user", "e2e"]
APT = "urn:ncstore:test:app"
IFS = "/ietf-interfaces:interfaces"
IF = "/ietf-interfaces:interfaces/interface[name='%s']"
TYPE = "iana-if-type:ethernetCsmacd"
PORTS = "/ncstore-app-test:device/port"
INFO = '<device xmlns="%s"><info><vendor>ACME</vendor><serial>%s</serial></info></device>'
DEVICE = ("subtree", '<device xmlns="%s"/>' % APT)


def sock(server):
    return os.path.join(server.data_dir, "app.sock")


@pytest.fixture
def conn(server, m):
    reset(m)
    with ncstore.connect(sock(server), app_name="roadm", timeout=10) as c:
        yield c


def edit_error(m, *entries):
    with pytest.raises(RPCError) as e:
        m.edit_config(target="running", config=config(*entries))
    return e.value


def port_config(name, wavelength):
    return ('<config xmlns="%s"><device xmlns="%s"><port><name>%s</name><wavelength>%d</wavelength></port>'
            '</device></config>' % (NC, APT, name, wavelength))


def wait_for(predicate, what, timeout=5):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_hello_gives_the_session_and_the_mapped_user(server, m, conn):
    assert conn.session > 0 and conn.user == "e2e" and conn.connected
    mon = m.get(filter=("subtree", '<netconf-state xmlns="urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring">'
                                   '<sessions/></netconf-state>')).data_xml
    assert "<session-id>%d</session-id>" % conn.session in mon
    conn.close()
    assert not conn.connected
    with pytest.raises(ncstore.Error) as e:
        conn.get("running")
    assert e.value.tag == "operation-failed" and "closed" in e.value.message


def test_verify_accepts_and_a_refusal_reaches_ncclient_unchanged(server, m, conn):
    seen = []

    def verify(changes, v):
        seen.append((changes.commit_id, [c.path + c.xml for c in changes], v.get(IFS), v.get_before(IFS)))
        for c in changes:
            if "bad" in c.path:
                raise ncstore.Error("port 7 carries no such wavelength", "invalid-value", path=c.path,
                                    app_tag="wavelength-in-use", info='<port xmlns="urn:example:roadm">7</port>')
    with conn.subscribe(IFS, verify=verify):
        m.edit_config(target="running", config=config(iface("good")))
        e = edit_error(m, iface("bad"))
    assert e.tag == "invalid-value"
    assert e.message == "port 7 carries no such wavelength"
    assert e.path.strip() == IF % "bad"
    raw = etree.tostring(e.xml).decode()
    assert "<error-app-tag>wavelength-in-use</error-app-tag>" in raw, raw
    assert '<port xmlns="urn:example:roadm">7</port></error-info>' in raw, raw
    assert set(interfaces(m)) == {"good"}, "the refused interface was committed"
    # The verify of "good": the change as it would leave running, and running before it.
    commit_id, paths, after, before = seen[0]
    assert commit_id == 0 and len(paths) == 1 and "<name>good</name>" in paths[0]  # ietf-interfaces created
    assert "<name>good</name>" in after and "<name>good</name>" not in before
    # Released: no verify any more.
    m.edit_config(target="running", config=config(iface("bad")))
    assert len(seen) == 2


def test_a_verify_callback_that_raises_something_else_refuses_with_its_text(server, m, conn):
    def verify(changes, v):
        raise ValueError("no spare transponder")
    with conn.subscribe(IFS, verify=verify):
        e = edit_error(m, iface("x"))
    assert e.tag == "operation-failed" and "no spare transponder" in e.message
    assert interfaces(m) == {}


def test_a_verifier_that_extends_its_deadline_is_waited_for_and_one_that_does_not_refuses(server, m, conn):
    def slow(changes, v):
        if any("patient" in c.path + c.xml for c in changes):
            v.extend(5)
        time.sleep(0.6)
    with conn.subscribe(IFS, verify=slow, deadline=0.3):
        m.edit_config(target="running", config=config(iface("patient")))
        e = edit_error(m, iface("hasty"))
    assert "'roadm'" in e.message and "did not verify" in e.message
    assert set(interfaces(m)) == {"patient"}


def test_apply_after_commit_with_the_change_set_and_an_initial_one(server, m, conn):
    m.edit_config(target="running", config=config(iface("pre", description="before")))
    got, threads = queue.Queue(), []

    def apply(changes):
        threads.append(threading.current_thread().name)
        got.put(changes)
    with conn.subscribe(IFS, apply=apply, initial=True):
        initial = got.get(timeout=5)
        assert initial.initial and "<name>pre</name>" in initial[0].xml and initial.commit_id > 0
        m.edit_config(target="running", config=config(iface("pre", description="after")))
        changed = got.get(timeout=5)
    assert not changed.initial and changed.commit_id > initial.commit_id
    assert list(changed) == [ncstore.Change("update", IF % "pre" + "/description", "before", "after")]
    assert threads == ["ncstore-callbacks"] * 2  # the connection's callback thread


def test_abort_tells_a_verifier_that_accepted_when_a_later_one_refuses(server, m, conn):
    order, aborted = [], queue.Queue()
    with ncstore.connect(sock(server), app_name="amplifier") as second:
        def first_verify(changes, v):
            order.append("roadm")

        def second_verify(changes, v):
            order.append("amplifier")
            raise ncstore.Error("amplifier says no")
        with conn.subscribe(IFS, verify=first_verify, abort=aborted.put, priority=1), \
                second.subscribe(IFS, verify=second_verify, priority=2):
            e = edit_error(m, iface("x1"))
            changes = aborted.get(timeout=5)
    assert e.message == "amplifier says no"
    assert order == ["roadm", "amplifier"]
    assert len(changes) == 1 and changes[0].op == "create" and "<name>x1</name>" in changes[0].xml
    assert interfaces(m) == {}


def test_resume_since_replays_exactly_what_was_missed_while_away(server, m, conn):
    got = queue.Queue()
    conn.subscribe(IFS, apply=got.put)
    m.edit_config(target="running", config=config(iface("r1")))
    last = got.get(timeout=5).commit_id
    conn.close()
    m.edit_config(target="running", config=config(iface("r2")))
    m.edit_config(target="running", config=config(iface("r1", description="changed")))
    m.edit_config(target="running", config=config(iface("r2", op="delete")))
    with ncstore.connect(sock(server), app_name="roadm") as again:
        with again.subscribe(IFS, apply=got.put, since=last):
            missed = [got.get(timeout=5) for _ in range(3)]
            ids = [s.commit_id for s in missed]
            assert ids == sorted(ids) and ids[0] > last
            assert [(c.op, c.path) for s in missed for c in s] == [
                ("create", IF % "r2"), ("create", IF % "r1" + "/description"), ("delete", IF % "r2")]
            assert missed[1][0].new_value == "changed"
            m.edit_config(target="running", config=config(iface("r3")))
            assert got.get(timeout=5).commit_id > ids[-1]
            with pytest.raises(queue.Empty):
                got.get(timeout=0.5)  # nothing twice


def test_a_mandatory_subscription_absent_refuses_commits_of_its_subtree(server, m, conn):
    conn.subscribe(PORTS, verify=lambda changes, v: None, mandatory=True)
    m.edit_config(target="running", config=port_config("p1", 1))
    conn.close()
    time.sleep(0.3)
    with pytest.raises(RPCError) as e:
        m.edit_config(target="running", config=port_config("p2", 2))
    assert "'roadm'" in e.value.message and "not connected" in e.value.message
    assert "p2" not in m.get_config(source="running").data_xml
    m.edit_config(target="running", config=config(iface("elsewhere")))  # other subtrees commit
    with ncstore.connect(sock(server), app_name="roadm") as back:
        with back.subscribe(PORTS, verify=lambda changes, v: None, mandatory=True):
            m.edit_config(target="running", config=port_config("p2", 2))
    assert "p2" in m.get_config(source="running").data_xml


def test_pushed_state_of_lifetime_connection_goes_with_the_connection(server, m, conn):
    conn.push(INFO % (APT, "SN-1"))
    assert "SN-1" in m.get(filter=DEVICE).data_xml
    assert "SN-1" in conn.get("operational", "/ncstore-app-test:device/info")
    conn.push_delete("/ncstore-app-test:device/info/serial")
    data = m.get(filter=DEVICE).data_xml
    assert "SN-1" not in data and "ACME" in data
    conn.push(INFO % (APT, "SN-2"))
    conn.close()
    wait_for(lambda: "SN-2" not in m.get(filter=DEVICE).data_xml, "pushed data outlived its connection")


def test_a_pull_provider_answers_a_get_with_its_filter_and_its_refusal_fails_the_get(server, m, conn):
    calls = []

    def inventory(flt):
        calls.append(flt)
        if "666" in flt:
            raise ncstore.Error("item 666 is not readable now", "resource-denied", app_tag="busy")
        items = "".join("<item><id>%d</id><kind>k%d</kind></item>" % (i, i) for i in range(100))
        return '<inventory xmlns="%s">%s</inventory>' % (APT, items)
    with conn.provide("/ncstore-app-test:inventory", inventory, deadline=2):
        reply = m.get(filter=("xpath", ({"apt": APT}, "/apt:inventory/apt:item[apt:id='7']"))).data_xml
        assert "<kind>k7</kind>" in reply and "k8" not in reply
        assert calls == ["/ncstore-app-test:inventory/item[id='7']"]  # module names as prefixes
        assert m.get(filter=("subtree", '<inventory xmlns="%s"/>' % APT)).data_xml.count("<item>") == 100
        with pytest.raises(RPCError) as e:
            m.get(filter=("xpath", ({"apt": APT}, "/apt:inventory/apt:item[apt:id='666']")))
        assert e.value.tag == "resource-denied" and e.value.message == "item 666 is not readable now"
        assert "<error-app-tag>busy</error-app-tag>" in etree.tostring(e.value.xml).decode()
    assert len(calls) == 3
    assert "<item>" not in m.get(filter=("subtree", '<inventory xmlns="%s"/>' % APT)).data_xml  # released


LED = '<led-control xmlns="%s"><port>%s</port><on>true</on></led-control>'


def test_an_rpc_handler_answers_ncclient_and_its_refusal_is_ncclients_rpc_error(server, m, conn):
    inputs = []

    def led(input_xml):
        inputs.append(input_xml)
        if "<port>9</port>" in input_xml:
            raise ncstore.Error("port 9 has no LED", "invalid-value", path="/ncstore-app-test:led-control/port",
                                app_tag="no-led")
        return '<status xmlns="%s">blinking</status>' % APT
    with conn.handle_rpc("/ncstore-app-test:led-control", led):
        assert "blinking" in m.dispatch(etree.fromstring(LED % (APT, "7"))).xml
        with pytest.raises(RPCError) as e:
            m.dispatch(etree.fromstring(LED % (APT, "9")))
    assert "<port>7</port>" in inputs[0]
    assert e.value.tag == "invalid-value" and e.value.message == "port 9 has no LED"
    assert e.value.path.strip() == "/ncstore-app-test:led-control/port"
    assert "<error-app-tag>no-led</error-app-tag>" in etree.tostring(e.value.xml).decode()
    time.sleep(0.2)
    with pytest.raises(RPCError) as gone:
        m.dispatch(etree.fromstring(LED % (APT, "7")))
    assert gone.value.tag == "operation-not-supported"


def test_an_async_rpc_handler_answers_later_from_another_thread(server, m, conn):
    def led(input_xml, responder):
        def later():
            responder.extend(5)
            time.sleep(0.3)
            if "<port>9</port>" in input_xml:
                responder.fail(ncstore.Error("port 9 is dark", "operation-failed", app_tag="dark"))
            else:
                responder.reply('<status xmlns="%s">later</status>' % APT)
            responder.reply("<status>twice</status>")  # ignored: answered once
        threading.Thread(target=later).start()
    with conn.handle_rpc_async("/ncstore-app-test:led-control", led, deadline=0.2):
        assert "later" in m.dispatch(etree.fromstring(LED % (APT, "7"))).xml  # past 0.2 s: extended
        with pytest.raises(RPCError) as e:
            m.dispatch(etree.fromstring(LED % (APT, "9")))
    assert e.value.message == "port 9 is dark"


def test_a_notification_reaches_a_create_subscription(server, m, conn):
    m.create_subscription()
    conn.notify('<alarm xmlns="%s"><text>fiber cut</text><severity>critical</severity></alarm>' % APT,
                event_time="2026-12-07T10:00:00Z")
    got = take_all(m, timeout=1.5)
    assert any("fiber cut" in n and "2026-12-07T10:00:00" in n for n in got), got
    with pytest.raises(ncstore.Error) as e:
        conn.notify('<alarm xmlns="%s"><severity>loud</severity></alarm>' % APT)
    assert e.value.tag == "invalid-value"


def test_local_edits_and_reads(server, m, conn):
    first = conn.apply(ncstore.Batch().merge(IF % "l1" + "/type", TYPE).merge(IF % "l1" + "/description", "one"),
                       comment="from python")
    assert set(interfaces(m)) == {"l1"} and interfaces(m)["l1"]["description"] == "one"
    assert conn.get("running", IFS).count("<name>l1</name>") == 1
    second = conn.edit('<interfaces xmlns="urn:ietf:params:xml:ns:yang:ietf-interfaces"><interface>'
                       '<name>l2</name><type xmlns:ianaift="urn:ietf:params:xml:ns:yang:iana-if-type">'
                       'ianaift:ethernetCsmacd</type></interface></interfaces>', datastore="candidate")
    assert "l2" not in interfaces(m)
    third = conn.commit()
    assert set(interfaces(m)) == {"l1", "l2"} and first < third and second == 0
    conn.apply(ncstore.Batch().erase(IF % "l1" + "/description").remove(IF % "l9"))
    assert "description" not in interfaces(m)["l1"]
    with pytest.raises(ncstore.Error) as e:
        conn.apply(ncstore.Batch().create(IF % "l2" + "/type", TYPE))
    assert e.value.tag == "data-exists"
    m.lock(target="running")
    try:
        with pytest.raises(ncstore.Error) as e:
            conn.apply(ncstore.Batch().merge(IF % "l3" + "/type", TYPE))
        assert e.value.tag == "in-use"
    finally:
        m.unlock(target="running")
    assert "<enabled>true</enabled>" in conn.get("running", IF % "l1", with_defaults="report-all")


def test_inside_a_callback_a_write_is_deferred_and_a_blocking_one_refused(server, m, conn):
    results = {}

    def verify(changes, v):
        if any("echo" in c.path for c in changes):
            return
        try:
            conn.edit("<x/>")
        except RuntimeError as e:
            results["refused"] = str(e)
        results["view"] = v.get(IFS)
        results["future"] = conn.edit_async(ncstore.Batch().merge(IF % "echo" + "/type", TYPE))
    with conn.subscribe(IFS, verify=verify):
        m.edit_config(target="running", config=config(iface("w1")))
        commit_id = results["future"].result(timeout=10)
    assert "use edit_async()" in results["refused"]
    assert "<name>w1</name>" in results["view"] and commit_id > 0
    assert set(interfaces(m)) == {"w1", "echo"}


def test_bad_calls_get_an_error(server, m, conn):
    with pytest.raises(ncstore.Error) as e:
        conn.push('<device xmlns="%s"><info><nonsense>1</nonsense></info></device>' % APT)
    assert e.value.tag in ("invalid-value", "unknown-element") and e.value.message
    with pytest.raises(ncstore.Error) as e:
        conn.subscribe("/no-such-module:thing", apply=print)
    assert e.value.message
    with pytest.raises(ncstore.Error) as e:
        conn.handle_rpc("/ncstore-app-test:no-such-rpc", lambda i: "")
    assert e.value.message
    with pytest.raises(ncstore.Error) as e:
        conn.edit('<interfaces xmlns="urn:ietf:params:xml:ns:yang:ietf-interfaces"><interface><name>n</name>'
                  '<type xmlns:ianaift="urn:ietf:params:xml:ns:yang:iana-if-type">ianaift:noSuchType</type>'
                  '</interface></interfaces>')
    assert e.value.tag == "invalid-value"
    with pytest.raises(ValueError):
        conn.get("nowhere")
    with pytest.raises(ncstore.Error) as e:
        ncstore.connect(os.path.join(server.tmp, "no.sock"))
    assert "no.sock" in e.value.message
    assert conn.connected and conn.get("running", IFS) is not None  # the connection goes on


def test_a_connection_closed_from_inside_its_own_callback(server, m):
    reset(m)
    c = ncstore.connect(sock(server), app_name="quitter")
    closed = threading.Event()

    def apply(changes):
        c.close()
        closed.set()
    c.subscribe(IFS, apply=apply)
    m.edit_config(target="running", config=config(iface("q1")))
    assert closed.wait(5) and not c.connected
    m.edit_config(target="running", config=config(iface("q2")))  # nobody left to tell
    assert set(interfaces(m)) == {"q1", "q2"}


def test_poll_mode_runs_callbacks_in_dispatch_on_the_callers_thread(server, m):
    reset(m)
    threads = []
    with ncstore.connect(sock(server), app_name="poller", poll=True) as c:
        c.subscribe(IFS, apply=lambda changes: threads.append(threading.current_thread()))
        m.edit_config(target="running", config=config(iface("p1")))
        readable, _, _ = select.select([c], [], [], 5)
        assert readable and not threads
        c.dispatch()
    assert threads == [threading.current_thread()]


def test_asyncio_mode_with_coroutine_callbacks(server, m):
    reset(m)
    inventory_calls = []

    async def main():
        applied = asyncio.Queue()
        async with ncstore.aio.connect(sock(server), app_name="aio") as c:
            loop_thread = threading.current_thread()

            async def verify(changes, v):
                after = await v.get(IFS)
                await asyncio.sleep(0.05)
                assert threading.current_thread() is loop_thread
                if "<name>no</name>" in after:
                    raise ncstore.Error("not from asyncio", "invalid-value", app_tag="aio-says-no")

            async def apply(changes):
                await applied.put(changes)

            async def provide(flt):
                inventory_calls.append(flt)
                await asyncio.sleep(0.01)
                return '<inventory xmlns="%s"><item><id>1</id><kind>async</kind></item></inventory>' % APT

            def led(input_xml, responder):
                asyncio.get_running_loop().call_later(0.1, responder.reply,
                                                      '<status xmlns="%s">from the loop</status>' % APT)

            async with await c.subscribe(IFS, verify=verify, apply=apply):
                await c.provide("/ncstore-app-test:inventory", provide)
                await c.handle_rpc_async("/ncstore-app-test:led-control", led)
                loop = asyncio.get_running_loop()
                # ncclient blocks: it runs beside the loop, which serves the callbacks.
                await loop.run_in_executor(None, lambda: m.edit_config(target="running", config=config(iface("yes"))))
                changes = await asyncio.wait_for(applied.get(), 5)
                refusal = await loop.run_in_executor(None, lambda: edit_error(m, iface("no")))
                inv = await loop.run_in_executor(None, lambda: m.get(
                    filter=("subtree", '<inventory xmlns="%s"/>' % APT)).data_xml)
                rpc = await loop.run_in_executor(None, lambda: m.dispatch(etree.fromstring(LED % (APT, "1"))).xml)
                commit_id = await c.apply(ncstore.Batch().merge(IF % "a1" + "/type", TYPE))
                await asyncio.wait_for(applied.get(), 5)
                got = await c.get("running", IFS)
            return changes, refusal, inv, rpc, commit_id, got

    changes, refusal, inv, rpc, commit_id, got = asyncio.run(main())
    assert len(changes) == 1 and "<name>yes</name>" in changes[0].xml
    assert refusal.message == "not from asyncio" and refusal.tag == "invalid-value"
    assert "<kind>async</kind>" in inv and inventory_calls == [""]
    assert "from the loop" in rpc
    assert commit_id > changes.commit_id and "<name>a1</name>" in got
    assert set(interfaces(m)) == {"yes", "a1"}


def test_asyncio_inside_a_callback_a_write_is_deferred_and_a_blocking_one_refused(server, m):
    reset(m)

    async def main():
        results = {}
        async with ncstore.aio.connect(sock(server), app_name="aio") as c:
            async def verify(changes, v):
                if any("echo" in ch.path + ch.xml for ch in changes):
                    return
                try:
                    await c.apply(ncstore.Batch().merge(IF % "never" + "/type", TYPE))
                except RuntimeError as e:
                    results["refused"] = str(e)
                results["future"] = c.edit_async(ncstore.Batch().merge(IF % "echo" + "/type", TYPE))
            async with await c.subscribe(IFS, verify=verify):
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(None, lambda: m.edit_config(target="running", config=config(iface("w1"))))
                results["commit"] = await asyncio.wait_for(results["future"], 10)
        return results
    results = asyncio.run(main())
    assert "use edit_async()" in results["refused"] and results["commit"] > 0
    assert set(interfaces(m)) == {"w1", "echo"}


def test_persistent_push_survives_a_server_restart(server):
    # Last in this file: it restarts the module's server.
    with ncstore.connect(sock(server), app_name="inventory") as c:
        c.push(INFO % (APT, "SN-P"), lifetime="persistent")
        c.push((INFO % (APT, "SN-C")).replace("<vendor>ACME</vendor>", ""), lifetime="connection")
    bystander = ncstore.connect(sock(server), app_name="bystander")
    server.restart()
    # The server went away under an open connection: it says so, and calls fail with an Error.
    wait_for(lambda: not bystander.connected, "the connection did not notice the server stopped")
    with pytest.raises(ncstore.Error) as e:
        bystander.get("running")
    assert "closed" in e.value.message
    bystander.close()
    with server.connect() as m:
        data = m.get(filter=DEVICE).data_xml
        assert "SN-P" in data and "SN-C" not in data
    with ncstore.connect(sock(server), app_name="inventory") as c:
        c.push_delete("/ncstore-app-test:device/info", lifetime="persistent")
    with server.connect() as m:
        assert "SN-P" not in m.get(filter=DEVICE).data_xml
