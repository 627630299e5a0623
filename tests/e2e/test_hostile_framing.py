"""Hostile clients, framing: every NETCONF 1.1 chunked-framing error (RFC 6242 §4.2), chunk
headers announcing 4 GB and more, messages that never end, and the 1.0 end-of-message delimiter
inside a message (RFC 6242 §4.3). Each case: the server stays up, ten other sessions keep being
served during and after it (hostile.py), and the hostile session gets what the docstring says.

The behaviour chosen where the RFCs leave a choice:
- A chunked-framing error leaves the receiver unable to tell where the next message starts, so
  nothing after it can be trusted: the server answers with an rpc-error malformed-message (RFC
  6241 Appendix A: "a message could not be handled because it failed to be parsed correctly",
  defined for base:1.1) and closes the session, as Netopeer2 closes it. The message in which the
  error occurs is never executed (every case here is an edit-config creating `hostile-frame`).
- A message larger than --max-message-size closes the session before the server has buffered
  more than about that much; an rpc-error too-big (RFC 6241 Appendix A) may precede the close.
- In base:1.0 the delimiter resynchronises the stream: an `]]>]]>` inside a message cuts it in
  two malformed messages, each answered with an rpc-error (not malformed-message, which RFC 6241
  Appendix A forbids towards base:1.0 clients), and the session goes on.
"""

import socket

import pytest

from hostile import (END_OF_CHUNKS, MEMORY_SLACK, MemoryWatch, check_survived, chunk, expect_closed,
                     expect_answer_then_usable, hostile_session, interface_names, rpc_message,
                     send_until_closed, send_while_open, wait_session_gone)
from ncserver import EOM, config, iface

MAX_MESSAGE = 1024 * 1024
SERVER_ARGS = ["--max-message-size", str(MAX_MESSAGE)]

EDIT = rpc_message("<edit-config><target><running/></target>%s</edit-config>"
                   % config(iface("hostile-frame", description="framing")), message_id="7")
SIZE = len(EDIT)

# Each is a complete byte sequence a logged-in base:1.1 client sends instead of one correctly
# framed message (RFC 6242 §4.2: Chunked-Message = 1*chunk end-of-chunks; chunk = LF HASH
# chunk-size LF chunk-data; chunk-size = 1*DIGIT1 0*DIGIT, at most 4294967295).
FRAMING_ERRORS = {
    "not-a-number": b"\n#abc\n" + EDIT + END_OF_CHUNKS,
    "zero-size-chunk": b"\n#0\n" + chunk(EDIT) + END_OF_CHUNKS,
    "end-of-chunks-without-chunk": END_OF_CHUNKS + chunk(EDIT) + END_OF_CHUNKS,
    "no-lf-before-hash": b"#%d\n" % SIZE + EDIT + END_OF_CHUNKS,
    "no-lf-after-size": b"\n#%d" % SIZE + EDIT + END_OF_CHUNKS,
    "cr-lf-after-size": b"\n#%d\r\n" % SIZE + EDIT + END_OF_CHUNKS,
    "leading-zero": b"\n#0%d\n" % SIZE + EDIT + END_OF_CHUNKS,
    "plus-sign": b"\n#+%d\n" % SIZE + EDIT + END_OF_CHUNKS,
    "space-before-size": b"\n# %d\n" % SIZE + EDIT + END_OF_CHUNKS,
    "hex-size": b"\n#0x%x\n" % SIZE + EDIT + END_OF_CHUNKS,
    "garbage-between-chunks": chunk(EDIT[:40]) + b"garbage" + chunk(EDIT[40:]) + END_OF_CHUNKS,
    "garbage-before-end-of-chunks": chunk(EDIT) + b"xyz" + END_OF_CHUNKS,
    "end-of-chunks-without-lf": chunk(EDIT) + b"\n##x\n",
    "end-of-message-framing": EDIT + EOM,
    # Larger than RFC 6242 allows; the "+n" ones read as SIZE in 32-bit or 64-bit arithmetic.
    "size-2^32": b"\n#4294967296\n" + EDIT + END_OF_CHUNKS,
    "size-2^32+n": b"\n#%d\n" % (2**32 + SIZE) + EDIT + END_OF_CHUNKS,
    "size-20-digits": b"\n#99999999999999999999\n" + EDIT + END_OF_CHUNKS,
    "size-2^64+n": b"\n#%d\n" % (2**64 + SIZE) + EDIT + END_OF_CHUNKS,
    # A header whose digits never end: rejected after the tenth digit, not buffered.
    "endless-size-digits": b"\n#" + b"1" * 100000,
}


