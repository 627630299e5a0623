"""Bad input: each case must get the rpc-error RFC 6241 / RFC 7950 §8.3.1 prescribe, leave the
datastore as it was, and leave the server serving other sessions."""

import pytest
from ncclient.operations.rpc import RPCError
from ncclient.xml_ import to_ele

from ncserver import NC, IF, IANA, config, iface, all_config, error_tags

# The RFC tags (unknown-element, bad-attribute, malformed-message, missing-attribute, ...) come
# from ncstored's parse of each message (netconfd/rpc/rpcparse.hpp).

# A small limit so that an oversized message is cheap to send.
MAX_MESSAGE = 1024 * 1024
SERVER_ARGS = ["--max-message-size", str(MAX_MESSAGE)]


@pytest.fixture
def seeded(m):
    m.edit_config(target="running", config=config(iface("eth0", description="keep me")))
    return m


def still_serving(server, before):
    """A new session works and sees the datastore unchanged."""
    assert server.alive(), server.log_tail()
    other = server.connect()
    try:
        assert all_config(other) == before
    finally:
        other.close_session()


def edit_error(m, cfg, **kw):
    with pytest.raises(RPCError) as e:
        m.edit_config(target="running", config=cfg, **kw)
    return e.value


# ---- content errors (through ncclient: well-formed NETCONF, bad data)

def test_invalid_value(server, seeded):
    before = all_config(seeded)
    err = edit_error(seeded, config("<interface><name>eth0</name><enabled>maybe</enabled></interface>"))
    assert err.tag == "invalid-value"
    assert "enabled" in (err.path or ""), "error-path must name the leaf: %r" % err.path
    still_serving(server, before)


def test_invalid_identity(server, seeded):
    before = all_config(seeded)
    err = edit_error(seeded, config('<interface><name>eth5</name><type xmlns:ia="%s">ia:noSuchType'
                                    '</type></interface>' % IANA))
    assert err.tag == "invalid-value"
    still_serving(server, before)


def test_unknown_element(server, seeded):
    before = all_config(seeded)
    err = edit_error(seeded, config("<interface><name>eth0</name><bogus>1</bogus></interface>"))
    assert err.tag == "unknown-element"
    assert "bogus" in (err.info or "") or "bogus" in (err.path or "") or "bogus" in (err.message or "")
    still_serving(server, before)


def test_unknown_namespace(server, seeded):
    before = all_config(seeded)
    err = edit_error(seeded, '<config xmlns="%s"><interfaces xmlns="urn:example:nope">'
                             '<interface><name>x</name></interface></interfaces></config>' % NC)
    assert err.tag == "unknown-namespace"
    still_serving(server, before)


def test_missing_key(server, seeded):
    before = all_config(seeded)
    err = edit_error(seeded, config("<interface><description>no name</description></interface>"))
    assert err.tag == "missing-element"
    still_serving(server, before)


def test_create_existing_is_data_exists(server, seeded):
    before = all_config(seeded)
    err = edit_error(seeded, config(iface("eth0", op="create")))
    assert err.tag == "data-exists"
    assert "eth0" in (err.path or ""), err.path
    still_serving(server, before)


def test_delete_missing_is_data_missing(server, seeded):
    before = all_config(seeded)
    err = edit_error(seeded, config(iface("eth9", type_=None, op="delete")))
    assert err.tag == "data-missing"
    assert "eth9" in (err.path or ""), err.path
    still_serving(server, before)


def test_edit_of_config_false_data(server, seeded):
    before = all_config(seeded)
    err = edit_error(seeded, '<config xmlns="%s"><interfaces-state xmlns="%s"><interface>'
                             '<name>eth0</name><oper-status>up</oper-status></interface>'
                             '</interfaces-state></config>' % (NC, IF))
    assert err.tag in ("invalid-value", "bad-element", "unknown-element", "operation-not-supported")
    still_serving(server, before)


def test_bad_operation_attribute(server, seeded):
    before = all_config(seeded)
    err = edit_error(seeded, config(iface("eth0", op="frobnicate")))
    assert err.tag in ("bad-attribute", "invalid-value")
    still_serving(server, before)


