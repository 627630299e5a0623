"""Dynamic subscriptions (RFC 8639 over NETCONF, RFC 8640) and YANG-Push (RFC 8641): what a
subscriber of the real server receives over SSH, with ncclient's raw RPCs (dispatch) and raw
sessions."""

import datetime
import re
import threading
import time

import pytest
from ncclient.operations.rpc import RPCError
from ncclient.xml_ import to_ele

from ncserver import IF, NC, commit_in_parallel, config, iface, take_all, take_until

SN = "urn:ietf:params:xml:ns:yang:ietf-subscribed-notifications"
YP = "urn:ietf:params:xml:ns:yang:ietf-yang-push"
DS = "urn:ietf:params:xml:ns:yang:ietf-datastores"
LONG_AGO = "2000-01-01T00:00:00Z"

# A small subscriber queue so that a subscriber that reads nothing is found out quickly.
SERVER_ARGS = ["--notification-queue-bytes", "65536"]


def establish(m, body):
    """establish-subscription with `body`; the subscription id."""
    reply = m.dispatch(to_ele('<establish-subscription xmlns="%s" xmlns:yp="%s" xmlns:ds="%s">%s'
                              '</establish-subscription>' % (SN, YP, DS, body)))
    found = re.search(r"<(?:\w+:)?id(?: [^>]*)?>(\d+)</(?:\w+:)?id>", reply.xml)
    assert found, reply.xml
    return int(found.group(1))


def on_change(m, xpath="/if:interfaces", extra="", datastore="running"):
    flt = ('<yp:datastore-xpath-filter xmlns:if="%s">%s</yp:datastore-xpath-filter>' % (IF, xpath)
           if xpath else "")
    return establish(m, "<yp:datastore>ds:%s</yp:datastore>%s<yp:on-change>%s</yp:on-change>"
                     % (datastore, flt, extra))


def edits(xml):
    """[(operation, target)] of the push-change-updates in `xml`."""
    return re.findall(r"<operation>([^<]*)</operation><target>([^<]*)</target>", xml)


def updates(texts, sub_id):
    return [t for t in texts if "<push-change-update" in t and "<id>%d</id>" % sub_id in t]


def test_modules_and_the_stream_are_advertised(server, m):
    lib = m.get(filter=("subtree", '<yang-library xmlns="urn:ietf:params:xml:ns:yang:ietf-yang-library"/>')).data_xml
    assert "<name>ietf-subscribed-notifications</name>" in lib and "<feature>replay</feature>" in lib
    assert "<name>ietf-yang-push</name>" in lib and "<feature>on-change</feature>" in lib
    streams = m.get(filter=("subtree", '<streams xmlns="%s"/>' % SN)).data_xml
    assert "<name>NETCONF</name>" in streams and "<replay-support/>" in streams, streams


def test_ncstore_client_follows_a_datastore(server, m, tmp_path):
    """`ncstore-client subscribe --datastore running`: the sync push-update, then each change."""
    import json
    import os
    import subprocess
    m.edit_config(target="running", config=config(iface("c0")))
    cmd = [os.environ["NCSTORE_CLIENT"], "--port", str(server.port), "--user", "e2e", "--password", "e2e-Secret-1",
           "--schema-dir", str(tmp_path), "--json", "subscribe", "--datastore", "running",
           "--filter-xpath", "/ietf-interfaces:interfaces", "--count", "2"]
    client = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(client.stdout.readline())
        assert "ietf-yang-push:push-update" in first["event"], first
        assert "c0" in json.dumps(first["event"])
        m.edit_config(target="running", config=config(iface("c1")))
        out, err = client.communicate(timeout=60)
        assert client.returncode == 0, err
        second = json.loads(out.splitlines()[0])
        edit = second["event"]["ietf-yang-push:push-change-update"]["datastore-changes"]["yang-patch"]["edit"]
        assert [(e["operation"], e["target"]) for e in edit] == [
            ("create", "/ietf-interfaces:interfaces/interface=c1")], second
        assert "libyang" not in err and "rror" not in err, err
    finally:
        client.kill()


