""":confirmed-commit:1.1 (RFC 6241 8.4) over SSH with ncclient: a confirmed commit that nobody
confirms is undone (timeout, cancel-commit, the issuing session's end, a restart), a confirming
commit keeps it, persist/persist-id let another session confirm it, and every step is an RFC 6470
netconf-confirmed-commit notification."""

import re
import time

import pytest
from ncclient.operations.rpc import RPCError

from ncserver import Server, all_config, config, iface, interfaces

CAP = "urn:ietf:params:netconf:capability:confirmed-commit:1.1"


def wait_for(predicate, timeout=15.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("%s not reached within %ss" % (what, timeout))


def rpc_error_tag(excinfo):
    return excinfo.value.tag


def persistent_commit_elsewhere(server, name, token):
    """Another session creates interface `name` by a confirmed commit with persist `token`, then
    ends: the commit stays pending."""
    other = server.connect()
    try:
        other.edit_config(target="candidate", config=config(iface(name)))
        other.commit(confirmed=True, timeout="600", persist=token)
    finally:
        other.close_session()


def prepare(m):
    """running holds cc0; returns running's whole content (the rollback point)."""
    m.edit_config(target="running", config=config(iface("cc0", description="before")))
    return all_config(m)


def test_capability_announced(m):
    assert CAP in set(m.server_capabilities)


def test_timeout_restores_running_exactly(m):
    before = prepare(m)
    m.edit_config(target="candidate", config=config(
        iface("cc0", type_=None, description="changed"), iface("cc1")))
    m.commit(confirmed=True, timeout="2")
    assert interfaces(m)["cc0"]["description"] == "changed"
    assert "cc1" in interfaces(m)
    wait_for(lambda: all_config(m) == before, what="running back to its content before the commit")
    assert all_config(m, "candidate") == before


def test_confirming_commit_keeps_the_change(m):
    prepare(m)
    m.edit_config(target="candidate", config=config(iface("cc1")))
    m.commit(confirmed=True, timeout="2")
    m.commit()  # the confirming commit
    kept = all_config(m)
    time.sleep(3)
    assert all_config(m) == kept
    assert "cc1" in interfaces(m)
    with pytest.raises(RPCError) as e:
        m.cancel_commit()  # nothing pending any more
    assert rpc_error_tag(e) == "operation-failed"


def test_session_end_without_persist_rolls_back(server, m):
    before = prepare(m)
    other = server.connect()
    other.edit_config(target="candidate", config=config(iface("cc2")))
    other.commit(confirmed=True, timeout="600")
    assert "cc2" in interfaces(m)
    other.close_session()
    wait_for(lambda: all_config(m) == before, what="rollback at the end of the issuing session")


def test_persist_survives_the_session_and_persist_id_confirms_from_another(server, m):
    prepare(m)
    persistent_commit_elsewhere(server, "cc3", "token-1")
    time.sleep(1)
    assert "cc3" in interfaces(m), "a persistent confirmed commit outlives its session"
    with pytest.raises(RPCError) as e:
        m.commit()  # no persist-id: not this session's to confirm
    assert rpc_error_tag(e) == "in-use"
    with pytest.raises(RPCError) as e:
        m.commit(persist_id="token-2")
    assert rpc_error_tag(e) == "invalid-value"
    assert "cc3" in interfaces(m)
    m.commit(persist_id="token-1")  # confirms
    m.close_session()
    m2 = server.connect()
    try:
        time.sleep(1)
        assert "cc3" in interfaces(m2)
        with pytest.raises(RPCError):
            m2.cancel_commit(persist_id="token-1")  # confirmed: nothing to cancel
    finally:
        m2.close_session()


def test_follow_up_by_persist_id_stays_persistent(server, m):
    before = prepare(m)
    persistent_commit_elsewhere(server, "cc10", "t10")
    second = server.connect()
    second.commit(confirmed=True, timeout="600", persist_id="t10")  # follow-up from elsewhere
    second.close_session()
    time.sleep(1)
    assert "cc10" in interfaces(m), "the follow-up kept the token: its session's end undoes nothing"
    m.cancel_commit(persist_id="t10")
    assert all_config(m) == before


def test_cancel_commit_with_persist_id_from_another_session(server, m):
    before = prepare(m)
    persistent_commit_elsewhere(server, "cc4", "p4")
    with pytest.raises(RPCError) as e:
        m.cancel_commit(persist_id="wrong")
    assert rpc_error_tag(e) == "invalid-value"
    assert "cc4" in interfaces(m)
    m.cancel_commit(persist_id="p4")
    assert all_config(m) == before


def test_other_session_may_not_commit_or_cancel_a_pending_one(server, m):
    before = prepare(m)
    other = server.connect()
    try:
        m.edit_config(target="candidate", config=config(iface("cc5")))
        m.commit(confirmed=True, timeout="600")
        with pytest.raises(RPCError) as e:
            other.commit()
        assert rpc_error_tag(e) == "in-use"
        with pytest.raises(RPCError) as e:
            other.cancel_commit()
        assert rpc_error_tag(e) == "in-use"
        assert "cc5" in interfaces(m)
        m.cancel_commit()
        assert all_config(m) == before
    finally:
        other.close_session()


def test_follow_up_confirmed_commit_extends_and_keeps_the_first_rollback_point(m):
    before = prepare(m)
    m.edit_config(target="candidate", config=config(iface("cc6")))
    m.commit(confirmed=True, timeout="2")
    m.edit_config(target="candidate", config=config(iface("cc7")))
    m.commit(confirmed=True, timeout="600")  # follow-up: new deadline, more changes
    time.sleep(3)
    assert {"cc6", "cc7"} <= set(interfaces(m)), "the follow-up moved the deadline"
    m.cancel_commit()
    assert all_config(m) == before, "a cancel restores the state before the first confirmed commit"


def test_notifications_of_each_step(server, m):
    prepare(m)
    sub = server.connect()
    try:
        sub.create_subscription()
        m.edit_config(target="candidate", config=config(iface("cc8")))
        m.commit(confirmed=True, timeout="600")
        m.commit(confirmed=True, timeout="300")
        m.commit()
        m.edit_config(target="candidate", config=config(iface("cc8", op="delete", type_=None)))
        m.commit(confirmed=True, timeout="1")
        events = []
        deadline = time.time() + 15
        while time.time() < deadline and "timeout" not in events:
            n = sub.take_notification(block=True, timeout=1)
            if n is None:
                continue
            xml = n.notification_xml
            if "netconf-confirmed-commit" in xml:
                events.append(re.search(r"<confirm-event>(\w+)</confirm-event>", xml).group(1))
                if events[-1] == "extend":
                    assert "<timeout>300</timeout>" in xml
                    assert "<session-id>%s</session-id>" % m.session_id in xml
        assert events == ["start", "extend", "complete", "start", "timeout"], events
    finally:
        sub.close_session()


def test_kill_9_while_pending_restores_at_restart():
    s = Server(name="confirmed_kill")
    s.start()
    try:
        m = s.connect()
        m.edit_config(target="running", config=config(iface("k0", description="kept")))
        before = all_config(m)
        m.edit_config(target="candidate", config=config(iface("k0", type_=None, description="trial"),
                                                       iface("k1")))
        m.commit(confirmed=True, timeout="600", persist="survives-sessions")
        assert interfaces(m)["k0"]["description"] == "trial"
        s.kill()
        s.start()
        m = s.connect()
        try:
            assert all_config(m) == before, "a confirmed commit pending at a restart is undone"
            with pytest.raises(RPCError):
                m.commit(persist_id="survives-sessions")  # nothing pending any more
        finally:
            m.close_session()

        # An acknowledged confirming commit survives kill -9.
        m = s.connect()
        m.edit_config(target="candidate", config=config(iface("k2")))
        m.commit(confirmed=True, timeout="600", persist="p")
        m.commit(persist_id="p")
        confirmed = all_config(m)
        s.kill()
        s.start()
        m = s.connect()
        try:
            assert all_config(m) == confirmed
        finally:
            m.close_session()
    finally:
        s.stop()
        s.cleanup()


def test_ncstore_client_confirmed_commit_and_cancel(server, m, tmp_path):
    """The project's libnetconf2 client: commit --confirmed --persist, then cancel-commit from a
    second invocation (another session) with the token."""
    import ncserver

    def run(*args):
        return ncserver.run_client(server, tmp_path / "schemas", *args)

    before = prepare(m)
    m.edit_config(target="candidate", config=config(iface("cl0")))
    run("commit", "--confirmed", "--confirm-timeout", "600", "--persist", "cli-token")
    assert "cl0" in interfaces(m), "confirmed commit applied, and kept after the client's session ended"
    run("cancel-commit", "--persist-id", "cli-token")
    assert all_config(m) == before
    m.edit_config(target="candidate", config=config(iface("cl1")))
    run("commit", "--confirmed", "--persist", "t2")
    run("commit", "--persist-id", "t2")  # confirming
    with pytest.raises(RPCError):
        m.cancel_commit(persist_id="t2")
    assert "cl1" in interfaces(m)
