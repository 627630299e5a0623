"""Subtree and XPath filters, and with-defaults modes, on get-config and get."""

import pytest
from ncclient.operations.rpc import RPCError
from ncclient.xml_ import to_ele

from ncserver import NC, IF, IANA, WD, NS, config, iface


@pytest.fixture
def three(m):
    m.edit_config(target="running", config=config(
        iface("eth0", description="uplink"),
        iface("eth1", type_="softwareLoopback", enabled=False),
        iface("lo", type_="softwareLoopback")))
    return m


def names(reply):
    return reply.data_ele.xpath("if:interfaces/if:interface/if:name/text()", namespaces=NS)


def leaf(reply, name, leafname):
    return reply.data_ele.xpath("if:interfaces/if:interface[if:name='%s']/if:%s/text()"
                                % (name, leafname), namespaces=NS)


def sub(body):
    return ("subtree", body)


def test_subtree_key_match(three):
    r = three.get_config(source="running", filter=sub(
        '<interfaces xmlns="%s"><interface><name>eth1</name></interface></interfaces>' % IF))
    assert names(r) == ["eth1"]
    assert leaf(r, "eth1", "enabled") == ["false"]


def test_subtree_several_keys(three):
    r = three.get_config(source="running", filter=sub(
        '<interfaces xmlns="%s"><interface><name>eth0</name></interface>'
        '<interface><name>lo</name></interface></interfaces>' % IF))
    assert sorted(names(r)) == ["eth0", "lo"]


def test_subtree_selection_next_to_key(three):
    r = three.get_config(source="running", filter=sub(
        '<interfaces xmlns="%s"><interface><name>eth0</name><description/></interface>'
        '</interfaces>' % IF))
    assert leaf(r, "eth0", "description") == ["uplink"]
    assert leaf(r, "eth0", "type") == []


def test_subtree_non_key_content_match(three):
    r = three.get_config(source="running", filter=sub(
        '<interfaces xmlns="%s" xmlns:ia="%s"><interface><type>ia:softwareLoopback</type>'
        '<name/></interface></interfaces>' % (IF, IANA)))
    assert sorted(names(r)) == ["eth1", "lo"]


def test_subtree_missing_key_is_empty(three):
    r = three.get_config(source="running", filter=sub(
        '<interfaces xmlns="%s"><interface><name>nope</name></interface></interfaces>' % IF))
    assert names(r) == []
    assert len(r.data_ele) == 0


def test_subtree_other_namespace_is_empty(three):
    r = three.get_config(source="running", filter=sub('<interfaces xmlns="urn:example:x"/>'))
    assert len(r.data_ele) == 0


def test_subtree_without_namespace(three):
    """ncclient users often leave xmlns out; the element then matches by name."""
    r = three.get_config(source="running", filter=sub(
        '<interfaces><interface><name>lo</name></interface></interfaces>'))
    assert names(r) == ["lo"]


def test_empty_subtree_filter_selects_nothing(three):
    r = three.get_config(source="running", filter='<filter xmlns="%s" type="subtree"/>' % NC)
    assert len(r.data_ele) == 0


def test_subtree_on_get(three):
    r = three.get(filter=sub('<interfaces xmlns="%s"><interface><name>eth0</name></interface>'
                             '</interfaces>' % IF))
    assert names(r) == ["eth0"]


def test_subtree_on_candidate(three):
    three.discard_changes()
    r = three.get_config(source="candidate", filter=sub(
        '<interfaces xmlns="%s"><interface><name>eth0</name></interface></interfaces>' % IF))
    assert names(r) == ["eth0"]


def test_xpath_with_prefix(three):
    r = three.get_config(source="running", filter=("xpath", ({"if": IF}, "/if:interfaces/if:interface[if:name='eth1']/if:enabled")))
    assert names(r) == ["eth1"]
    assert leaf(r, "eth1", "enabled") == ["false"]
    assert leaf(r, "eth1", "type") == []


def test_xpath_without_prefix(three):
    r = three.get_config(source="running", filter=("xpath", "/interfaces/interface[name='lo']"))
    assert names(r) == ["lo"]


def test_xpath_predicate_on_non_key(three):
    r = three.get_config(source="running", filter=("xpath", ({"if": IF}, "/if:interfaces/if:interface[if:enabled='false']")))
    assert names(r) == ["eth1"]
    assert leaf(r, "eth1", "type") == ["ianaift:softwareLoopback"] or \
        leaf(r, "eth1", "type")[0].endswith(":softwareLoopback")


def test_xpath_union(three):
    r = three.get_config(source="running", filter=("xpath", ({"if": IF}, "/if:interfaces/if:interface[if:name='eth0'] | "
                  "/if:interfaces/if:interface[if:name='lo']/if:type")))
    assert sorted(names(r)) == ["eth0", "lo"]
    assert leaf(r, "eth0", "description") == ["uplink"]


def test_xpath_on_get_monitoring(three):
    r = three.get(filter=("xpath", ({"mon": NS["mon"]}, "/mon:netconf-state/mon:sessions")))
    ids = r.data_ele.xpath("mon:netconf-state/mon:sessions/mon:session/mon:session-id/text()",
                           namespaces=NS)
    assert str(three.session_id) in ids