def test_on_change_create_merge_replace_delete(server, m):
    m.edit_config(target="running", config=config(iface("p0", description="before")))
    sub = server.connect()
    try:
        sid = on_change(sub)
        # sync-on-start: the selected data as it is, first.
        first = take_until(sub, r"<push-update")
        assert "<id>%d</id>" % sid in first[-1] and "<name>p0</name>" in first[-1], first
        assert "<description>before</description>" in first[-1]
        m.edit_config(target="running", config=config(iface("p1")))                      # create
        m.edit_config(target="running", config=config(iface("p1", description="up")))    # merge: a new leaf
        m.edit_config(target="running", config=config(iface("p1", description="down")))  # merge: a new value
        m.edit_config(target="running", config=config(iface("p1", type_="softwareLoopback", op="replace")))
        m.edit_config(target="running", config=config(iface("p0", op="delete", type_=None)))  # a subtree
        got = updates(take_until(sub, r"<operation>delete</operation><target>/ietf-interfaces:interfaces/interface=p0<"), sid)
        seen = [sorted(edits(x)) for x in got]  # the order within one edit is the engine's
        p1 = "/ietf-interfaces:interfaces/interface=p1"
        assert seen == [
            [("create", p1)],
            [("create", p1 + "/description")],
            [("replace", p1 + "/description")],
            [("delete", p1 + "/description"), ("replace", p1 + "/type")],
            [("delete", "/ietf-interfaces:interfaces/interface=p0")],
        ], got
        # Values are the nodes themselves; the patch id is the commit's.
        assert "<value><interface xmlns=\"%s\"><name>p1</name>" % IF in got[0]
        assert "<value><description xmlns=\"%s\">down</description></value>" % IF in got[2]
        assert re.search(r"<patch-id>\d+</patch-id>", got[0])
        # Interleave: the subscribed session is served RPCs meanwhile.
        assert "<name>p1</name>" in sub.get_config(source="running").data_xml
    finally:
        sub.close_session()


def test_deleting_the_whole_subtree_and_excluded_changes(server, m):
    m.edit_config(target="running", config=config(iface("q0")))
    sub = server.connect()
    try:
        sid = on_change(sub, extra="<yp:sync-on-start>false</yp:sync-on-start>"
                                   "<yp:excluded-change>create</yp:excluded-change>")
        m.edit_config(target="running", config=config(iface("q1")))  # excluded
        m.edit_config(target="running", config=config(attrs=' xmlns:nc="%s" nc:operation="delete"' % NC))
        got = updates(take_until(sub, r"push-change-update"), sid)
        assert [edits(x) for x in got] == [[("delete", "/ietf-interfaces:interfaces")]], got
        assert not [x for x in take_all(sub, 0.5) if "push-update" in x]
    finally:
        sub.close_session()


def test_a_filter_sends_only_what_it_selects(server, m):
    m.edit_config(target="running", config=config(iface("f0")))
    sub = server.connect()
    try:
        sid = establish(sub, '<yp:datastore>ds:running</yp:datastore><yp:datastore-subtree-filter>'
                             '<interfaces xmlns="%s"><interface><description/></interface></interfaces>'
                             '</yp:datastore-subtree-filter><yp:on-change><yp:sync-on-start>false'
                             '</yp:sync-on-start></yp:on-change>' % IF)
        m.edit_config(target="running", config=config(iface("f1", description="hello")))  # cut to description
        m.edit_config(target="running", config=config(iface("f0", enabled=False)))          # not selected
        m.edit_config(target="running", config=config(iface("f0", description="there")))
        got = updates(take_until(sub, r"there"), sid)
        assert [edits(x) for x in got] == [
            [("create", "/ietf-interfaces:interfaces/interface=f1")],
            [("create", "/ietf-interfaces:interfaces/interface=f0/description")],
        ], got
        assert ("<value><interface xmlns=\"%s\"><name>f1</name><description>hello</description></interface>"
                "</value>" % IF) in got[0]
    finally:
        sub.close_session()