@pytest.mark.parametrize("case", list(FRAMING_ERRORS))
def test_chunked_framing_error(hostile_server, bystanders, case):
    """RFC 6242 §4.2 framing error on a base:1.1 session: rpc-error malformed-message (RFC 6241
    Appendix A), then the session is closed and cleaned up; the message is not executed."""
    raw = hostile_session(hostile_server)
    try:
        send_while_open(raw, FRAMING_ERRORS[case])
        during = bystanders.snapshot()
        expect_closed(raw, allowed_tags={"malformed-message"}, required_tag="malformed-message", what=case)
    finally:
        raw.close()
    check_survived(hostile_server, bystanders, during)
    wait_session_gone(hostile_server, raw.session_id)
    assert "hostile-frame" not in interface_names(hostile_server)


# The client stops sending (SSH channel EOF) in the middle of a chunked message.
TRUNCATED = {
    "eof-inside-chunk-data": b"\n#1000\n" + EDIT[:50],
    "eof-inside-chunk-header": b"\n#12",
    "eof-before-end-of-chunks": chunk(EDIT),
}


@pytest.mark.parametrize("case", list(TRUNCATED))
def test_chunked_message_cut_by_eof(hostile_server, bystanders, case):
    """EOF inside a chunked message (RFC 6242 §4.2: the message is incomplete): the server closes
    the session (an rpc-error malformed-message before is allowed, the client may still read),
    frees it, and does not execute the incomplete message."""
    raw = hostile_session(hostile_server)
    try:
        send_while_open(raw, TRUNCATED[case])
        raw.channel.shutdown_write()
        during = bystanders.snapshot()
        expect_closed(raw, allowed_tags={"malformed-message"}, what=case)
    finally:
        raw.close()
    check_survived(hostile_server, bystanders, during)
    wait_session_gone(hostile_server, raw.session_id)
    assert "hostile-frame" not in interface_names(hostile_server)


