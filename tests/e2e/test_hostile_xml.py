"""Hostile clients, messages: broken <hello> exchanges (RFC 6241 §8.1), XML nested 100,000 levels
deep, entity expansion and external entities (RFC 6241 §3.2), invalid UTF-8. Each case: the
server stays up, ten other sessions keep being served during and after it (hostile.py), and the
hostile session gets what the docstring says.

The behaviour chosen where the RFCs leave a choice:
- A message that is correctly framed but not acceptable XML (a DTD, an entity, invalid UTF-8)
  is answered with an rpc-error malformed-message (RFC 6241 Appendix A: "not well-formed XML or
  it uses an invalid character set"), and the session goes on: the framing is intact, so the
  next message can be read.
- Limits on nesting depth are the server's to choose; what matters is an rpc-error instead of a
  stack overflow, and the session going on.
- A broken <hello> ends the session (RFC 6241 §8.1 says so for a missing common base version and
  for a client <session-id>; without a usable hello the server knows neither the framing nor
  the capabilities of what follows). A second <hello> inside a running session is a message the
  server cannot handle: malformed-message, and the session goes on (as in Netopeer2).
"""

import pytest

from hostile import (GET_CONFIG, MEMORY_SLACK, MemoryWatch, check_survived, expect_answer_then_usable,
                     expect_closed, hello_message, hostile_session, interface_names, rpc_message,
                     send_until_closed)
from ncserver import IF, NC, iface

MAX_MESSAGE = 4 * 1024 * 1024
SERVER_ARGS = ["--max-message-size", str(MAX_MESSAGE)]

BASE10 = "urn:ietf:params:netconf:base:1.0"
BASE11 = "urn:ietf:params:netconf:base:1.1"


def edit(entry_xml, message_id="7", prolog=""):
    """An edit-config of running with entry_xml inside <interfaces>, as bytes (lone surrogates
    \udc80-\udcff stand for the raw bytes 0x80-0xff, to write invalid UTF-8)."""
    return (prolog + '<rpc xmlns="%s" message-id="%s"><edit-config><target><running/></target>'
            '<config><interfaces xmlns="%s">%s</interfaces></config></edit-config></rpc>'
            % (NC, message_id, IF, entry_xml)).encode("utf-8", "surrogateescape")


# ---- the <hello> exchange (RFC 6241 §8.1)

BAD_HELLOS = {
    "not-xml": b"this is not xml at all",
    "truncated-xml": hello_message()[:40],
    "no-base-capability": hello_message(caps=("urn:example:capability:nothing",)),
    "unknown-base-version": hello_message(caps=("urn:ietf:params:netconf:base:9.9",)),
    "no-capabilities-element": ('<hello xmlns="%s"/>' % NC).encode(),
    "wrong-namespace": hello_message().replace(NC.encode(), b"urn:example:not-netconf"),
    "client-session-id": hello_message(extra="<session-id>4</session-id>"),
    "rpc-instead-of-hello": edit(iface("hostile-hello")),
}


@pytest.mark.parametrize("case", list(BAD_HELLOS))
def test_bad_hello(hostile_server, bystanders, case):
    """A client <hello> the server cannot use ends the session (RFC 6241 §8.1: without a base
    protocol version in common a peer must not continue the session, and a server must end a
    session whose client <hello> carries a <session-id>); an <rpc> sent instead of the <hello>
    is not executed."""
    raw = hostile_session(hostile_server, hello=False)
    try:
        raw.send(BAD_HELLOS[case])  # end-of-message framed, as every <hello> (RFC 6242 §3)
        during = bystanders.snapshot()
        expect_closed(raw, what=case)
    finally:
        raw.close()
    check_survived(hostile_server, bystanders, during)
    assert "hostile-hello" not in interface_names(hostile_server)


def test_hello_that_never_ends(hostile_server, bystanders):
    """A <hello> without `]]>]]>`, sent until the server stops taking it: bounded by
    --max-message-size like any message (RFC 6242 §3: the hello is end-of-message framed);
    the session is closed."""
    raw = hostile_session(hostile_server, hello=False)
    memory = MemoryWatch(hostile_server)
    try:
        raw.send_bytes(hello_message()[:-len("</hello>")])
        send_until_closed(raw, 4 * MAX_MESSAGE, b"<capability>urn:example:" + b"x" * 65000 + b"</capability>")
        during = bystanders.snapshot()
        expect_closed(raw, what="endless hello")
    finally:
        raw.close()
        memory.stop()
    check_survived(hostile_server, bystanders, during)
    memory.assert_growth_below(MEMORY_SLACK + 4 * MAX_MESSAGE)