def test_periodic_updates(server, m):
    m.edit_config(target="running", config=config(iface("t0")))
    sub = server.connect()
    try:
        start = time.time()
        sid = establish(sub, '<yp:datastore>ds:running</yp:datastore><yp:datastore-xpath-filter xmlns:if="%s">'
                             "/if:interfaces/if:interface[if:name='t0']</yp:datastore-xpath-filter>"
                             "<yp:periodic><yp:period>20</yp:period></yp:periodic>" % IF)
        got = []
        while len(got) < 3:
            got += [x for x in take_until(sub, r"push-update") if "push-update" in x]
        assert time.time() - start >= 0.35  # every 200 ms
        assert all("<id>%d</id>" % sid in x and "<name>t0</name>" in x for x in got), got
        sub.dispatch(to_ele('<modify-subscription xmlns="%s" xmlns:yp="%s"><id>%d</id><yp:periodic>'
                            '<yp:period>1000</yp:period></yp:periodic></modify-subscription>' % (SN, YP, sid)))
        take_all(sub, 0.3)
        assert not take_all(sub, 1.5)  # now every 10 s
        sub.dispatch(to_ele('<delete-subscription xmlns="%s"><id>%d</id></delete-subscription>' % (SN, sid)))
    finally:
        sub.close_session()


def test_stream_subscription_with_replay_and_stop_time(server, m):
    m.edit_config(target="running", config=config(iface("s0")))  # the container exists
    m.edit_config(target="running", config=config(iface("s-before")))
    time.sleep(0.1)
    stop = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=2)).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")
    sub = server.connect()
    try:
        sid = establish(sub, "<stream>NETCONF</stream><stream-xpath-filter xmlns:ncn="
                             '"urn:ietf:params:xml:ns:yang:ietf-netconf-notifications">'
                             "/ncn:netconf-config-change</stream-xpath-filter>"
                             "<replay-start-time>%s</replay-start-time><stop-time>%s</stop-time>" % (LONG_AGO, stop))
        m.edit_config(target="running", config=config(iface("s-live")))
        got = take_until(sub, r"s-live")
        text = "\n".join(got)
        assert "s-before" in text
        done = [i for i, x in enumerate(got) if "<replay-completed" in x]
        assert len(done) == 1 and "<id>%d</id>" % sid in got[done[0]]
        assert text.index("s-before") < text.index("<replay-completed") < text.index("s-live")
        assert not [x for x in got if "netconf-session-start" in x]  # the filter
        # At its stop-time a dynamic subscription ends (silently: RFC 8639 has
        # subscription-completed for configured subscriptions only).
        time.sleep(2.5)
        m.edit_config(target="running", config=config(iface("s-after-stop")))
        assert not [x for x in take_all(sub, 0.5) if "s-after-stop" in x]
        with pytest.raises(RPCError) as e:
            sub.dispatch(to_ele('<delete-subscription xmlns="%s"><id>%d</id></delete-subscription>' % (SN, sid)))
        assert e.value.app_tag == "ietf-subscribed-notifications:no-such-subscription"
    finally:
        sub.close_session()


def test_delete_and_kill(server, m):
    sub = server.connect()
    other = server.connect()
    try:
        a = on_change(sub)
        b = on_change(sub)
        # Only its own session deletes a dynamic subscription.
        with pytest.raises(RPCError) as e:
            other.dispatch(to_ele('<delete-subscription xmlns="%s"><id>%d</id></delete-subscription>' % (SN, a)))
        assert e.value.app_tag == "ietf-subscribed-notifications:no-such-subscription", e.value
        sub.dispatch(to_ele('<delete-subscription xmlns="%s"><id>%d</id></delete-subscription>' % (SN, a)))
        # kill-subscription (an administrator's): the subscriber is told.
        other.dispatch(to_ele('<kill-subscription xmlns="%s"><id>%d</id></kill-subscription>' % (SN, b)))
        got = take_until(sub, r"<subscription-terminated")
        assert "<id>%d</id>" % b in got[-1] and "no-such-subscription</reason>" in got[-1], got
        with pytest.raises(RPCError) as e:
            other.dispatch(to_ele('<kill-subscription xmlns="%s"><id>%d</id></kill-subscription>' % (SN, b)))
        assert e.value.app_tag == "ietf-subscribed-notifications:no-such-subscription"
        m.edit_config(target="running", config=config(iface("k0")))
        assert not [x for x in take_all(sub, 0.5) if "push-change-update" in x]
    finally:
        sub.close_session()
        other.close_session()


