"""ietf-netconf-monitoring (schemas, get-schema) and the YANG library: what yangcli and
netopeer2-cli read to learn the server's models."""

import re

import pytest
from ncclient.operations.rpc import RPCError

from ncserver import MON, YLIB, NS

CAP = "urn:ietf:params:netconf:capability:"


def schemas(m):
    r = m.get(filter=("subtree", '<netconf-state xmlns="%s"><schemas/></netconf-state>' % MON))
    out = []
    for s in r.data_ele.xpath("mon:netconf-state/mon:schemas/mon:schema", namespaces=NS):
        out.append({c.tag.split("}", 1)[-1]: (c.text or "").strip() for c in s
                    if c.tag.split("}", 1)[-1] in ("identifier", "version", "format", "namespace")})
    return out


def test_schema_list_covers_advertised_modules(m):
    listed = {(s["identifier"], s["version"]) for s in schemas(m)}
    for cap in m.server_capabilities:
        mod = re.search(r"[?&]module=([^&]+)", cap)
        rev = re.search(r"[?&]revision=([^&]+)", cap)
        if mod and rev:
            assert (mod.group(1), rev.group(1)) in listed, cap


def test_get_schema_of_every_listed_module(m):
    listed = schemas(m)
    assert len(listed) >= 5
    failures = []
    for s in listed:
        fmt = s.get("format", "yang")
        if not fmt.endswith("yang"):
            continue
        try:
            reply = m.get_schema(s["identifier"], s.get("version") or None)
        except RPCError as e:
            failures.append("%s@%s: %s %s" % (s["identifier"], s.get("version"), e.tag, e.message))
            continue
        text = reply.data if hasattr(reply, "data") else reply.xml
        if not re.search(r"\b(sub)?module\s+%s\b" % re.escape(s["identifier"]), text or ""):
            failures.append("%s@%s: reply is not its YANG text" % (s["identifier"], s.get("version")))
    assert not failures, failures


def test_get_schema_format_from_ncclient(m):
    """ncclient writes <format>yang</format> with the NETCONF namespace as default, so the
    unprefixed identity does not resolve (RFC 7950 §9.10.3): serving it, or an invalid-value
    error, are both acceptable; an internal operation-failed is not."""
    try:
        reply = m.get_schema("ietf-interfaces", "2014-05-08", "yang")
        assert "module ietf-interfaces" in reply.data
    except RPCError as e:
        assert e.tag == "invalid-value", (e.tag, e.message)


def test_get_schema_format_prefixed(m):
    from ncclient.xml_ import to_ele
    reply = m.dispatch(to_ele(
        '<get-schema xmlns="%s"><identifier>ietf-interfaces</identifier>'
        '<version>2014-05-08</version><format>yang</format></get-schema>' % MON))
    assert "module ietf-interfaces" in reply.xml


def test_get_schema_without_version(m):
    reply = m.get_schema("ietf-interfaces")
    assert "module ietf-interfaces" in reply.data


def test_get_schema_unknown_module(m):
    with pytest.raises(RPCError) as e:
        m.get_schema("no-such-module")
    assert e.value.tag == "invalid-value"


def test_yang_library_lists_modules(m):
    r = m.get(filter=("subtree", '<modules-state xmlns="%s"/>' % YLIB))
    mods = {(e.findtext("{%s}name" % YLIB), e.findtext("{%s}revision" % YLIB))
            for e in r.data_ele.xpath("yl:modules-state/yl:module", namespaces=NS)}
    names = {n for n, _ in mods}
    for needed in ("ietf-interfaces", "iana-if-type", "ietf-netconf", "ietf-netconf-monitoring",
                   "ietf-netconf-with-defaults", "ietf-yang-library"):
        assert needed in names, needed
    assert ("ietf-interfaces", "2014-05-08") in mods
    set_id = r.data_ele.xpath("yl:modules-state/yl:module-set-id/text()", namespaces=NS)
    assert set_id and set_id[0]
    cap = [c for c in m.server_capabilities if c.startswith(CAP + "yang-library:1.0")]
    if cap:  # RFC 7950 §5.6.4: the capability carries the same module-set-id
        assert "module-set-id=%s" % set_id[0] in cap[0]


def test_yang_library_features(m):
    r = m.get(filter=("subtree", '<modules-state xmlns="%s"><module><name>ietf-netconf</name>'
                                 '</module></modules-state>' % YLIB))
    feats = r.data_ele.xpath("yl:modules-state/yl:module/yl:feature/text()", namespaces=NS)
    for f in ("writable-running", "candidate", "startup", "validate", "rollback-on-error", "xpath"):
        assert f in feats, feats


def test_monitoring_datastores_and_sessions(m, m2):
    r = m.get(filter=("subtree", '<netconf-state xmlns="%s"><datastores/><sessions/></netconf-state>'
                      % MON))
    ds = r.data_ele.xpath("mon:netconf-state/mon:datastores/mon:datastore/mon:name/text()",
                          namespaces=NS)
    assert set(ds) >= {"running", "candidate", "startup"}
    ids = r.data_ele.xpath("mon:netconf-state/mon:sessions/mon:session/mon:session-id/text()",
                           namespaces=NS)
    assert {str(m.session_id), str(m2.session_id)} <= set(ids)