PARSE_ERROR_TAGS = {
    "1.1": {"malformed-message"},
    # RFC 6241 Appendix A: malformed-message "MUST NOT be sent to old clients".
    "1.0": {"operation-failed", "unknown-element", "bad-element", "operation-not-supported"},
}


@pytest.mark.parametrize("version", ["1.1", "1.0"])
def test_second_hello(hostile_server, bystanders, version):
    """A <hello> inside an established session (RFC 6241 §8.1 has one per peer, at the start):
    answered with an rpc-error (malformed-message on base:1.1; on base:1.0 another tag, RFC 6241
    Appendix A), and the session goes on."""
    raw = hostile_session(hostile_server, version=version)
    try:
        raw.send(hello_message(caps=(BASE10, BASE11) if version == "1.1" else (BASE10,)))
        during = bystanders.snapshot()
        expect_answer_then_usable(raw, allowed_tags=PARSE_ERROR_TAGS[version], what="second hello")
    finally:
        raw.close()
    check_survived(hostile_server, bystanders, during)


# ---- deep nesting

DEPTH = 100000
DEEP = "<x>" * DEPTH + "</x>" * DEPTH

DEEP_MESSAGES = {
    # as the operation itself
    "rpc-operation": rpc_message(DEEP, "7"),
    # inside a known operation, where a subtree filter goes
    "subtree-filter": rpc_message('<get-config><source><running/></source><filter type="subtree">'
                                  '<interfaces xmlns="%s"><interface>%s</interface></interfaces>'
                                  '</filter></get-config>' % (IF, DEEP), "7"),
    # inside <config>, directly and inside a list entry the server knows
    "config-root": rpc_message("<edit-config><target><running/></target><config>%s</config>"
                               "</edit-config>" % DEEP, "7"),
    "config-list-entry": edit("<interface><name>hostile-deep</name><description>%s</description>"
                              "</interface>" % DEEP),
}


DEEP_ERROR_TAGS = {"malformed-message", "too-big", "unknown-element", "unknown-namespace",
                   "operation-not-supported", "bad-element", "invalid-value"}


@pytest.mark.parametrize("case", list(DEEP_MESSAGES))
def test_deep_nesting(hostile_server, bystanders, case):
    """100,000 nested elements: the server answers (an rpc-error from whichever check fires first:
    a depth limit, malformed-message or too-big, or the unknown element; an empty result for the
    filter), never overflows its stack, and the session goes on; nothing is written."""
    raw = hostile_session(hostile_server)
    try:
        raw.send(DEEP_MESSAGES[case])
        during = bystanders.snapshot()
        expect_answer_then_usable(raw, allowed_tags=DEEP_ERROR_TAGS, what=case,
                                  answer_may_be_data=case == "subtree-filter")
    finally:
        raw.close()
    check_survived(hostile_server, bystanders, during)
    assert "hostile-deep" not in interface_names(hostile_server)


# ---- entities (RFC 6241 §3.2: document type declarations are not permitted in NETCONF content)

LAUGHS = ('<!DOCTYPE rpc [<!ENTITY lol "lol">'
          + "".join('<!ENTITY lol%d "%s">' % (i, ("&lol%s;" % (i - 1 if i > 1 else "")) * 10)
                    for i in range(1, 10))
          + "]>")

with open("/etc/passwd") as _f:
    # The first line of the file an external entity would pull in (root's entry on any Linux).
    PASSWD_LINE = _f.readline().strip()

