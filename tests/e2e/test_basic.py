"""Hello, capabilities and the configuration operations of RFC 6241 on ietf-interfaces, over
real SSH against the real ncstored."""

import pytest
from ncclient.operations.rpc import RPCError
from ncclient.xml_ import to_ele

from ncserver import NC, IF, NS, config, iface, interfaces, all_config, nacm_xml

CAP = "urn:ietf:params:netconf:capability:"


def caps(m):
    return list(m.server_capabilities)


@pytest.mark.parametrize("uri", [
    "urn:ietf:params:netconf:base:1.0",
    "urn:ietf:params:netconf:base:1.1",
    CAP + "writable-running:1.0",
    CAP + "candidate:1.0",
    CAP + "startup:1.0",
    CAP + "validate:1.1",
    CAP + "rollback-on-error:1.0",
    CAP + "xpath:1.0",
])
def test_capability_advertised(m, uri):
    assert uri in caps(m)


def test_with_defaults_capability_names_modes(m):
    wd = [c for c in caps(m) if c.startswith(CAP + "with-defaults:1.0")]
    assert wd, caps(m)
    assert "basic-mode=explicit" in wd[0]
    for mode in ("report-all", "report-all-tagged", "trim"):
        assert mode in wd[0]


def test_monitoring_and_yang_library_capabilities(m):
    c = caps(m)
    assert any(x.startswith("urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring?") and
               "module=ietf-netconf-monitoring" in x for x in c), c
    ylib = [x for x in c if x.startswith(CAP + "yang-library:")]
    assert ylib, c
    assert "revision=" in ylib[0] and ("module-set-id=" in ylib[0] or "content-id=" in ylib[0])


def test_data_model_modules_advertised(m):
    mods = [x for x in caps(m) if "module=ietf-interfaces" in x]
    assert mods and "urn:ietf:params:xml:ns:yang:ietf-interfaces" in mods[0]
    assert "revision=" in mods[0]


def test_session_ids_distinct(server, m, m2):
    assert int(m.session_id) > 0 and int(m2.session_id) > 0
    assert m.session_id != m2.session_id


def test_get_config_empty_running_is_empty_data(m):
    reply = m.get_config(source="running")
    assert reply.ok
    assert reply.data_ele.xpath("if:interfaces/if:interface", namespaces=NS) == []


def test_edit_get_round_trip(m):
    m.edit_config(target="running", config=config(
        iface("eth0", description="uplink to core", enabled=False),
        iface("eth1", type_="softwareLoopback")))
    got = interfaces(m)
    assert got["eth0"] == {"name": "eth0", "type": "ethernetCsmacd",
                           "description": "uplink to core", "enabled": "false"}
    assert got["eth1"]["type"] == "softwareLoopback"
    assert "description" not in got["eth1"]


def test_merge_changes_only_given_leaves(m):
    m.edit_config(target="running", config=config(iface("eth0", description="a", enabled=False)))
    m.edit_config(target="running", config=config(iface("eth0", type_=None, description="b")))
    got = interfaces(m)["eth0"]
    assert got["description"] == "b"
    assert got["enabled"] == "false"


def test_replace_replaces_the_entry(m):
    m.edit_config(target="running", config=config(iface("eth0", description="a", enabled=False)))
    m.edit_config(target="running", config=config(iface("eth0", op="replace", enabled=True)))
    got = interfaces(m)["eth0"]
    assert "description" not in got
    assert got["enabled"] == "true"


def test_create_then_create_again_is_data_exists(m):
    m.edit_config(target="running", config=config(iface("eth0", op="create")))
    before = all_config(m)
    with pytest.raises(RPCError) as e:
        m.edit_config(target="running", config=config(iface("eth0", op="create", description="x")))
    assert e.value.tag == "data-exists"
    assert "interface" in (e.value.path or ""), "error-path should name the entry"
    assert "eth0" in (e.value.path or "")
    assert all_config(m) == before


def test_delete_then_delete_again_is_data_missing(m):
    m.edit_config(target="running", config=config(iface("eth0"), iface("eth1")))
    m.edit_config(target="running", config=config(iface("eth1", type_=None, op="delete")))
    assert set(interfaces(m)) == {"eth0"}
    before = all_config(m)
    with pytest.raises(RPCError) as e:
        m.edit_config(target="running", config=config(iface("eth1", type_=None, op="delete")))
    assert e.value.tag == "data-missing"
    assert all_config(m) == before


def test_delete_leaf(m):
    m.edit_config(target="running", config=config(iface("eth0", description="x")))
    m.edit_config(target="running", config=config(
        '<interface><name>eth0</name><description xmlns:nc="%s" nc:operation="delete"/></interface>'
        % NC))
    assert "description" not in interfaces(m)["eth0"]


