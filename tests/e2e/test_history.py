"""The commit history (ncstore-commits) over SSH with ncclient: every commit of running is listed
in <get> with its user, session and comment; rollback to a commit restores exactly the
configuration right after it (ordered-by-user order included) as one new commit; an unknown
commit is refused; retention drops the oldest; the history survives a restart and a kill -9;
compare answers the edit-config that makes the state after one commit into another."""

import re

import pytest
from lxml import etree
from ncclient.operations.rpc import RPCError

from ncserver import NACM, NC, Server, config, edits_until_kill, iface, interfaces

CC = "urn:ncstore:yang:ncstore-commits"
YANG = "urn:ietf:params:xml:ns:yang:1"
# The ordered-by-user lists of the server's models these tests write to (RFC 8341).
USER_ORDERED = {"{%s}rule-list" % NACM, "{%s}rule" % NACM}


def commits(m):
    """The commits <get> lists, oldest first: [{leaf: text}]."""
    reply = m.get(filter=("subtree", '<commits xmlns="%s"/>' % CC))
    out = []
    for e in reply.data_ele.findall("{%s}commits/{%s}commit" % (CC, CC)):
        out.append({leaf.tag.split("}", 1)[1]: leaf.text or "" for leaf in e})
    return out


def last_id(m):
    listed = commits(m)
    return int(listed[-1]["id"]) if listed else 0


def edit(m, content, comment=None, default_operation=None, target="running"):
    """edit-config with the ncstore-commits comment (raw: ncclient does not know the leaf)."""
    body = '<edit-config xmlns="%s"><target><%s/></target>' % (NC, target)
    if default_operation:
        body += "<default-operation>%s</default-operation>" % default_operation
    body += content
    if comment is not None:
        body += '<comment xmlns="%s">%s</comment>' % (CC, comment)
    body += "</edit-config>"
    m.dispatch(etree.fromstring(body))


def commit(m, comment):
    m.dispatch(etree.fromstring('<commit xmlns="%s"><comment xmlns="%s">%s</comment></commit>'
                                % (NC, CC, comment)))


def rollback(m, commit_id, comment=None):
    """Returns the new commit's id (None when the reply carries none)."""
    body = '<rollback xmlns="%s"><id>%d</id>' % (CC, commit_id)
    if comment is not None:
        body += "<comment>%s</comment>" % comment
    body += "</rollback>"
    reply = etree.fromstring(m.dispatch(etree.fromstring(body)).xml.encode())
    found = reply.find("{%s}id" % CC)
    return int(found.text) if found is not None else None


def compare(m, from_id, to_id=None):
    """The <config> element compare answers (None when nothing changed)."""
    body = '<compare xmlns="%s"><from>%d</from>%s</compare>' % (
        CC, from_id, "<to>%d</to>" % to_id if to_id is not None else "")
    reply = etree.fromstring(m.dispatch(etree.fromstring(body)).xml.encode())
    return reply.find("{%s}config" % CC)


def apply_compared(m, found):
    """edit-config of running with what compare answered, as a client would send it."""
    if found is None:
        return
    cfg = etree.Element("{%s}config" % NC)
    for child in found:
        cfg.append(child)
    m.edit_config(target="running", config=etree.tostring(cfg).decode())


def rule_lists(names):
    """NACM rule-lists without rules (they change nobody's access), in this order."""
    return ('<config xmlns="%s"><nacm xmlns="%s">%s</nacm></config>'
            % (NC, NACM, "".join("<rule-list><name>%s</name><group>admin</group></rule-list>" % n
                                 for n in names)))


def insert_rule_list(name, where, anchor=None):
    key = ' yang:key="[name=\'%s\']"' % anchor if anchor else ""
    return ('<config xmlns="%s"><nacm xmlns="%s"><rule-list xmlns:yang="%s" yang:insert="%s"%s>'
            "<name>%s</name><group>admin</group></rule-list></nacm></config>"
            % (NC, NACM, YANG, where, key, name))


def delete_rule_list(name):
    return ('<config xmlns="%s"><nacm xmlns="%s"><rule-list xmlns:nc="%s" nc:operation="delete">'
            "<name>%s</name></rule-list></nacm></config>" % (NC, NACM, NC, name))


def canonical(element):
    """An element as text with the children of system-ordered lists sorted (their order is not
    part of the configuration) and ordered-by-user entries kept in their order."""
    children = [canonical(c) for c in element]
    keyed = []
    for index, (child, text) in enumerate(zip(element, children)):
        keyed.append((child.tag, index if child.tag in USER_ORDERED else -1, text))
    keyed.sort()
    return "<%s>%s%s</%s>" % (element.tag, (element.text or "").strip(),
                              "".join(k[2] for k in keyed), element.tag)