def test_unknown_datastore(server, seeded):
    before = all_config(seeded)
    with pytest.raises(RPCError) as e:
        seeded.dispatch(to_ele('<get-config xmlns="%s"><source><nowhere/></source></get-config>' % NC))
    assert e.value.tag in ("unknown-element", "invalid-value", "bad-element")
    still_serving(server, before)


def test_unknown_rpc(server, seeded):
    before = all_config(seeded)
    with pytest.raises(RPCError) as e:
        seeded.dispatch(to_ele('<frobnicate xmlns="urn:example:nope"/>'))
    assert e.value.tag in ("unknown-namespace", "unknown-element", "operation-not-supported")
    still_serving(server, before)


def test_unknown_element_in_rpc(server, seeded):
    before = all_config(seeded)
    with pytest.raises(RPCError) as e:
        seeded.dispatch(to_ele('<get-config xmlns="%s"><source><running/></source><bogus/></get-config>'
                               % NC))
    assert e.value.tag == "unknown-element"
    still_serving(server, before)


def test_missing_source(server, seeded):
    before = all_config(seeded)
    with pytest.raises(RPCError) as e:
        seeded.dispatch(to_ele('<get-config xmlns="%s"/>' % NC))
    assert e.value.tag == "missing-element"
    still_serving(server, before)


# ---- framing and XML errors (raw NETCONF over SSH)

def test_malformed_xml(server, seeded):
    before = all_config(seeded)
    raw = server.raw()
    try:
        raw.send('<rpc xmlns="%s" message-id="7"><get-config><source><running/></source>'
                 '</get-config>' % NC)  # no </rpc>
        reply = raw.read()
        assert "malformed-message" in error_tags(reply), reply
    except EOFError:
        pytest.fail("server closed the session instead of replying malformed-message")
    finally:
        raw.close()
    still_serving(server, before)


def test_malformed_xml_base_1_0(server, seeded):
    """A base:1.0 client gets an rpc-error too (RFC 6241: not malformed-message, which is 1.1),
    or the session is closed; either way the server survives."""
    before = all_config(seeded)
    raw = server.raw(version="1.0")
    try:
        raw.send('<rpc xmlns="%s" message-id="7"><get-config><source><running/>' % NC)
        try:
            reply = raw.read()
            assert error_tags(reply), reply
        except EOFError:
            pass
    finally:
        raw.close()
    still_serving(server, before)


def test_rpc_without_message_id(server, seeded):
    before = all_config(seeded)
    raw = server.raw()
    try:
        reply = raw.rpc("<get-config><source><running/></source></get-config>", message_id=None)
        assert "missing-attribute" in error_tags(reply), reply
        assert "message-id" in reply
        # The session stays usable.
        reply = raw.rpc("<get-config><source><running/></source></get-config>", message_id="8")
        assert "<rpc-reply" in reply and "rpc-error" not in reply, reply
    finally:
        raw.close()
    still_serving(server, before)


def test_oversized_message(server, seeded):
    before = all_config(seeded)
    raw = server.raw()
    padding = "x" * (2 * MAX_MESSAGE)
    closed_or_refused = False
    try:
        raw.send('<rpc xmlns="%s" message-id="9"><edit-config><target><running/></target>'
                 '<config><interfaces xmlns="%s"><interface><name>big</name>'
                 '<description>%s</description></interface></interfaces></config></edit-config></rpc>'
                 % (NC, IF, padding))
        reply = raw.read()
        closed_or_refused = bool(error_tags(reply))
    except (EOFError, OSError):
        closed_or_refused = True
    finally:
        raw.close()
    assert closed_or_refused
    still_serving(server, before)


def test_garbage_instead_of_hello(server, seeded):
    before = all_config(seeded)
    import paramiko
    t = paramiko.Transport(("127.0.0.1", server.port))
    t.connect(username="e2e", password="e2e-Secret-1")
    ch = t.open_session()
    ch.settimeout(10)
    ch.invoke_subsystem("netconf")
    ch.sendall(b"this is not xml at all]]>]]>")
    t.close()
    still_serving(server, before)


def test_wrong_password_refused(server, seeded):
    before = all_config(seeded)
    with pytest.raises(Exception):
        server.connect(password="wrong")
    still_serving(server, before)