ENTITY_MESSAGES = {
    "billion-laughs": edit(iface("hostile-entity", description="&lol9;"), prolog=LAUGHS),
    "external-entity-in-config": edit(iface("hostile-entity", description="&xxe;"),
                                      prolog='<!DOCTYPE rpc [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'),
    "external-entity-in-filter": ('<!DOCTYPE rpc [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
                                  '<rpc xmlns="%s" message-id="7"><get-config><source><running/></source>'
                                  '<filter type="subtree"><interfaces xmlns="%s"><interface><name>&xxe;'
                                  '</name></interface></interfaces></filter></get-config></rpc>'
                                  % (NC, IF)).encode(),
    "external-parameter-entity": edit(iface("hostile-entity"),
                                      prolog='<!DOCTYPE rpc [<!ENTITY % ext SYSTEM "file:///etc/passwd"> %ext;]>'),
    "undeclared-entity": edit(iface("hostile-entity", description="&xxe;")),
}


@pytest.mark.parametrize("case", list(ENTITY_MESSAGES))
def test_entities(hostile_server, bystanders, case):
    """A DTD or an entity reference in a message: rpc-error malformed-message (RFC 6241 §3.2 and
    Appendix A), no entity is expanded (memory stays bounded), no file is read (its content is
    in no reply and not in the log), nothing is written, and the session goes on."""
    memory = MemoryWatch(hostile_server)
    raw = hostile_session(hostile_server)
    try:
        raw.send(ENTITY_MESSAGES[case])
        during = bystanders.snapshot()
        answers = expect_answer_then_usable(raw, allowed_tags={"malformed-message"}, what=case)
        whole = raw.rpc(GET_CONFIG, message_id="whole")
    finally:
        raw.close()
        memory.stop()
    check_survived(hostile_server, bystanders, during)
    for text in answers + [whole, hostile_server.log_tail(10 ** 8)]:
        assert PASSWD_LINE not in text, "the content of /etc/passwd leaked: %r" % text[:500]
    assert "hostile-entity" not in interface_names(hostile_server)
    memory.assert_growth_below(MEMORY_SLACK)


# ---- invalid UTF-8 (RFC 6241 Appendix A, malformed-message: "it uses an invalid character set")

UTF8_MESSAGES = {
    "in-element-content": edit(iface("hostile-utf8", description="bad \udcff\udcfe here")),
    "in-attribute-value": edit(iface("hostile-utf8"), message_id="7\udcff"),
    "in-element-name": edit(iface("hostile-utf8", extra="<descr\udcffiption>x</descr\udcffiption>")),
    "in-key-value": edit(iface("hostile-utf8-\udcc3(")),
    "overlong-slash": edit(iface("hostile-utf8", description="\udcc0\udcaf")),
    "utf16-surrogate": edit(iface("hostile-utf8", description="\udced\udca0\udc80")),
    "truncated-sequence": edit(iface("hostile-utf8", description="euro \udce2\udc82")),
    "nul-byte": edit(iface("hostile-utf8", description="a\x00b")),
}


@pytest.mark.parametrize("case", list(UTF8_MESSAGES))
def test_invalid_utf8(hostile_server, bystanders, case):
    """Bytes that are not UTF-8 (or a NUL, not an XML character) in content, an attribute value,
    an element name, a list key: rpc-error malformed-message, nothing is written, and the
    session goes on."""
    raw = hostile_session(hostile_server)
    try:
        raw.send(UTF8_MESSAGES[case])
        during = bystanders.snapshot()
        expect_answer_then_usable(raw, allowed_tags={"malformed-message"}, what=case)
    finally:
        raw.close()
    check_survived(hostile_server, bystanders, during)
    assert not [n for n in interface_names(hostile_server) if n.startswith("hostile-utf8")]


def test_undeclared_prefix_inside_config(hostile_server, bystanders):
    """Found by fuzzing: an element whose prefix no xmlns declares, inside <config>, made libyang
    crash when the server printed it. RFC 6241 3.1: such a message is not namespace-well-formed;
    the session gets malformed-message and goes on; nothing is written."""
    raw = hostile_session(hostile_server)
    try:
        raw.send(rpc_message('<edit-config><target><running/></target><config xmlns:nc="urn:ietf:params:xml:ns:'
                             'netconf:bare:1.0"><innc:terfaces xmlns="%s" nc:operation="frobnicate"/></config>'
                             '</edit-config>' % IF, "7"))
        during = bystanders.snapshot()
        expect_answer_then_usable(raw, allowed_tags={"malformed-message"}, what="undeclared prefix")
    finally:
        raw.close()
    check_survived(hostile_server, bystanders, during)
