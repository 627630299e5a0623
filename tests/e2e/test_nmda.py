"""NMDA (RFC 8342, RFC 8526): get-data and edit-data on every datastore of the real server, with
ncclient's raw RPCs, and a libyang-2 client (ncstore-client) that connects without an error."""

import re

import pytest
from ncclient.operations.rpc import RPCError
from ncclient.xml_ import to_ele

from ncserver import IF, NC, PASSWORD, USER, config, iface, interfaces

NMDA = "urn:ietf:params:xml:ns:yang:ietf-netconf-nmda"
DS = "urn:ietf:params:xml:ns:yang:ietf-datastores"
OR = "urn:ietf:params:xml:ns:yang:ietf-origin"
NCM = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"


def get_data(m, datastore, body=""):
    """The text of get-data's <data> (the reply's output) for ds:`datastore`."""
    reply = m.dispatch(to_ele('<get-data xmlns="%s" xmlns:ds="%s" xmlns:or="%s"><datastore>ds:%s</datastore>%s'
                              "</get-data>" % (NMDA, DS, OR, datastore, body)))
    return reply.xml


def edit_data(m, datastore, content, default_operation=None, raw=False):
    """edit-data of `content` (interface entries, or with `raw` the whole <config> content)."""
    op = "<default-operation>%s</default-operation>" % default_operation if default_operation else ""
    body = content if raw else '<interfaces xmlns="%s" xmlns:nc="%s">%s</interfaces>' % (IF, NC, content)
    return m.dispatch(to_ele('<edit-data xmlns="%s" xmlns:ds="%s"><datastore>ds:%s</datastore>%s'
                             "<config>%s</config></edit-data>" % (NMDA, DS, datastore, op, body)))


def entries(m, datastore):
    """{name: description or None} of the interfaces get-data reads from `datastore`."""
    from lxml import etree
    data = etree.fromstring(get_data(m, datastore, '<subtree-filter><interfaces xmlns="%s"/></subtree-filter>'
                                     % IF).encode())
    return {e.findtext("{%s}name" % IF): e.findtext("{%s}description" % IF)
            for e in data.iter("{%s}interface" % IF)}


def names(xml):
    return sorted(re.findall(r"<name>([^<]*)</name>", xml))


def test_get_data_reads_each_datastore(server, m):
    m.edit_config(target="running", config=config(iface("r1")))
    m.edit_config(target="candidate", config=config(iface("c1")))
    m.copy_config(source="running", target="startup")
    m.edit_config(target="running", config=config(iface("r2")))
    flt = '<subtree-filter><interfaces xmlns="%s"/></subtree-filter>' % IF
    assert names(get_data(m, "running", flt)) == ["r1", "r2"]
    assert names(get_data(m, "intended", flt)) == ["r1", "r2"]
    assert names(get_data(m, "candidate", flt)) == ["c1", "r1"]
    assert names(get_data(m, "startup", flt)) == ["r1"]
    operational = get_data(m, "operational")
    assert "<name>r2</name>" in operational and "<netconf-state" in operational  # config and state
    assert "<netconf-state" not in get_data(m, "running")
    # The reply is get-data's output: <data> in the NMDA namespace.
    assert re.search(r'<data xmlns="%s"' % re.escape(NMDA), get_data(m, "running", flt))


def test_filters_config_filter_and_max_depth(server, m):
    m.edit_config(target="running", config=config(iface("f1", description="one"), iface("f2")))
    xp = get_data(m, "running", '<xpath-filter xmlns:if="%s">/if:interfaces/if:interface[if:name=\'f1\']'
                                "</xpath-filter>" % IF)
    assert names(xp) == ["f1"] and "<description>one</description>" in xp
    # config-filter false on operational: state only (monitoring), no configuration.
    state = get_data(m, "operational", "<config-filter>false</config-filter>")
    assert "<netconf-state" in state and "<interfaces" not in state
    config_only = get_data(m, "operational", "<config-filter>true</config-filter>")
    assert "<interfaces" in config_only and "<netconf-state" not in config_only
    # with-defaults on a configuration datastore, as for get-config (RFC 6243).
    assert "<enabled>true</enabled>" not in get_data(m, "running")
    assert "<enabled>true</enabled>" in get_data(m, "running", "<with-defaults>report-all</with-defaults>")
    assert re.search(r'<enabled [^>]*default="true"[^>]*>true</enabled>',
                     get_data(m, "running", "<with-defaults>report-all-tagged</with-defaults>"))
    # config-filter false on running: nothing (running holds configuration only).
    assert "<interface>" not in get_data(m, "running", "<config-filter>false</config-filter>")
    # max-depth 2: the interfaces' list entries, with their keys only.
    shallow = get_data(m, "running", '<subtree-filter><interfaces xmlns="%s"/></subtree-filter>'
                                     "<max-depth>2</max-depth>" % IF)
    assert names(shallow) == ["f1", "f2"] and "<description>" not in shallow and "<type" not in shallow
    one = get_data(m, "running", '<subtree-filter><interfaces xmlns="%s"/></subtree-filter>'
                                 "<max-depth>1</max-depth>" % IF)
    assert "<interfaces" in one and "<interface>" not in one


