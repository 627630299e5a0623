"""What an acknowledged edit survives: a clean restart and kill -9."""

import re

import pytest

from ncserver import NC, IF, IANA, config, edits_until_kill, iface, interfaces, all_config


def test_restart_keeps_running_startup(server):
    m = server.connect()
    m.edit_config(target="running", config=config(
        iface("r0", description="before restart", enabled=False),
        iface("r1", type_="softwareLoopback")))
    m.copy_config(source="running", target="startup")
    m.edit_config(target="running", config=config(iface("r2")))
    running = all_config(m, "running")
    startup = all_config(m, "startup")
    m.close_session()

    assert server.stop() == 0, "ncstored should exit 0 on SIGTERM:\n" + server.log_tail()
    server.start()
    m = server.connect()
    try:
        assert all_config(m, "running") == running
        assert all_config(m, "startup") == startup
        got = interfaces(m)
        assert got["r0"]["description"] == "before restart"
        assert got["r0"]["enabled"] == "false"
        assert set(interfaces(m, "startup")) == {"r0", "r1"}
        # Candidate starts as a copy of running.
        assert all_config(m, "candidate") == running
    finally:
        m.close_session()


def test_kill_9_keeps_acknowledged_edits(server):
    m = server.connect()
    names = ["k%03d" % i for i in range(30)]
    for n in names:
        m.edit_config(target="running", config=config(iface(n, description="acked " + n)))
    m.edit_config(target="running", config=config(iface("k000", type_=None, op="delete")))
    m.edit_config(target="running", config=config(iface("k001", type_=None, description="changed")))
    expected = all_config(m)
    server.kill()  # no SIGTERM, no flush, no goodbye

    server.start()
    m = server.connect()
    try:
        assert all_config(m) == expected
        got = interfaces(m)
        assert "k000" not in got
        assert got["k001"]["description"] == "changed"
        assert set(names[1:]) <= set(got)
    finally:
        m.close_session()


def test_kill_9_during_concurrent_edits_keeps_every_acknowledged_one(server):
    snapshot = edits_until_kill(
        server, lambda s, name: s.edit_config(target="running", config=config(iface(name))), "w")
    assert snapshot, "no edit was acknowledged before the kill"

    server.start()
    m = server.connect()
    try:
        got = set(interfaces(m))
        missing = [n for n in snapshot if n not in got]
        assert not missing, "acknowledged but lost after kill -9: %s" % missing[:10]
    finally:
        m.close_session()


def test_sigterm_with_open_sessions(server):
    a = server.connect()
    b = server.connect()
    a.edit_config(target="running", config=config(iface("open-sessions")))
    assert server.stop() == 0, server.log_tail()
    server.start()
    m = server.connect()
    try:
        assert "open-sessions" in interfaces(m)
    finally:
        m.close_session()
    for s in (a, b):
        with pytest.raises(Exception):
            s.get_config(source="running")


def test_shutdown_logs_how_the_writes_were_grouped_into_transactions(server):
    """What an operator reads to see group commit at work (and a test of the counters)."""
    m = server.connect()
    for i in range(3):
        m.edit_config(target="running", config=config(iface("grouped%d" % i)))
    m.close_session()
    assert server.stop() == 0, server.log_tail()
    last = [ln for ln in server.log_tail().splitlines() if "statistics: " in ln][-1]
    found = re.search(r"datastore: (\d+) writes in (\d+) transactions \(([\d.]+) per transaction, at most (\d+)\), "
                      r"0 failed", last)
    assert found, last
    writes, transactions, _, most = (float(x) for x in found.groups())
    assert writes >= 3 and 1 <= transactions <= writes and 1 <= most <= writes, last
    server.start()


def test_edits_with_the_nc_prefix_declared_on_rpc_only(server):
    """ncclient's envelope: xmlns:nc on <nc:rpc>, and <config> content whose nc:operation uses
    that declaration. ncstored parses such content apart from the message (rpcparse.hpp): the
    declaration must reach it, and what the edits do must be acknowledged and kept."""
    def rpc(message_id, op, body):
        return ('<nc:rpc xmlns:nc="%s" xmlns:ianaift="%s" message-id="%s"><nc:%s>%s</nc:%s></nc:rpc>'
                % (NC, IANA, message_id, op, body, op))

    entry = ('<interface nc:operation="%s"><name>%s</name><type>ianaift:ethernetCsmacd</type>%s'
             '</interface>')
    raw = server.raw()
    try:
        raw.send(rpc(1, "edit-config", '<nc:target><nc:running/></nc:target><nc:config>'
                     '<interfaces xmlns="%s">%s%s</interfaces></nc:config>'
                     % (IF, entry % ("create", "p0", "<description>prefix on rpc</description>"),
                        entry % ("merge", "p1", "<enabled>false</enabled>"))))
        reply = raw.read()
        assert "<ok/>" in reply, reply
        # A valueless leaf to delete, the operation's prefix again declared on <rpc> only.
        raw.send(rpc(2, "edit-config", '<nc:target><nc:running/></nc:target><nc:config>'
                     '<interfaces xmlns="%s"><interface><name>p1</name><enabled nc:operation="delete"/>'
                     '</interface></interfaces></nc:config>' % IF))
        reply = raw.read()
        assert "<ok/>" in reply, reply
        # copy-config's inline <config>, its identity's prefix declared on <rpc> only.
        raw.send(rpc(3, "copy-config", '<nc:target><nc:startup/></nc:target><nc:source><nc:config>'
                     '<interfaces xmlns="%s"><interface><name>p2</name>'
                     '<type>ianaift:softwareLoopback</type></interface></interfaces></nc:config>'
                     '</nc:source>' % IF))
        reply = raw.read()
        assert "<ok/>" in reply, reply
        # A bad value still gets the error it always got, with its path.
        raw.send(rpc(4, "edit-config", '<nc:target><nc:running/></nc:target><nc:config>'
                     '<interfaces xmlns="%s">%s</interfaces></nc:config>'
                     % (IF, entry % ("merge", "p0", "<enabled>maybe</enabled>"))))
        reply = raw.read()
        assert "<error-tag>invalid-value</error-tag>" in reply, reply
        assert "enabled" in reply, reply
    finally:
        raw.close()

    def check(m):
        got = interfaces(m)
        assert got["p0"]["description"] == "prefix on rpc"
        assert "p1" in got and "enabled" not in got["p1"]
        assert interfaces(m, "startup") == {"p2": {"name": "p2", "type": "softwareLoopback"}}

    m = server.connect()
    try:
        check(m)
    finally:
        m.close_session()
    server.kill()
    server.start()
    m = server.connect()
    try:
        check(m)
    finally:
        m.close_session()