def test_connection_dropped_inside_chunk(hostile_server, bystanders):
    """The TCP connection goes away in the middle of a chunk (no SSH EOF, no close-session), as
    when a client host dies: the server notices, frees the session and does not execute the
    partial message."""
    raw = hostile_session(hostile_server)
    raw.send_bytes(b"\n#%d\n" % SIZE + EDIT[:SIZE // 2])
    during = bystanders.snapshot()
    raw.transport.sock.shutdown(socket.SHUT_RDWR)
    raw.transport.close()
    check_survived(hostile_server, bystanders, during)
    wait_session_gone(hostile_server, raw.session_id)
    assert "hostile-frame" not in interface_names(hostile_server)


def test_valid_unusual_chunking_is_accepted(hostile_server, bystanders):
    """Not hostile, the control for the cases above: RFC 6242 §4.2 lets a sender cut a message
    anywhere, so one-byte chunks and a chunk boundary inside a UTF-8 character are a valid
    message, executed and answered normally."""
    body = rpc_message("<edit-config><target><running/></target>%s</edit-config>"
                       % config(iface("hostile-frame", description="caf\u00e9 \u65e5\u672c")), "8")
    cut = body.index("\u00e9".encode()) + 1  # between the two bytes of é
    raw = hostile_session(hostile_server)
    try:
        during = bystanders.snapshot()
        raw.send_bytes(b"".join(chunk(body[i:i + 1]) for i in range(cut)) + chunk(body[cut:])
                       + END_OF_CHUNKS)
        reply = raw.read()
        assert "<ok/>" in reply, reply
    finally:
        raw.close()
    check_survived(hostile_server, bystanders, during)
    assert "hostile-frame" in interface_names(hostile_server)
    # The module's server goes on to the next cases, which check that nothing made it.
    m = hostile_server.connect(timeout=30)
    try:
        m.edit_config(target="running", config=config(iface("hostile-frame", op="delete")))
    finally:
        m.close_session()


FILLER = b"<x>" + b"y" * (64 * 1024 - 7) + b"</x>"


def test_chunk_header_announcing_4gb(hostile_server, bystanders):
    """A chunk of 4294967295 bytes, the largest RFC 6242 §4.2 allows, followed by data: more than
    --max-message-size, so the server closes the session (an rpc-error too-big, RFC 6241
    Appendix A, may precede the close) without allocating or buffering the announced size."""
    memory = MemoryWatch(hostile_server)
    raw = hostile_session(hostile_server)
    try:
        raw.send_bytes(b"\n#4294967295\n")
        send_until_closed(raw, 16 * MAX_MESSAGE, FILLER)
        during = bystanders.snapshot()
        expect_closed(raw, allowed_tags={"too-big", "malformed-message"}, what="4 GB chunk")
    finally:
        raw.close()
        memory.stop()
    check_survived(hostile_server, bystanders, during)
    memory.assert_growth_below(MEMORY_SLACK + 4 * MAX_MESSAGE)


@pytest.mark.parametrize("version", ["1.1", "1.0"])
def test_message_that_never_ends(hostile_server, bystanders, version):
    """Chunks without end-of-chunks (1.1) or bytes without `]]>]]>` (1.0), sent until the server
    stops taking them: after about --max-message-size bytes the session is closed (too-big may
    precede the close, RFC 6241 Appendix A); memory stays bounded."""
    memory = MemoryWatch(hostile_server)
    raw = hostile_session(hostile_server, version=version)
    frame = chunk if version == "1.1" else (lambda block: block)
    try:
        raw.send_bytes(frame(b'<rpc xmlns="urn:ietf:params:xml:ns:netconf:base:1.0" message-id="9">'))
        send_until_closed(raw, 16 * MAX_MESSAGE, FILLER, frame)
        during = bystanders.snapshot()
        expect_closed(raw, allowed_tags={"too-big"} | ({"malformed-message"} if version == "1.1" else set()),
                      what="endless %s message" % version)
    finally:
        raw.close()
        memory.stop()
    check_survived(hostile_server, bystanders, during)
    memory.assert_growth_below(MEMORY_SLACK + 4 * MAX_MESSAGE)


# What a base:1.0 client may get for a message that is not well-formed XML: anything a parse
# failure can be, except malformed-message.
BASE10_PARSE_ERROR_TAGS = {"operation-failed", "unknown-element", "bad-element", "missing-element",
                           "invalid-value", "unknown-namespace", "missing-attribute", "bad-attribute"}

EOM_INSIDE = {
    "in-element-content": rpc_message("<edit-config><target><running/></target>%s</edit-config>"
                                      % config(iface("hostile-frame", description="a]]>]]>b")), "7"),
    "in-attribute-value": ('<rpc xmlns="urn:ietf:params:xml:ns:netconf:base:1.0" message-id="a]]>]]>b">'
                           '<edit-config><target><running/></target>%s</edit-config></rpc>'
                           % config(iface("hostile-frame"))).encode(),
    "in-comment": rpc_message("<edit-config><target><running/></target><!-- ]]>]]> -->%s</edit-config>"
                              % config(iface("hostile-frame")), "7"),
}


@pytest.mark.parametrize("case", list(EOM_INSIDE))
def test_end_of_message_inside_a_base10_message(hostile_server, bystanders, case):
    """`]]>]]>` inside a base:1.0 message (RFC 6242 §4.3: it can occur in well-formed XML, and a
    base:1.0 receiver cannot tell): the message ends there, both halves are malformed, each is
    answered with an rpc-error other than malformed-message (RFC 6241 Appendix A: not towards
    base:1.0 clients), nothing is executed, and the session goes on."""
    raw = hostile_session(hostile_server, version="1.0")
    try:
        raw.send(EOM_INSIDE[case])
        during = bystanders.snapshot()
        expect_answer_then_usable(raw, allowed_tags=BASE10_PARSE_ERROR_TAGS, what=case)
    finally:
        raw.close()
    check_survived(hostile_server, bystanders, during)
    assert "hostile-frame" not in interface_names(hostile_server)



def test_base10_message_cut_by_eof(hostile_server, bystanders):
    """EOF in the middle of a base:1.0 message (RFC 6242 §4.3: no delimiter, no message): the
    server closes the session, frees it, and does not execute the partial message."""
    raw = hostile_session(hostile_server, version="1.0")
    try:
        raw.send_bytes(EDIT)  # no ]]>]]>
        raw.channel.shutdown_write()
        during = bystanders.snapshot()
        expect_closed(raw, allowed_tags=BASE10_PARSE_ERROR_TAGS, what="1.0 EOF mid-message")
    finally:
        raw.close()
    check_survived(hostile_server, bystanders, during)
    wait_session_gone(hostile_server, raw.session_id)
    assert "hostile-frame" not in interface_names(hostile_server)