def dump(m):
    """running's whole configuration, canonical, and the exact order of the NACM rule-lists."""
    data = m.get_config(source="running").data_ele
    order = [e.text for e in data.findall("{%s}nacm/{%s}rule-list/{%s}name" % (NACM, NACM, NACM))]
    return canonical(data), order


def test_history_lists_every_commit_with_who_and_why(m):
    start = last_id(m)
    edit(m, config(iface("h0", description="new"), iface("h1")), comment="create two")
    edit(m, config(iface("h0", type_=None, description="merged")), comment="merge")
    edit(m, config(iface("h1", description="replaced", op="replace")))
    edit(m, config(iface("h0", type_=None, op="delete")), comment="delete h0")
    edit(m, rule_lists(["ra", "rb"]), comment="rule lists")
    edit(m, insert_rule_list("rc", "first"), comment="insert first")
    edit(m, config(iface("h2")), target="candidate")
    commit(m, "from candidate")
    assert "h2" in interfaces(m)

    listed = [c for c in commits(m) if int(c["id"]) > start]
    assert [c.get("comment") for c in listed] == [
        "create two", "merge", None, "delete h0", "rule lists", "insert first", "from candidate"]
    assert [c["operation"] for c in listed] == ["edit"] * 6 + ["commit"]
    for c in listed:
        assert c["user"] == "e2e"
        assert int(c["session-id"]) == int(m.session_id)
        assert c["source-host"] == "127.0.0.1"
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|\+00:00)$", c["time"]), c["time"]
        assert int(c["changes"]) >= 1
    ids = [int(c["id"]) for c in listed]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert int(listed[3]["changes"]) == 1  # one interface deleted
    assert int(listed[4]["changes"]) == 2  # two rule-lists created


def test_rollback_restores_the_exact_configuration_of_any_commit(m):
    states = {}

    def record():
        states[last_id(m)] = dump(m)

    for content, default_operation in (
            (config(iface("r0", description="zero"), iface("r1"), iface("r2")), None),
            (rule_lists(["la", "lb", "lc"]), None),
            (insert_rule_list("ld", "first"), None),
            (config(iface("r1", op="delete"), iface("r3", description="three")), None),
            (delete_rule_list("lb"), None),
            (insert_rule_list("la", "after", anchor="lc"), None),  # a move
            (config(iface("r0", type_=None, description="changed")), None),
            (config(iface("r2", op="delete")), "none")):
        edit(m, content, default_operation=default_operation)
        record()
    assert dump(m)[1] == states[last_id(m)][1]

    order = list(states)
    # Back to the middle, to the oldest, to the newest: each is one new commit with the
    # exact configuration of its target, rule-list order included.
    for target in (order[3], order[0], order[-1], order[2]):
        before = last_id(m)
        new_id = rollback(m, target, comment="back to %d" % target)
        assert dump(m) == states[target], "rollback to commit %d" % target
        assert new_id is not None and new_id > before
        listed = commits(m)
        assert int(listed[-1]["id"]) == new_id
        assert listed[-1]["comment"] == "back to %d" % target
        assert listed[-1]["user"] == "e2e"
        assert listed[-1]["operation"] == "edit"  # an edit of only what it undoes
    # Rolling back to where running is changes nothing: no new commit.
    here = last_id(m)
    assert rollback(m, here) is None
    assert last_id(m) == here
    # A default comment says what happened.
    rollback(m, order[1])
    assert commits(m)[-1]["comment"] == "rollback to commit %d" % order[1]
    assert dump(m) == states[order[1]]