def test_bad_subscriptions_get_the_rfc_errors(server, m):
    cases = [
        ("<stream>nosuch</stream>", "ietf-subscribed-notifications:stream-unavailable"),
        ("<stream>NETCONF</stream><replay-start-time>2999-01-01T00:00:00Z</replay-start-time>",
         "ietf-subscribed-notifications:replay-unsupported"),
        ("<stream>NETCONF</stream><stop-time>2001-01-01T00:00:00Z</stop-time>", None),
        ("<stream>NETCONF</stream><replay-start-time>%s</replay-start-time><stop-time>1999-01-01T00:00:00Z"
         "</stop-time>" % LONG_AGO, None),
        ('<stream>NETCONF</stream><stream-xpath-filter>/*[</stream-xpath-filter>', None),
        ("<yp:datastore>ds:candidate</yp:datastore><yp:on-change/>", "ietf-yang-push:datastore-not-subscribable"),
        ("<yp:datastore>ds:running</yp:datastore><yp:periodic><yp:period>1</yp:period></yp:periodic>",
         "ietf-yang-push:period-unsupported"),
        ("<yp:datastore>ds:running</yp:datastore>", None),
        ("<stream-filter-name>x</stream-filter-name><stream>NETCONF</stream>",
         "ietf-subscribed-notifications:filter-unavailable"),
    ]
    for body, app_tag in cases:
        with pytest.raises(RPCError) as e:
            establish(m, body)
        assert e.value.tag in ("invalid-value", "missing-element", "bad-element"), (body, e.value)
        if app_tag:
            assert e.value.app_tag == app_tag, (body, e.value.app_tag, e.value)
    # The session can subscribe after all that; an RFC 5277 subscription cannot join them.
    on_change(m)
    with pytest.raises(RPCError) as e:
        m.create_subscription()
    assert e.value.tag == "in-use"


def test_a_subscriber_that_reads_nothing_is_terminated_and_others_go_on(server, m):
    m.edit_config(target="running", config=config(iface("z0")))
    stalled = server.raw(window_size=32768)
    reply = stalled.rpc('<establish-subscription xmlns="%s" xmlns:yp="%s" xmlns:ds="%s">'
                        '<yp:datastore>ds:running</yp:datastore><yp:on-change/></establish-subscription>'
                        % (SN, YP, DS))
    sid = int(re.search(r"<id[^>]*>(\d+)<", reply).group(1))
    # It reads nothing from now on. Ten sessions commit meanwhile.
    commit_in_parallel(server, "z")
    # Once it reads again it learns that its subscription was terminated, and why.
    deadline = time.time() + 60
    texts = [""]
    while "<subscription-terminated" not in texts[-1] and time.time() < deadline:
        texts.append(stalled.read())
    assert "<id>%d</id>" % sid in texts[-1] and "suspension-timeout</reason>" in texts[-1], texts[-1]
    assert "insufficient-resources</reason>" in texts[-2]  # subscription-suspended came first
    assert "does not keep up" in server.log_tail(400000)
    # The session itself goes on.
    assert "<ok/>" in stalled.rpc('<lock xmlns="%s"><target><candidate/></target></lock>' % NC, "102")
    stalled.close()
    assert server.alive()


def test_every_subscriber_gets_every_change_once_in_commit_order(server, m):
    m.edit_config(target="running", config=config(iface("o")))  # the container exists
    subs = [server.connect() for _ in range(3)]
    try:
        ids = [on_change(s, extra="<yp:sync-on-start>false</yp:sync-on-start>") for s in subs]
        writers = [server.connect() for _ in range(3)]

        def write(w, n):
            for i in range(20):
                w.edit_config(target="running", config=config(iface("o%d-%d" % (n, i))))

        threads = [threading.Thread(target=write, args=(w, n)) for n, w in enumerate(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for w in writers:
            w.close_session()
        orders = []
        for s, sid in zip(subs, ids):
            got = []
            while len(got) < 60:
                got += [x for x in take_until(s, r"push-change-update") if "push-change-update" in x]
            patches = [int(re.search(r"<patch-id>(\d+)</patch-id>", x).group(1)) for x in got]
            assert patches == sorted(set(patches)), patches  # once each, in commit order
            orders.append([edits(x) for x in got])
        assert orders[0] == orders[1] == orders[2]
        assert sorted(t for e in orders[0] for _, t in e) == sorted(
            "/ietf-interfaces:interfaces/interface=o%d-%d" % (n, i) for n in range(3) for i in range(20))
    finally:
        for s in subs:
            s.close_session()
