"""Notifications (RFC 5277 NETCONF stream, RFC 6470 events): what a subscriber receives from the
real server over SSH, with ncclient's create_subscription and raw sessions."""

import datetime
import re
import threading
import time

import pytest
from ncclient.operations.rpc import RPCError
from ncclient.xml_ import to_ele

from ncserver import Server, commit_in_parallel, config, iface, interfaces, take_all, take_until

NOTIF = "urn:ietf:params:xml:ns:netconf:notification:1.0"
NCN = "urn:ietf:params:xml:ns:yang:ietf-netconf-notifications"
NM = "urn:ietf:params:xml:ns:netmod:notification"
LONG_AGO = "2000-01-01T00:00:00Z"

# A small subscriber queue so that a subscriber that reads nothing is found out quickly.
SERVER_ARGS = ["--notification-queue-bytes", "65536"]


def edits_of(xml):
    """[(target, operation)] of a netconf-config-change notification, prefixes dropped."""
    out = []
    for target, op in re.findall(r"<target[^>]*>([^<]*)</target><operation>([^<]*)</operation>", xml):
        target = target.replace("&apos;", "'")
        out.append((re.sub(r"[\w.-]+:", "", target), op))
    return out


def config_changes(texts):
    return [t for t in texts if "<netconf-config-change" in t]


def test_capabilities_and_stream(server, m):
    caps = set(m.server_capabilities)
    assert "urn:ietf:params:netconf:capability:notification:1.0" in caps
    assert "urn:ietf:params:netconf:capability:interleave:1.0" in caps
    streams = m.get(filter=("subtree", '<netconf xmlns="%s"/>' % NM)).data_xml
    assert "<name>NETCONF</name>" in streams
    assert "<replaySupport>true</replaySupport>" in streams
    assert "<replayLogCreationTime>" in streams


def test_config_changes_of_another_session(server, m):
    m.edit_config(target="running", config=config(iface("n0")))  # the container exists
    sub = server.connect()
    try:
        sub.create_subscription()
        m.edit_config(target="running", config=config(iface("n1"), iface("n2")))
        m.edit_config(target="running", config=config(iface("n1", description="up")))
        m.edit_config(target="running", config=config(iface("n2", op="delete", type_=None)))
        got = config_changes(take_until(sub, r"interface\[[\w-]+:name='n2'\]</target><operation>delete"))
        changes = [edits_of(x) for x in got]
        assert changes[-3:] == [
            [("/interfaces/interface[name='n1']", "create"), ("/interfaces/interface[name='n2']", "create")],
            [("/interfaces/interface[name='n1']/description", "create")],
            [("/interfaces/interface[name='n2']", "delete")],
        ], got
        assert "<username>e2e</username>" in got[-1]
        assert "<source-host>127.0.0.1</source-host>" in got[-1]
        assert "<datastore>running</datastore>" in got[-1]
        sid = m.session_id
        assert "<session-id>%s</session-id>" % sid in got[-1]
    finally:
        sub.close_session()


def test_commit_of_the_candidate_is_one_change_of_running(server, m):
    m.edit_config(target="running", config=config(iface("c0")))
    sub = server.connect()
    try:
        sub.create_subscription()
        m.edit_config(target="candidate", config=config(iface("c1"), iface("c2")))
        time.sleep(0.3)
        assert not config_changes(take_all(sub, timeout=0.5)), "a candidate edit changed nothing durable"
        m.commit()
        got = config_changes(take_until(sub, r"netconf-config-change"))
        assert sorted(edits_of(got[-1])) == [("/interfaces/interface[name='c1']", "create"),
                                             ("/interfaces/interface[name='c2']", "create")], got
    finally:
        sub.close_session()


def test_session_start_and_end_with_killed_by(server, m):
    sub = server.connect()
    try:
        sub.create_subscription()
        victim = server.connect()
        vid = victim.session_id
        m.kill_session(session_id=vid)
        got = take_until(sub, r"netconf-session-end.*<session-id>%s</session-id>" % vid)
        start = [x for x in got if "netconf-session-start" in x and "<session-id>%s<" % vid in x]
        end = [x for x in got if "netconf-session-end" in x and "<session-id>%s<" % vid in x]
        assert start and end, got
        assert "<killed-by>%s</killed-by>" % m.session_id in end[0]
        assert "<termination-reason>killed</termination-reason>" in end[0]
    finally:
        sub.close_session()