def test_invalid_xpath_is_an_error(three):
    with pytest.raises(RPCError) as e:
        three.get_config(source="running", filter=("xpath", "/interfaces/interface[name="))
    assert e.value.tag in ("invalid-value", "operation-failed")


# ---- with-defaults (RFC 6243) on ietf-interfaces' `enabled` (default true)

@pytest.fixture
def wd(m):
    # eth0 leaves enabled to its default, eth1 sets it explicitly to the default value.
    m.edit_config(target="running", config=config(iface("eth0"), iface("eth1", enabled=True)))
    return m


def enabled_of(reply, name):
    return reply.data_ele.xpath("if:interfaces/if:interface[if:name='%s']/if:enabled" % name,
                                namespaces=NS)


def test_with_defaults_explicit(wd):
    r = wd.get_config(source="running", filter=sub('<interfaces xmlns="%s"/>' % IF),
                      with_defaults="explicit")
    assert enabled_of(r, "eth0") == []
    assert [e.text for e in enabled_of(r, "eth1")] == ["true"]


def test_with_defaults_basic_mode_is_explicit(wd):
    r = wd.get_config(source="running", filter=sub('<interfaces xmlns="%s"/>' % IF))
    assert enabled_of(r, "eth0") == []
    assert [e.text for e in enabled_of(r, "eth1")] == ["true"]


def test_with_defaults_report_all(wd):
    r = wd.get_config(source="running", filter=sub('<interfaces xmlns="%s"/>' % IF),
                      with_defaults="report-all")
    assert [e.text for e in enabled_of(r, "eth0")] == ["true"]
    assert [e.text for e in enabled_of(r, "eth1")] == ["true"]


def test_with_defaults_report_all_tagged(wd):
    r = wd.get_config(source="running", filter=sub('<interfaces xmlns="%s"/>' % IF),
                      with_defaults="report-all-tagged")
    e0 = enabled_of(r, "eth0")
    assert [e.text for e in e0] == ["true"]
    assert e0[0].get("{%s}default" % WD) == "true"
    e1 = enabled_of(r, "eth1")
    assert e1[0].get("{%s}default" % WD) in (None, "false", "true")


def test_with_defaults_trim(wd):
    r = wd.get_config(source="running", filter=sub('<interfaces xmlns="%s"/>' % IF),
                      with_defaults="trim")
    assert enabled_of(r, "eth0") == []
    assert enabled_of(r, "eth1") == []


def test_with_defaults_on_get_and_xpath(wd):
    r = wd.get(filter=("xpath", ({"if": IF}, "/if:interfaces/if:interface[if:name='eth0']")),
               with_defaults="report-all")
    assert [e.text for e in enabled_of(r, "eth0")] == ["true"]


def test_with_defaults_bad_mode(wd):
    with pytest.raises(RPCError) as e:
        wd.dispatch(to_ele(
            '<get-config xmlns="%s"><source><running/></source>'
            '<with-defaults xmlns="%s">everything</with-defaults></get-config>' % (NC, WD)))
    assert e.value.tag in ("invalid-value", "bad-element")


# ---- many keys in one filter (the shape of benchmarks B5a/B6; correctness only here)

def test_filter_naming_3000_keys(m):
    import time
    n = 3000
    m.edit_config(target="running", config=config(
        *[iface("dev%04d" % i, description="d%d" % i) for i in range(n)]))
    body = "".join("<interface><name>dev%04d</name></interface>" % i for i in reversed(range(n)))
    t0 = time.monotonic()
    r = m.get_config(source="running", filter=sub('<interfaces xmlns="%s">%s</interfaces>' % (IF, body)))
    t1 = time.monotonic()
    got = names(r)
    assert len(got) == n
    assert got[0] == "dev0000" and got[-1] == "dev%04d" % (n - 1)
    one = m.get_config(source="running", filter=sub(
        '<interfaces xmlns="%s"><interface><name>dev1234</name></interface></interfaces>' % IF))
    t2 = time.monotonic()
    assert names(one) == ["dev1234"]
    assert leaf(one, "dev1234", "description") == ["d1234"]
    print("3000-key filter: %.3f s, 1-key filter: %.4f s (client side, ncclient)" % (t1 - t0, t2 - t1))


def test_subtree_on_state_data_with_partial_key(m):
    r = m.get(filter=sub('<netconf-state xmlns="%s"><schemas><schema><identifier>ietf-interfaces'
                         '</identifier><format>yang</format></schema></schemas></netconf-state>'
                         % NS["mon"]))
    ids = r.data_ele.xpath("mon:netconf-state/mon:schemas/mon:schema/mon:identifier/text()",
                           namespaces=NS)
    assert ids == ["ietf-interfaces"]
    assert r.data_ele.xpath("mon:netconf-state/mon:schemas/mon:schema/mon:namespace/text()",
                            namespaces=NS) == [IF]


def test_several_top_level_filter_elements_are_united(three):
    r = three.get(filter='<filter xmlns="%s" type="subtree"><interfaces xmlns="%s"><interface>'
                         '<name>lo</name></interface></interfaces><netconf-state xmlns="%s">'
                         '<datastores/></netconf-state></filter>' % (NC, IF, NS["mon"]))
    assert names(r) == ["lo"]
    assert r.data_ele.xpath("mon:netconf-state/mon:datastores/mon:datastore", namespaces=NS)
    assert not r.data_ele.xpath("mon:netconf-state/mon:schemas", namespaces=NS)