def test_compare_answers_the_edit_from_one_commit_to_another(m):
    states = {}
    for content in (config(iface("c0", description="zero"), iface("c1"), iface("c2")),
                    rule_lists(["ca", "cb", "cc"]),
                    insert_rule_list("cd", "first"),
                    config(iface("c1", op="delete"), iface("c3", description="three")),
                    insert_rule_list("ca", "after", anchor="cc"),  # a move
                    delete_rule_list("cb"),
                    config(iface("c0", type_=None, description="changed"))):
        edit(m, content)
        states[last_id(m)] = dump(m)
    ids = list(states)
    now = ids[-1]
    # With no --to, against running now: nothing changed since the last commit.
    assert compare(m, now) is None
    for start, end in ((ids[0], None), (ids[1], ids[4]), (ids[5], ids[2]), (ids[3], ids[0])):
        found = compare(m, start, end)
        assert found is not None
        attrs = {a for e in found.iter() for a in e.attrib}
        assert "{%s}operation" % NC in attrs
        # none of the annotations of a libyang diff is left in the edit
        assert "{%s}operation" % YANG not in attrs and not any("orig-" in a for a in attrs)
        # Running put back to `start`, then the comparison applied as an edit-config: `end`.
        rollback(m, start)
        assert dump(m) == states[start]
        apply_compared(m, found)
        assert dump(m) == states[end if end is not None else now], "compare %d -> %s" % (start, end)
        rollback(m, now)  # for the next pair, "now" is the last recorded state again
    # A commit the history does not hold: invalid-value, as for rollback.
    with pytest.raises(RPCError) as e:
        compare(m, 10 ** 9)
    assert e.value.tag == "invalid-value"


def test_rollback_of_an_unknown_commit_is_refused(m):
    edit(m, config(iface("u0")))
    before = dump(m)
    with pytest.raises(RPCError) as e:
        rollback(m, 10 ** 15)
    assert e.value.tag == "invalid-value"
    assert "not in the commit history" in str(e.value)
    assert dump(m) == before


def test_rollback_is_refused_while_another_session_holds_the_lock(m, m2):
    edit(m, config(iface("k0")))
    target = last_id(m)
    edit(m, config(iface("k1")))
    before = dump(m)
    m2.lock(target="running")
    try:
        with pytest.raises(RPCError) as e:
            rollback(m, target)
        assert e.value.tag == "in-use"
        assert dump(m) == before
    finally:
        m2.unlock(target="running")
    rollback(m, target)
    assert "k1" not in interfaces(m)


@pytest.fixture(scope="module")
def small_server():
    s = Server(extra_args=("--history-max-commits", "3"), name="history-retention")
    s.start()
    yield s
    s.stop()
    s.cleanup()


def test_retention_drops_the_oldest(small_server):
    m = small_server.connect()
    try:
        for i in range(6):
            edit(m, config(iface("ret%d" % i)), comment="c%d" % i)
        listed = commits(m)
        assert [c["comment"] for c in listed] == ["c3", "c4", "c5"]
        dropped = int(listed[0]["id"]) - 1
        with pytest.raises(RPCError) as e:
            rollback(m, dropped)
        assert e.value.tag == "invalid-value"
        rollback(m, int(listed[0]["id"]))
        assert sorted(interfaces(m)) == ["ret0", "ret1", "ret2", "ret3"]
        assert len(commits(m)) == 3
    finally:
        m.close_session()


def test_history_survives_a_restart_and_a_kill(small_server):
    m = small_server.connect()
    edit(m, config(iface("sv0")), comment="before restart")
    acknowledged = commits(m)
    m.close_session()

    small_server.restart()
    m = small_server.connect()
    assert commits(m) == acknowledged
    edit(m, config(iface("sv1")), comment="before kill")
    acknowledged = commits(m)
    m.close_session()

    small_server.kill()
    small_server.start()
    m = small_server.connect()
    try:
        assert commits(m) == acknowledged
        assert acknowledged[-1]["comment"] == "before kill"
        rollback(m, int(acknowledged[-2]["id"]))
        assert "sv1" not in interfaces(m)
    finally:
        m.close_session()


def test_kill_9_amid_commits_leaves_history_and_data_in_step(small_server):
    """Writers commit one interface each, with its name as comment, until kill -9. After the
    restart every acknowledged commit is in the history and in running, and the history lists a
    commit exactly for the interfaces running holds: an edit the kill cut off is in both (durable
    before its reply went out) or in neither, never in one alone."""
    small_server.extra_args = ["--history-max-commits", "100000"]
    small_server.restart()
    acknowledged = set(edits_until_kill(
        small_server, lambda s, name: edit(s, config(iface(name)), comment=name), "hk", at_least=60))
    assert acknowledged, "no commit was acknowledged before the kill"

    small_server.start()
    m = small_server.connect()
    try:
        listed = {c["comment"] for c in commits(m) if c["comment"].startswith("hk")}
        present = {n for n in interfaces(m) if n.startswith("hk")}
        assert acknowledged <= present, "acknowledged but not in running: %s" % sorted(acknowledged - present)[:5]
        assert acknowledged <= listed, "acknowledged but not in the history: %s" % sorted(acknowledged - listed)[:5]
        assert listed == present, ("history and running disagree after kill -9: only in the history %s, "
                                   "only in running %s" % (sorted(listed - present)[:5], sorted(present - listed)[:5]))
    finally:
        m.close_session()
        small_server.extra_args = ["--history-max-commits", "3"]
        small_server.restart()