def test_rpcs_are_served_while_subscribed(server, m):
    """RFC 5277 :interleave: the subscribed session keeps sending RPCs."""
    m.edit_config(target="running", config=config(iface("i0")))
    sub = server.connect()
    try:
        sub.create_subscription()
        sub.edit_config(target="running", config=config(iface("own")))
        assert "own" in interfaces(sub)
        got = config_changes(take_until(sub, r"name='own'"))
        assert edits_of(got[-1]) == [("/interfaces/interface[name='own']", "create")]
    finally:
        sub.close_session()


def test_filters(server, m):
    subtree = server.connect()
    xpath = server.connect()
    try:
        subtree.create_subscription(filter=("subtree", '<netconf-session-start xmlns="%s"/>' % NCN))
        xpath.create_subscription(filter=("xpath", ({"ncn": NCN}, "/ncn:netconf-config-change")))
        m.edit_config(target="running", config=config(iface("f1")))
        other = server.connect()
        other.close_session()
        starts = take_all(subtree, timeout=1.5)
        assert starts and all("netconf-session-start" in x for x in starts), starts
        changes = take_all(xpath, timeout=1.5)
        assert changes and all("netconf-config-change" in x for x in changes), changes
    finally:
        subtree.close_session()
        xpath.close_session()


def test_bad_subscriptions(server, m):
    """RFC 5277 2.1.1's errors (sent raw: ncclient refuses some of these requests itself)."""
    cases = [
        ("<stream>nosuch</stream>", "invalid-value"),
        ("<startTime>2999-01-01T00:00:00Z</startTime>", "bad-element"),
        ("<startTime>2020-01-01T00:00:00Z</startTime><stopTime>2019-01-01T00:00:00Z</stopTime>", "bad-element"),
        ("<stopTime>2020-01-01T00:00:00Z</stopTime>", "missing-element"),
        ('<filter type="xpath" select="/*["/>', "invalid-value"),
        ("<startTime>yesterday</startTime>", "invalid-value"),
    ]
    for body, tag in cases:
        with pytest.raises(RPCError) as e:
            m.dispatch(to_ele('<create-subscription xmlns="%s">%s</create-subscription>' % (NOTIF, body)))
        assert e.value.tag == tag, (body, e.value)
    # Refused subscriptions leave the session free to subscribe once, and only once.
    m.create_subscription()
    with pytest.raises(RPCError) as e:
        m.create_subscription()
    assert e.value.tag == "in-use"


def test_replay_after_restart_and_stop_time(server, m):
    m.edit_config(target="running", config=config(iface("first")))  # the container exists
    m.edit_config(target="running", config=config(iface("before-restart")))
    server.restart()
    m2 = server.connect()
    try:
        m2.edit_config(target="running", config=config(iface("after-restart")))
        time.sleep(0.2)
        stop = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        time.sleep(0.2)
        m2.edit_config(target="running", config=config(iface("after-stop")))
        # startTime and stopTime in the past: the replay, replayComplete, notificationComplete.
        m2.create_subscription(start_time=LONG_AGO, stop_time=stop)
        got = take_until(m2, r"notificationComplete")
        text = "".join(got)
        assert "before-restart" in text and "after-restart" in text
        assert "after-stop" not in text
        assert [i for i, x in enumerate(got) if "replayComplete" in x] == [len(got) - 2]
        # The subscription is over; the session goes on.
        assert "after-stop" in interfaces(m2)
    finally:
        m2.close_session()


def test_replay_then_live_without_gap_or_duplicate(server, m):
    m.edit_config(target="running", config=config(iface("r0")))  # the container exists
    sub = server.connect()
    try:
        m.edit_config(target="running", config=config(iface("r1")))
        sub.create_subscription(start_time=LONG_AGO)
        m.edit_config(target="running", config=config(iface("r2")))
        got = take_until(sub, r"name='r2'")
        assert sum("replayComplete" in x for x in got) == 1
        r1 = [x for x in got if "name='r1'" in x.replace("&apos;", "'")]
        r2 = [x for x in got if "name='r2'" in x.replace("&apos;", "'")]
        assert len(r1) == 1 and len(r2) == 1, got
        assert got.index(r1[0]) < got.index([x for x in got if "replayComplete" in x][0])
    finally:
        sub.close_session()