def test_origin_metadata_and_origin_filters(server, m):
    m.edit_config(target="running", config=config(iface("o1")))
    with_origin = get_data(m, "operational", "<with-origin/>")
    assert re.search(r'<interfaces [^>]*origin="[\w-]+:intended"', with_origin), with_origin[:600]
    assert re.search(r'<netconf-state [^>]*origin="[\w-]+:system"', with_origin)
    # /nacm is configuration (intended) holding the server's counters (system).
    assert re.search(r'<nacm [^>]*origin="[\w-]+:intended"', with_origin), with_origin[-1500:]
    assert re.search(r'<denied-operations [^>]*origin="[\w-]+:system"', with_origin)
    # The same annotations when the copy path runs (max-depth).
    deep = get_data(m, "operational", "<with-origin/><max-depth>65535</max-depth>")
    assert re.search(r'<interfaces [^>]*origin="[\w-]+:intended"', deep)
    assert re.search(r'<enabled [^>]*origin="[\w-]+:default"[^>]*>true</enabled>', deep)
    assert re.search(r'<denied-operations [^>]*origin="[\w-]+:system"', deep)
    assert names(deep) == names(with_origin)
    plain = get_data(m, "operational")
    assert "origin=" not in plain  # only when asked for
    # A default in use (ietf-interfaces' enabled) is in operational, with origin default; running
    # shows it only when asked for (basic mode explicit).
    assert "<enabled>true</enabled>" in plain
    assert "<enabled>" not in get_data(m, "running")
    assert re.search(r'<enabled [^>]*origin="[\w-]+:default"[^>]*>true</enabled>', with_origin), with_origin[:1500]
    # A value configured equal to its default is configuration (intended), not a default in use,
    # on both paths (RFC 8342 5.3.4; with-defaults' report-all-tagged would tag it).
    m.edit_config(target="running", config=config(iface("o2", enabled=True)))
    for body in ("<with-origin/>", "<with-origin/><max-depth>65535</max-depth>"):
        entry = re.search(r"<interface>(?:(?!</interface>).)*<name>o2</name>.*?</interface>", get_data(
            m, "operational", body), re.S).group(0)
        assert "<enabled>true</enabled>" in entry and "origin" not in entry, (body, entry)
    only_defaults = get_data(m, "operational", "<origin-filter>or:default</origin-filter>")
    assert "<enabled>true</enabled>" in only_defaults and "<type" not in only_defaults
    assert "<name>o1</name>" in only_defaults  # the keys of the entries holding them
    system_only = get_data(m, "operational", "<origin-filter>or:system</origin-filter>")
    assert "<netconf-state" in system_only and "<interfaces" not in system_only
    not_system = get_data(m, "operational", "<negated-origin-filter>or:system</negated-origin-filter>")
    assert "<interfaces" in not_system and "<netconf-state" not in not_system
    # Origin parameters are for operational only; with-defaults is not supported there.
    for ds, body in (("running", "<with-origin/>"), ("running", "<origin-filter>or:intended</origin-filter>"),
                     ("operational", "<with-defaults>report-all</with-defaults>")):
        with pytest.raises(RPCError) as e:
            get_data(m, ds, body)
        assert e.value.tag == "invalid-value", (ds, body)


def test_edit_data_on_each_writable_datastore(server, m):
    edit_data(m, "running", iface("e1", description="x"))
    assert interfaces(m)["e1"]["description"] == "x"
    edit_data(m, "running", iface("e1", description="y"))  # merge
    assert interfaces(m)["e1"]["description"] == "y"
    edit_data(m, "candidate", iface("e2"))
    assert "e2" in interfaces(m, "candidate") and "e2" not in interfaces(m)
    m.discard_changes()
    edit_data(m, "startup", iface("e3"))
    assert "e3" in interfaces(m, "startup")
    edit_data(m, "running", iface("e1", op="delete", type_=None))
    assert "e1" not in interfaces(m)
    edit_data(m, "running", iface("e4"), default_operation="replace")
    assert sorted(interfaces(m)) == ["e4"]
    # The same errors as edit-config, and nothing changes.
    before = m.get_config(source="running").data_xml
    for body, tag in ((iface("e4", op="create"), "data-exists"),
                      (iface("e9", op="delete", type_=None), "data-missing"),
                      ("<interface><name>bad</name><type>no-such-type</type></interface>", "invalid-value")):
        with pytest.raises(RPCError) as e:
            edit_data(m, "running", body)
        assert e.value.tag == tag, (body, e.value)
    assert m.get_config(source="running").data_xml == before
    # operational and intended are not writable (RFC 8526 3.2).
    for ds in ("operational", "intended"):
        with pytest.raises(RPCError) as e:
            edit_data(m, ds, iface("e5"))
        assert e.value.tag == "invalid-value"
    assert "e5" not in interfaces(m)