def test_remove_is_silent_when_missing(m):
    m.edit_config(target="running", config=config(iface("eth0")))
    m.edit_config(target="running", config=config(iface("nope", type_=None, op="remove")))
    m.edit_config(target="running", config=config(iface("eth0", type_=None, op="remove")))
    assert interfaces(m) == {}


@pytest.mark.parametrize("op", ["delete", "remove", "replace"])
def test_operation_on_top_level_container(m, op):
    m.edit_config(target="running", config=config(iface("eth0"), iface("eth1")))
    m.edit_config(target="running", config=config(attrs=' xmlns:nc="%s" nc:operation="%s"' % (NC, op)))
    assert interfaces(m) == {}


def test_delete_of_missing_container_is_data_missing(m):
    m.edit_config(target="running", config=config(iface("eth0")))
    m.edit_config(target="running", config=config(iface("eth0", type_=None, op="delete")))
    with pytest.raises(RPCError) as e:
        m.edit_config(target="running", config=config(
            '<interface><name>eth0</name><description xmlns:nc="%s" nc:operation="delete"/></interface>' % NC))
    assert e.value.tag == "data-missing"


def test_default_operation_none_changes_nothing_without_operation(m):
    m.edit_config(target="running", config=config(iface("eth0", description="keep")))
    m.edit_config(target="running", default_operation="none",
                  config=config(iface("eth0", type_=None, description="changed")))
    assert interfaces(m)["eth0"]["description"] == "keep"


def test_default_operation_none_with_delete_inside(m):
    m.edit_config(target="running", config=config(iface("eth0", description="x"), iface("eth1")))
    m.edit_config(target="running", default_operation="none",
                  config=config(iface("eth1", type_=None, op="delete")))
    assert set(interfaces(m)) == {"eth0"}
    assert interfaces(m)["eth0"]["description"] == "x"


def test_default_operation_none_on_missing_entry_is_data_missing(m):
    before = all_config(m)
    with pytest.raises(RPCError) as e:
        m.edit_config(target="running", default_operation="none",
                      config=config(iface("ghost", type_=None, description="x")))
    assert e.value.tag == "data-missing"
    assert all_config(m) == before


def test_default_operation_replace_replaces_everything(m):
    m.edit_config(target="running", config=config(iface("eth0"), iface("eth1")))
    m.edit_config(target="running", default_operation="replace", config=config(iface("eth9")))
    assert set(interfaces(m)) == {"eth9"}


def test_test_only_changes_nothing(m):
    m.edit_config(target="running", config=config(iface("eth0")))
    before = all_config(m)
    m.edit_config(target="running", test_option="test-only", config=config(iface("eth5")))
    assert all_config(m) == before


def test_test_only_reports_errors(m):
    with pytest.raises(RPCError) as e:
        m.edit_config(target="running", test_option="test-only",
                      config=config(iface("eth5", type_=None)))  # type is mandatory
    assert e.value.tag in ("data-missing", "missing-element", "operation-failed", "invalid-value")
    assert interfaces(m) == {}


def test_test_then_set(m):
    m.edit_config(target="running", test_option="test-then-set", config=config(iface("eth0")))
    assert set(interfaces(m)) == {"eth0"}


def test_rollback_on_error_keeps_nothing_of_a_failed_edit(m):
    m.edit_config(target="running", config=config(iface("eth0")))
    before = all_config(m)
    with pytest.raises(RPCError) as e:
        m.edit_config(target="running", error_option="rollback-on-error", config=config(
            iface("eth2", op="create"), iface("eth0", op="create")))
    assert e.value.tag == "data-exists"
    assert all_config(m) == before


def test_stop_on_error_accepted(m):
    m.edit_config(target="running", error_option="stop-on-error", config=config(iface("eth3")))
    assert "eth3" in interfaces(m)


def test_missing_mandatory_leaf_refused(m):
    with pytest.raises(RPCError) as e:
        m.edit_config(target="running", config=config(iface("eth0", type_=None)))
    # RFC 7950 names no error-tag for a missing mandatory leaf (§8.3.3); accept the usual ones.
    assert e.value.tag in ("data-missing", "missing-element", "operation-failed", "invalid-value")
    # error-path, when given, is an instance identifier (not a libyang log location).
    if e.value.path:
        assert e.value.path.strip().startswith("/"), e.value.path
    assert interfaces(m) == {}