def test_kill9_replay_holds_exactly_the_acknowledged_changes():
    """The replay log is written in the same transaction as the change: after kill -9, every
    acknowledged change is in it, and everything in it is in the datastore."""
    s = Server(name="notif-kill9")
    try:
        s.start()
        first = s.connect()
        first.edit_config(target="running", config=config(iface("k-first")))  # the container exists
        first.close_session()
        acked = []
        stop = threading.Event()

        def edit_loop(prefix):
            m = s.connect()
            i = 0
            try:
                while not stop.is_set():
                    name = "%s%d" % (prefix, i)
                    m.edit_config(target="running", config=config(iface(name)))
                    acked.append(name)
                    i += 1
            except Exception:
                pass  # the server went away

        threads = [threading.Thread(target=edit_loop, args=("k%d-" % t,)) for t in range(3)]
        for t in threads:
            t.start()
        time.sleep(2.0)
        s.kill()
        stop.set()
        for t in threads:
            t.join(timeout=30)
        s.start()
        m = s.connect()
        stored = set(interfaces(m))
        m.create_subscription(start_time=LONG_AGO)
        logged = set()
        for x in take_until(m, r"replayComplete", timeout=30):
            logged.update(re.findall(r"name=(?:&apos;|')([\w-]+)", x))
        assert acked, "no edit was acknowledged before the kill"
        assert set(acked) <= logged, sorted(set(acked) - logged)[:10]
        assert logged <= stored, sorted(logged - stored)[:10]
        m.close_session()
    finally:
        s.stop() if s.alive() else None
        s.cleanup()


def test_a_subscriber_that_reads_nothing_is_cut_and_others_go_on(server, m):
    stalled = server.raw(window_size=32768)
    stalled.rpc('<create-subscription xmlns="%s"/>' % NOTIF)
    # It reads nothing from now on. Ten sessions commit meanwhile.
    commit_in_parallel(server, "s")
    # The stalled subscriber was cut: its connection ends once read.
    deadline = time.time() + 30
    while "does not keep up" not in server.log_tail(200000) and time.time() < deadline:
        time.sleep(0.2)
    assert "does not keep up" in server.log_tail(200000)
    with pytest.raises((EOFError, OSError)):
        while True:
            stalled.read()
    stalled.close()
    assert server.alive()


@pytest.mark.parametrize("mode", [[], ["--yang-push"]])
def test_follow_devices_example_mirrors_the_inventory(server, m, tmp_path, mode):
    """clients/python/follow_devices.py, the README's example: one file per device, kept up to date,
    from the NETCONF stream (replay, then what each event names) or with YANG-Push on change."""
    import os
    import subprocess
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    example = open(os.path.join(repo, "yang", "openroadm", "examples", "device-create.xml")).read()
    example = re.sub(r"<!--.*?-->", "", example, flags=re.S)
    delete = re.sub(r"<!--.*?-->", "", open(os.path.join(repo, "yang", "openroadm", "examples",
                                                         "device-delete.xml")).read(), flags=re.S)

    def device(op_text, device_id):
        return op_text.replace("C201-7-1A-9001", device_id + ("-yp" if mode else ""))

    m.edit_config(target="running", config=device(example, "dev-a"))
    script = [sys.executable, os.path.join(repo, "clients", "python", "follow_devices.py"), "--port",
              str(server.port), "--user", "e2e", "--password", "e2e-Secret-1", "--dir", str(tmp_path)] + mode
    follower = subprocess.Popen(script, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # The replay or the first push-update (which may resynchronize everything) comes before the
        # live changes.
        while follower.stdout.readline().strip() not in ("replay complete", "sync complete"):
            assert follower.poll() is None, follower.stdout.read()
        a_file, b_file = ("dev-a-yp.xml", "dev-b-yp.xml") if mode else ("dev-a.xml", "dev-b.xml")
        assert "<device-id>%s</device-id>" % a_file[:-4] in (tmp_path / a_file).read_text()
        m.edit_config(target="running", config=device(example, "dev-b"))
        m.edit_config(target="running", config=device(delete, "dev-a"))
        deadline = time.time() + 30
        while time.time() < deadline and sorted(os.listdir(tmp_path)) != [b_file]:
            time.sleep(0.2)
        assert sorted(os.listdir(tmp_path)) == [b_file]
        assert "<device-id>%s</device-id>" % b_file[:-4] in (tmp_path / b_file).read_text()
    finally:
        follower.kill()
        follower.wait()
        m.edit_config(target="running", config=device(delete, "dev-b"))  # the next run starts without it