def test_history_off_records_nothing_and_drops_what_was_kept(small_server):
    """--history-max-commits 0: no commit listed, rollback and compare refused with
    operation-not-supported, edits unaffected; turned on again, the history starts afresh (what an
    earlier start kept is gone: commits made while it was off could not be undone)."""
    m = small_server.connect()
    edit(m, config(iface("off0")), comment="before off")
    kept = last_id(m)
    m.close_session()
    small_server.extra_args = ["--history-max-commits", "0"]
    small_server.restart()
    m = small_server.connect()
    try:
        assert commits(m) == []
        edit(m, config(iface("off1")), comment="while off")
        assert "off1" in interfaces(m) and commits(m) == []
        for refused in (lambda: rollback(m, kept), lambda: compare(m, kept)):
            with pytest.raises(RPCError) as e:
                refused()
            assert e.value.tag == "operation-not-supported"
            assert "history is off" in e.value.message
    finally:
        m.close_session()
        small_server.extra_args = ["--history-max-commits", "3"]
        small_server.restart()
    m = small_server.connect()
    try:
        assert commits(m) == []
        edit(m, config(iface("off2")), comment="on again")
        listed = commits(m)
        assert [c["comment"] for c in listed] == ["on again"]
        rollback(m, int(listed[0]["id"]))  # the one commit kept can be gone back to
        assert "off2" in interfaces(m) and "off1" in interfaces(m)
    finally:
        m.close_session()


def test_ncstore_client_history_and_rollback(server, m, tmp_path):
    """The project's libnetconf2 client: `history` lists the commits, `rollback --id --comment`
    goes back and prints the new commit's id."""
    import re
    import ncserver

    def run(*args):
        return ncserver.run_client(server, tmp_path / "schemas", *args)

    edit(m, config(iface("cli0")), comment="cli base")
    target = last_id(m)
    edit(m, config(iface("cli1")), comment="cli later")
    later = last_id(m)
    listing = run("history")
    assert "<comment>cli base</comment>" in listing and "<comment>cli later</comment>" in listing
    assert "<id>%d</id>" % target in listing
    out = run("rollback", "--id", str(target), "--comment", "from <the> client")
    new_id = int(re.search(r"<id[^>]*>(\d+)</id>", out).group(1))
    assert new_id == last_id(m)
    assert commits(m)[-1]["comment"] == "from <the> client"
    assert "cli1" not in interfaces(m) and "cli0" in interfaces(m)
    # compare: what changed since the commit with cli1, as an edit (cli1 removed)
    out = run("compare", "--from", str(later))
    assert "cli1" in out and "remove" in out and "cli0" not in out


def test_ncstore_db_history_reads_the_journal_beside_the_running_server(server, m):
    """`ncstore-db history` reads the history from the store's file (no server needed, and beside
    a running one): the commits <get> lists, and with an id that commit's changes by path."""
    import os
    import subprocess
    import ncserver

    db = os.environ.get("NCSTORE_DB")
    assert db and os.access(db, os.X_OK), "NCSTORE_DB must name ncstore-db"

    def run(*args):
        out = subprocess.run([db, "--data-dir", server.data_dir, "history"] + list(args),
                             capture_output=True, text=True, timeout=120)
        return out.returncode, out.stdout, out.stderr

    edit(m, config(iface("db0")))  # the first interface creates /interfaces: a change of its own
    edit(m, config(iface("db1")), comment="listed offline")
    listed = commits(m)
    rc, out, err = run()
    assert rc == 0 and err == "", err
    lines = out.splitlines()
    assert lines[0].split("\t") == ["id", "time", "user", "session", "origin", "changes", "bytes", "comment"]
    rows = [line.split("\t") for line in lines[1:]]
    assert [r[0] for r in rows] == [c["id"] for c in listed]
    assert rows[-1][2] == ncserver.USER and rows[-1][4] == "edit" and rows[-1][7] == "listed offline"
    assert [r[5] for r in rows] == [c["changes"] for c in listed]

    rc, out, err = run(listed[-1]["id"])
    assert rc == 0 and err == "", err
    assert out.splitlines()[2:] == ["  create /ietf-interfaces:interfaces/interface[name='db1']"]
    rc, out, err = run("999999")
    assert rc == 1 and "commit 999999 is not in the history" in err
    rc, out, err = run("x")
    assert rc == 1 and "must be a commit id" in err