def test_copy_config_running_to_startup_and_back(m):
    m.edit_config(target="running", config=config(iface("eth0", description="saved")))
    m.copy_config(source="running", target="startup")
    assert interfaces(m, "startup")["eth0"]["description"] == "saved"
    m.edit_config(target="running", config=config(iface("eth0", type_=None, description="changed"),
                                                  iface("eth1")))
    assert interfaces(m, "startup")["eth0"]["description"] == "saved"
    m.copy_config(source="startup", target="running")
    assert interfaces(m) == interfaces(m, "startup")
    assert set(interfaces(m)) == {"eth0"}


def test_copy_config_inline_to_running(m):
    # The content replaces all of running, the NACM rules (data in running, RFC 8341) included:
    # it carries them, or the next write would be denied (test_nacm.py).
    content = config(iface("eth7", description="inline")).replace("</config>", nacm_xml(m) + "</config>")
    m.copy_config(source='<source xmlns="%s">%s</source>' % (NC, content), target="running")
    assert interfaces(m)["eth7"]["description"] == "inline"
    m.edit_config(target="running", config=config(iface("eth8")))


def test_delete_config_startup(m):
    m.edit_config(target="running", config=config(iface("eth0")))
    m.copy_config(source="running", target="startup")
    assert interfaces(m, "startup")
    m.delete_config(target="startup")
    assert interfaces(m, "startup") == {}
    assert set(interfaces(m)) == {"eth0"}


def test_delete_config_running_refused(m):
    m.edit_config(target="running", config=config(iface("eth0")))
    with pytest.raises(RPCError):
        m.delete_config(target="running")
    assert set(interfaces(m)) == {"eth0"}


def test_candidate_edit_commit(m):
    m.edit_config(target="candidate", config=config(iface("cand0", description="c")))
    assert "cand0" in interfaces(m, "candidate")
    assert "cand0" not in interfaces(m, "running")
    m.commit()
    assert interfaces(m, "running")["cand0"]["description"] == "c"


def test_candidate_discard_changes(m):
    m.edit_config(target="running", config=config(iface("eth0")))
    m.discard_changes()
    m.edit_config(target="candidate", config=config(iface("eth0", type_=None, op="delete"),
                                                    iface("cand1")))
    assert set(interfaces(m, "candidate")) == {"cand1"}
    m.discard_changes()
    assert interfaces(m, "candidate") == interfaces(m, "running")
    assert set(interfaces(m, "running")) == {"eth0"}


def test_candidate_follows_running_when_unmodified(m):
    m.discard_changes()
    m.edit_config(target="running", config=config(iface("eth4")))
    assert "eth4" in interfaces(m, "candidate")


def test_validate_candidate_and_inline(m):
    m.edit_config(target="candidate", config=config(iface("eth0")))
    assert m.validate(source="candidate").ok
    assert m.validate(source=to_ele(config(iface("eth1")))).ok
    with pytest.raises(RPCError):
        m.validate(source=to_ele(config(iface("eth1", type_=None))))


def test_get_includes_config(m):
    m.edit_config(target="running", config=config(iface("eth0")))
    reply = m.get(filter=("subtree", '<interfaces xmlns="%s"/>' % IF))
    names = reply.data_ele.xpath("if:interfaces/if:interface/if:name/text()", namespaces=NS)
    assert names == ["eth0"]


def test_close_session_and_kill_session(server, m, m2):
    victim = server.connect()
    sid = victim.session_id
    m.kill_session(sid)
    # The killed session is unusable; the others go on.
    with pytest.raises(Exception):
        victim.get_config(source="running")
    assert m2.get_config(source="running").ok


def test_base_1_0_client(server, m):
    """A client that only speaks base:1.0 (end-of-message framing) is served too."""
    raw = server.raw(version="1.0")
    try:
        assert not raw.chunked
        reply = raw.rpc('<edit-config><target><running/></target><config><interfaces xmlns="%s">%s'
                        '</interfaces></config></edit-config>' % (IF, iface("raw10")), message_id="41")
        assert "<ok/>" in reply and 'message-id="41"' in reply, reply
        reply = raw.rpc('<get-config><source><running/></source><filter type="subtree">'
                        '<interfaces xmlns="%s"/></filter></get-config>' % IF, message_id="42")
        assert "raw10" in reply, reply
    finally:
        raw.close()


def test_reply_carries_rpc_attributes(server, m):
    """RFC 6241 §4.2: <rpc-reply> repeats every attribute of <rpc>."""
    raw = server.raw()
    try:
        raw.send('<rpc xmlns="%s" message-id="77" xmlns:ex="urn:example:attrs" ex:user-id="fred">'
                 '<get-config><source><running/></source></get-config></rpc>' % NC)
        reply = raw.read()
        assert 'message-id="77"' in reply, reply
        assert 'user-id="fred"' in reply, reply
    finally:
        raw.close()