@pytest.mark.parametrize("datastore", ["running", "candidate", "startup"])
def test_every_edit_operation_on_each_writable_datastore(server, m, datastore):
    edit_data(m, datastore, iface("w1", op="create"))
    edit_data(m, datastore, iface("w1", description="merged", op="merge"))
    assert entries(m, datastore)["w1"] == "merged"
    edit_data(m, datastore, iface("w1", type_="softwareLoopback", op="replace"))  # the description goes
    assert entries(m, datastore)["w1"] is None
    edit_data(m, datastore, iface("w2", description="two"))
    edit_data(m, datastore, iface("w2", op="remove", type_=None))
    edit_data(m, datastore, iface("w2", op="remove", type_=None))  # remove of what is not there: fine
    edit_data(m, datastore, iface("w1", op="delete", type_=None))
    assert "w1" not in entries(m, datastore) and "w2" not in entries(m, datastore)
    if datastore == "candidate":
        m.discard_changes()


# The bad-input matrix of edit-config (test_errors.py), through edit-data: the same tags, and
# nothing changes.
BAD_EDITS = [
    ("<interface><name>eth0</name><enabled>maybe</enabled></interface>", ("invalid-value",), "enabled"),
    ('<interface><name>eth5</name><type xmlns:ia="urn:ietf:params:xml:ns:yang:iana-if-type">ia:noSuchType'
     "</type></interface>", ("invalid-value",), None),
    ("<interface><name>eth0</name><bogus>1</bogus></interface>", ("unknown-element",), None),
    ("<interface><description>no name</description></interface>", ("missing-element",), None),
    (iface("eth0", op="create"), ("data-exists",), "eth0"),
    (iface("eth9", type_=None, op="delete"), ("data-missing",), "eth9"),
    (iface("eth0", op="frobnicate"), ("bad-attribute", "invalid-value"), None),
]


@pytest.mark.parametrize("content,tags,path", BAD_EDITS)
def test_bad_edits_get_the_edit_config_errors(server, m, content, tags, path):
    m.edit_config(target="running", config=config(iface("eth0", description="keep me")))
    before = m.get_config(source="running").data_xml
    with pytest.raises(RPCError) as e:
        edit_data(m, "running", content)
    assert e.value.tag in tags, (content, e.value)
    if path:
        assert path in (e.value.path or ""), e.value.path
    assert m.get_config(source="running").data_xml == before


def test_bad_namespaces_and_state_data_are_refused(server, m):
    before = m.get_config(source="running").data_xml
    for body, tags in (('<interfaces xmlns="urn:example:nope"><interface><name>x</name></interface></interfaces>',
                        ("unknown-namespace",)),
                       ('<interfaces-state xmlns="%s"><interface><name>eth0</name><oper-status>up</oper-status>'
                        "</interface></interfaces-state>" % IF,
                        ("invalid-value", "bad-element", "unknown-element", "operation-not-supported"))):
        with pytest.raises(RPCError) as e:
            edit_data(m, "running", body, raw=True)
        assert e.value.tag in tags, (body, e.value)
    assert m.get_config(source="running").data_xml == before


def test_yang_library_and_the_libnetconf2_client(server, m, tmp_path):
    lib = m.get(filter=("subtree", '<yang-library xmlns="urn:ietf:params:xml:ns:yang:ietf-yang-library"/>')).data_xml
    assert "<name>ietf-netconf-nmda</name>" in lib and "<feature>origin</feature>" in lib
    assert "<name>ietf-origin</name>" in lib
    stores = re.findall(r"<datastore><name[^>]*>(?:\w+:)?(\w+)</name><schema>complete</schema></datastore>", lib)
    assert stores == ["running", "candidate", "startup", "intended", "operational"], lib[-800:]
    # libnetconf2's client asks for ietf-netconf-nmda: it connects and reads without an error line
    # (before NMDA: "Session 1 [ERR]: Failed to receive a reply to <get-schema>.").
    import os
    import subprocess
    out = subprocess.run([os.environ["NCSTORE_CLIENT"], "--port", str(server.port), "--user", USER, "--password",
                          PASSWORD, "--schema-dir", str(tmp_path), "get-config", "--source", "running"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "<data" in out.stdout, out.stdout + out.stderr
    assert out.stderr == "", out.stderr
