"""Global locks (RFC 6241 §7.5/7.6) between concurrent sessions."""

import re

import pytest
from ncclient.operations.rpc import RPCError

from ncserver import config, iface, interfaces, all_config


def holder_in(err):
    m = re.search(r"<(?:\w+:)?session-id>(\d+)</(?:\w+:)?session-id>", err.info or "")
    return int(m.group(1)) if m else None


@pytest.mark.parametrize("ds", ["running", "candidate", "startup"])
def test_lock_denied_names_the_holder(m, m2, ds):
    m.lock(target=ds)
    try:
        with pytest.raises(RPCError) as e:
            m2.lock(target=ds)
        assert e.value.tag == "lock-denied"
        assert holder_in(e.value) == int(m.session_id), e.value.info
    finally:
        m.unlock(target=ds)
    m2.lock(target=ds)
    m2.unlock(target=ds)


def test_edit_by_other_session_is_in_use(m, m2):
    m.lock(target="running")
    try:
        before = all_config(m)
        with pytest.raises(RPCError) as e:
            m2.edit_config(target="running", config=config(iface("locked0")))
        assert e.value.tag == "in-use"
        assert all_config(m) == before
        # The holder may edit, everybody may read.
        m.edit_config(target="running", config=config(iface("mine0")))
        assert "mine0" in interfaces(m2)
    finally:
        m.unlock(target="running")
    m2.edit_config(target="running", config=config(iface("after0")))
    assert "after0" in interfaces(m)


def test_copy_config_into_locked_datastore_is_in_use(m, m2):
    m.lock(target="startup")
    try:
        with pytest.raises(RPCError) as e:
            m2.copy_config(source="running", target="startup")
        assert e.value.tag == "in-use"
        with pytest.raises(RPCError) as e:
            m2.delete_config(target="startup")
        assert e.value.tag == "in-use"
    finally:
        m.unlock(target="startup")


def test_commit_into_locked_running_is_in_use(m, m2):
    m.lock(target="running")
    try:
        m2.edit_config(target="candidate", config=config(iface("cand-locked")))
        with pytest.raises(RPCError) as e:
            m2.commit()
        assert e.value.tag == "in-use"
        assert "cand-locked" not in interfaces(m)
    finally:
        m.unlock(target="running")
        m2.discard_changes()


def test_unlock_by_other_session_refused(m, m2):
    m.lock(target="running")
    try:
        with pytest.raises(RPCError) as e:
            m2.unlock(target="running")
        assert e.value.tag == "operation-failed"
    finally:
        m.unlock(target="running")


def test_unlock_without_lock_refused(m):
    with pytest.raises(RPCError) as e:
        m.unlock(target="running")
    assert e.value.tag == "operation-failed"


def test_lock_twice_by_same_session_refused(m):
    m.lock(target="running")
    try:
        with pytest.raises(RPCError) as e:
            m.lock(target="running")
        assert e.value.tag == "lock-denied"
    finally:
        m.unlock(target="running")


def test_locks_released_when_session_closes(server, m2):
    holder = server.connect()
    holder.lock(target="running")
    holder.lock(target="candidate")
    with pytest.raises(RPCError):
        m2.lock(target="running")
    holder.close_session()
    m2.lock(target="running")
    m2.lock(target="candidate")
    m2.unlock(target="candidate")
    m2.unlock(target="running")


def test_locks_released_when_session_is_dropped(server, m2):
    holder = server.connect()
    holder.lock(target="running")
    # No <close-session>: the transport just goes away.
    holder._session.close()
    import time
    deadline = time.time() + 10
    while True:
        try:
            m2.lock(target="running")
            break
        except RPCError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    m2.unlock(target="running")


def test_lock_candidate_with_uncommitted_changes_refused(m, m2):
    m.edit_config(target="candidate", config=config(iface("dirty0")))
    try:
        with pytest.raises(RPCError) as e:
            m2.lock(target="candidate")
        assert e.value.tag == "lock-denied"
    finally:
        m.discard_changes()
