"""NACM (RFC 8341) end to end: an administrator (the first-start group admin) and a limited user,
with ncclient and ncstore-client. Reads are filtered silently (get, get-config, subtree and XPath
filters, with-defaults report-all), denied writes change nothing (all or nothing), denied
operations do not run, rule changes apply from the next RPC of every open session, commits are
checked against the committer, the rules survive a restart, the recovery user and --reset-nacm
get an operator back in, and a bad NACM configuration is refused."""

import os
import re
import subprocess

import pytest
from ncclient.operations.rpc import RPCError

import ncserver
from ncserver import NC, IF, IANA, config, iface, interfaces

NACM = "urn:ietf:params:xml:ns:yang:ietf-netconf-acm"
YANG = "urn:ietf:params:xml:ns:yang:1"
RECOVERY = "rescue"
SERVER_ARGS = ["--nacm-recovery-user", RECOVERY]
LIMITED = ("limited", "limited-Secret-1")
RESCUE = (RECOVERY, "rescue-Secret-1")


def nacm_config(body, attrs=""):
    return '<config xmlns="%s"><nacm xmlns="%s"%s>%s</nacm></config>' % (NC, NACM, attrs, body)


def rule(name, action, ops, path=None, module=None, rpc=None):
    body = "<name>%s</name>" % name
    if module:
        body += "<module-name>%s</module-name>" % module
    if rpc:
        body += "<rpc-name>%s</rpc-name>" % rpc
    if path:
        body += '<path xmlns:if="%s">%s</path>' % (IF, path)
    return body + "<access-operations>%s</access-operations><action>%s</action>" % (ops, action)


# The limited user's rules: no read of interface secret0, of descriptions and of `enabled` (a
# leaf with a default); create, update and delete of interface lab0 only.
LIMITED_RULES = "".join("<rule>%s</rule>" % r for r in (
    rule("hide-secret", "deny", "read", "/if:interfaces/if:interface[if:name='secret0']"),
    rule("hide-descriptions", "deny", "read", "/if:interfaces/if:interface/if:description"),
    rule("hide-enabled", "deny", "read", "/if:interfaces/if:interface/if:enabled"),
    rule("edit-lab", "permit", "create update delete", "/if:interfaces/if:interface[if:name='lab0']"),
))


def limited_policy(extra_rules=""):
    """Group `limited` and its rule-list, replacing what an earlier test left."""
    return nacm_config(
        "<groups><group><name>limited</name><user-name>limited</user-name></group></groups>"
        '<rule-list xmlns:nc="%s" nc:operation="replace"><name>limited</name><group>limited</group>%s%s'
        "</rule-list>" % (NC, LIMITED_RULES, extra_rules))


def nacm_state(m):
    """Running's /nacm (configuration and counters) as the administrator's <get> shows it."""
    return m.get(filter=("subtree", '<nacm xmlns="%s"/>' % NACM)).data_xml


def counters(m):
    xml = nacm_state(m)
    return {k: int(re.search(r"<%s>(\d+)</%s>" % (k, k), xml).group(1))
            for k in ("denied-operations", "denied-data-writes", "denied-notifications")}


def running_nacm(m):
    return m.get_config(source="running", filter=("subtree", '<nacm xmlns="%s"/>' % NACM)).data_xml


def rpc_error(call):
    with pytest.raises(RPCError) as e:
        call()
    return e.value


def notifications(m, containing=""):
    """The notifications `m` receives until none comes for 3 s (those whose XML contains
    `containing`)."""
    out = []
    while True:
        n = m.take_notification(block=True, timeout=3)
        if n is None:
            return out
        if containing in n.notification_xml:
            out.append(n.notification_xml)


def remove_test_changes(m, created):
    """Deletes interface `created` and secret0's description: what a test added to the store the
    `admin` fixture sets up."""
    m.edit_config(target="running", config=config(
        iface(created, op="delete"),
        iface("secret0", type_=None, extra='<description xmlns:nc="%s" nc:operation="remove"/>' % NC)))


@pytest.fixture(scope="module")
def users(server):
    # Added while the server runs, without a group: takes effect at once; the admin puts them in.
    server.add_user(*LIMITED)
    server.add_user(*RESCUE)
    return server


@pytest.fixture
def admin(users, m):
    """The administrator (user e2e, in group admin since the first start), the limited policy in
    force, and a store with eth0 (a description), secret0 and lab-free interfaces."""
    m.edit_config(target="running", config=limited_policy())
    m.edit_config(target="running", config=config(iface("eth0", description="hidden-text"), iface("secret0")))
    return m


@pytest.fixture
def limited(users, admin):
    session = users.connect(*LIMITED)
    yield session
    try:
        session.close_session()
    except Exception:
        pass


# ---- first start ---------------------------------------------------------------------------

def test_first_start_puts_the_users_of_the_users_file_into_group_admin(server, m):
    # The harness added user e2e before the first start: it is the administrator.
    state = nacm_state(m)
    assert "<name>admin</name><user-name>e2e</user-name>" in state, state
    assert "<module-name>*</module-name><access-operations>*</access-operations><action>permit</action>" in state


def test_a_fresh_server_prints_the_admin_login_with_its_group():
    s = ncserver.Server(name="nacm-first", user=False)
    try:
        s.start()
        with open(s.log_path) as f:
            log = f.read()
        found = re.search(r"login: admin / password: (\S+) \(NACM group admin: every operation permitted\)", log)
        assert found, log
        m = s.connect("admin", found.group(1))
        m.edit_config(target="running", config=config(iface("eth0")))
        assert "eth0" in interfaces(m)
        # A user added later is in no group: the RFC 8341 defaults, reads yes, writes no.
        s.add_user("later", "later-Secret-1")
        later = s.connect("later", "later-Secret-1")
        assert "eth0" in interfaces(later)
        assert rpc_error(lambda: later.edit_config(target="running", config=config(iface("eth1")))).tag \
            == "access-denied"
        later.close_session()
        m.close_session()
    finally:
        s.stop()
        s.cleanup()


# ---- reads -----------------------------------------------------------------------------------

def test_get_config_leaves_out_what_the_user_may_not_read(admin, limited):
    seen = interfaces(limited)
    assert set(seen) == {"eth0"}, "secret0 must be left out whole: %r" % seen
    assert "description" not in seen["eth0"] and "type" in seen["eth0"]
    full = interfaces(admin)
    assert set(full) == {"eth0", "secret0"} and full["eth0"]["description"] == "hidden-text"


def test_get_leaves_out_data_and_the_nacm_configuration(admin, limited):
    xml = limited.get().data_xml
    assert "secret0" not in xml and "hidden-text" not in xml
    assert "<name>eth0</name>" in xml
    assert "<nacm " not in xml and "denied-operations" not in xml, "/nacm is default-deny-all"
    assert "ietf-netconf-monitoring" in xml, "the rest of the state data is readable"
    assert "<denied-operations>" in admin.get().data_xml


def test_filters_cannot_select_by_what_the_user_may_not_read(admin, limited):
    by_description = ("subtree", '<interfaces xmlns="%s"><interface><description>hidden-text</description>'
                                 "</interface></interfaces>" % IF)
    by_key = ("subtree", '<interfaces xmlns="%s"><interface><name>secret0</name></interface></interfaces>' % IF)
    xpath = ("xpath", "/if:interfaces/if:interface[if:description='hidden-text']")
    for f in (by_description, by_key, xpath):
        kw = {"filter": f} if f[0] == "subtree" else {"filter": ("xpath", ({"if": IF}, f[1]))}
        assert "<name>" not in limited.get_config(source="running", **kw).data_xml, f
        assert "<name>" in admin.get_config(source="running", **kw).data_xml, f
    # What it may read, it finds through filters as usual.
    ok = ("xpath", ({"if": IF}, "/if:interfaces/if:interface[if:name='eth0']"))
    assert "<name>eth0</name>" in limited.get_config(source="running", filter=ok).data_xml
    assert "<name>eth0</name>" in limited.get(filter=("subtree", '<interfaces xmlns="%s"/>' % IF)).data_xml


def test_with_defaults_report_all_leaves_out_unreadable_defaults(admin, limited):
    from ncclient.xml_ import to_ele

    def get_all(m):
        return m.dispatch(to_ele(
            '<get-config xmlns="%s"><source><running/></source><with-defaults xmlns="%s">report-all</with-defaults>'
            "</get-config>" % (NC, ncserver.WD))).xml

    assert "<enabled>true</enabled>" in get_all(admin)
    reply = get_all(limited)
    assert "<name>eth0</name>" in reply and "enabled" not in reply and "secret0" not in reply


# ---- writes ----------------------------------------------------------------------------------

def test_a_denied_write_changes_nothing_and_names_the_first_denied_node(admin, limited):
    before = ncserver.all_config(admin)
    c0 = counters(admin)
    # lab0 is permitted, other0 is not: all or nothing.
    err = rpc_error(lambda: limited.edit_config(target="running", config=config(iface("lab0"), iface("other0"))))
    assert err.tag == "access-denied"
    assert err.path == "/ietf-interfaces:interfaces/interface[name='other0']", err.path
    assert ncserver.all_config(admin) == before
    err = rpc_error(lambda: limited.edit_config(target="running",
                                                config=config(iface("eth0", description="changed"))))
    assert err.tag == "access-denied" and err.path.endswith("interface[name='eth0']/description"), err.path
    assert ncserver.all_config(admin) == before
    c1 = counters(admin)
    assert c1["denied-data-writes"] == c0["denied-data-writes"] + 2, "one per refused request"
    assert c1["denied-operations"] == c0["denied-operations"]
    # What the rules permit goes through.
    limited.edit_config(target="running", config=config(iface("lab0", description="mine")))
    limited.edit_config(target="running", config=config(iface("lab0", op="delete", type_=None)))
    assert "lab0" not in interfaces(admin)


def test_copy_config_needs_read_access_to_the_whole_source(admin, limited):
    admin.edit_config(target="running", config=limited_policy(
        "<rule>%s</rule>" % rule("startup", "permit", "create update delete", module="*")))
    err = rpc_error(lambda: limited.copy_config(source="running", target="startup"))
    assert err.tag == "access-denied"
    assert "secret0" in err.path or "description" in err.path or "enabled" in err.path, err.path
    assert admin.get_config(source="startup").data_ele.find(".//{%s}interface" % IF) is None


# ---- operations ------------------------------------------------------------------------------

def test_kill_session_and_delete_config_are_denied_but_to_the_permitted(admin, limited):
    c0 = counters(admin)
    sid = admin.session_id
    err = rpc_error(lambda: limited.kill_session(sid))
    assert err.tag == "access-denied"
    assert err.type == "protocol"
    assert rpc_error(lambda: limited.delete_config(target="startup")).tag == "access-denied"
    assert counters(admin)["denied-operations"] == c0["denied-operations"] + 2
    assert "eth0" in interfaces(admin), "the session it tried to kill is alive"
    admin.delete_config(target="startup")  # group admin's rule permits it


def test_get_schema_denied_by_a_rule_then_permitted_on_the_same_session(admin, limited):
    limited.get_schema("ietf-interfaces")
    admin.edit_config(target="running", config=limited_policy(
        "<rule>%s</rule>" % rule("no-schemas", "deny", "exec", module="ietf-netconf-monitoring",
                                 rpc="get-schema")))
    # The limited session was open all along: the change applies from its next RPC.
    assert rpc_error(lambda: limited.get_schema("ietf-interfaces")).tag == "access-denied"
    admin.edit_config(target="running", config=limited_policy())
    assert "module ietf-interfaces" in limited.get_schema("ietf-interfaces").data


def test_a_rule_change_applies_to_the_next_rpc_of_the_session_that_made_it(admin):
    first = ('<rule xmlns:yang="%s" yang:insert="first">%s</rule>'
             % (YANG, rule("self-deny", "deny", "exec", module="ietf-netconf-monitoring", rpc="get-schema")))
    admin.edit_config(target="running", config=nacm_config(
        "<rule-list><name>admin</name>%s</rule-list>" % first))
    try:
        assert rpc_error(lambda: admin.get_schema("ietf-interfaces")).tag == "access-denied"
    finally:
        admin.edit_config(target="running", config=nacm_config(
            '<rule-list><name>admin</name><rule xmlns:nc="%s" nc:operation="delete"><name>self-deny</name>'
            "</rule></rule-list>" % NC))
    admin.get_schema("ietf-interfaces")


def test_rule_changes_apply_to_open_sessions(admin, limited):
    assert rpc_error(lambda: limited.edit_config(target="running", config=config(iface("other0")))).tag \
        == "access-denied"
    admin.edit_config(target="running", config=limited_policy(
        "<rule>%s</rule>" % rule("edit-other", "permit", "create update delete",
                                 "/if:interfaces/if:interface[if:name='other0']")))
    limited.edit_config(target="running", config=config(iface("other0")))
    assert "other0" in interfaces(admin)


# ---- notifications (RFC 8341 3.4.6) ----------------------------------------------------------

def test_notifications_a_rule_denies_are_not_sent_and_are_counted(admin, users):
    """A notification rule withholds config-change events from the limited user, live and
    replayed; session events still come; the administrator gets everything."""
    deny = "<rule>%s<notification-name>netconf-config-change</notification-name>" \
           "<access-operations>read</access-operations><action>deny</action></rule>" \
           % "<name>no-config-change</name><module-name>ietf-netconf-notifications</module-name>"
    admin.edit_config(target="running", config=limited_policy(deny))
    before = counters(admin)["denied-notifications"]
    sub_admin = users.connect()
    sub_limited = users.connect(*LIMITED)
    try:
        for m in (sub_admin, sub_limited):
            m.create_subscription(start_time="2000-01-01T00:00:00Z")
        admin.edit_config(target="running", config=config(iface("notified0")))
        users.connect(*LIMITED).close_session()  # a session-start and -end both may see

        seen_admin, seen_limited = notifications(sub_admin), notifications(sub_limited)
        assert any("notified0" in n for n in seen_admin)
        assert not any("netconf-config-change" in n for n in seen_limited)
        assert any("netconf-session-end" in n for n in seen_limited)
        assert any("replayComplete" in n for n in seen_limited)
        assert counters(admin)["denied-notifications"] > before
    finally:
        for m in (sub_admin, sub_limited):
            m.close_session()


def test_config_change_edits_name_only_what_the_subscriber_may_read(admin, users):
    """RFC 8341 3.4.5/3.4.6 with RFC 6470: an edit's target shows a path and its keys, so the
    limited user's config-change leaves out edits of secret0 and of descriptions, live and
    replayed, and gets no event for a change it may not see at all; the administrator gets
    every edit."""
    sub_admin = users.connect()
    sub_limited = users.connect(*LIMITED)
    try:
        for m in (sub_admin, sub_limited):
            m.create_subscription()
        # one edit-config: one readable change (pruned0) and two the limited user may not read
        admin.edit_config(target="running", config=config(
            iface("pruned0"), iface("secret0", description="changed"), iface("eth0", description="new-text")))
        # one edit-config of secret0 only: nothing of it may reach the limited user
        admin.edit_config(target="running", config=config(iface("secret0", description="again")))
        replay = users.connect(*LIMITED)
        replay.create_subscription(start_time="2000-01-01T00:00:00Z")

        seen_admin, seen_limited, replayed = (notifications(m, "netconf-config-change")
                                              for m in (sub_admin, sub_limited, replay))
        replay.close_session()
        assert len(seen_admin) == 2
        assert "secret0" in seen_admin[0] and "description" in seen_admin[0] and "pruned0" in seen_admin[0]
        assert len(seen_limited) == 1, seen_limited
        assert "pruned0" in seen_limited[0]
        assert "secret0" not in seen_limited[0] and "description" not in seen_limited[0]
        assert "changed-by" in seen_limited[0]
        mine = [n for n in replayed if "pruned0" in n]
        assert mine and all("secret0" not in n and "description" not in n for n in replayed)
    finally:
        remove_test_changes(admin, "pruned0")
        for m in (sub_admin, sub_limited):
            m.close_session()


def test_yang_push_sends_only_what_the_subscriber_may_read(admin, users):
    """RFC 8641 with RFC 8341: a YANG-Push subscriber's push-update and push-change-update hold only
    what it may read: the limited user never sees secret0 or a description, not even inside a
    created entry (the value is cut); the administrator sees everything."""
    from ncclient.xml_ import to_ele
    sn = "urn:ietf:params:xml:ns:yang:ietf-subscribed-notifications"
    establish = ('<establish-subscription xmlns="%s" xmlns:yp="urn:ietf:params:xml:ns:yang:ietf-yang-push" '
                 'xmlns:ds="urn:ietf:params:xml:ns:yang:ietf-datastores"><yp:datastore>ds:running</yp:datastore>'
                 '<yp:on-change/></establish-subscription>' % sn)
    sub_admin = users.connect()
    sub_limited = users.connect(*LIMITED)
    try:
        for m in (sub_admin, sub_limited):
            m.dispatch(to_ele(establish))
        admin.edit_config(target="running", config=config(
            iface("pushed0", description="hidden-text"), iface("secret0", description="changed")))
        seen_admin, seen_limited = (notifications(m, "push-") for m in (sub_admin, sub_limited))
        sync_admin, sync_limited = seen_admin[0], seen_limited[0]
        assert "<push-update" in sync_admin and "<name>secret0</name>" in sync_admin
        assert "<push-update" in sync_limited and "secret0" not in sync_limited and "<description>" not in sync_limited
        assert "<name>eth0</name>" in sync_limited
        changes_admin = "".join(seen_admin[1:])
        changes_limited = "".join(seen_limited[1:])
        assert "interface=secret0/description" in changes_admin and "hidden-text" in changes_admin
        assert "interface=pushed0" in changes_limited and "<name>pushed0</name>" in changes_limited
        assert "secret0" not in changes_limited and "hidden-text" not in changes_limited, changes_limited
    finally:
        remove_test_changes(admin, "pushed0")
        for m in (sub_admin, sub_limited):
            m.close_session()


def test_get_data_shows_only_what_the_user_may_read(admin, limited):
    """NMDA get-data reads through the same access checks as get-config, on the print path
    (running) and on the copy path (operational with origins, max-depth): no secret0, no
    description, no /nacm for the limited user."""
    from ncclient.xml_ import to_ele

    def get_data(m, datastore, extra=""):
        return m.dispatch(to_ele('<get-data xmlns="urn:ietf:params:xml:ns:yang:ietf-netconf-nmda" '
                                 'xmlns:ds="urn:ietf:params:xml:ns:yang:ietf-datastores"><datastore>ds:%s'
                                 "</datastore>%s</get-data>" % (datastore, extra))).xml

    for datastore, extra in (("running", ""), ("operational", "<with-origin/>"),
                             ("operational", "<max-depth>3</max-depth>")):
        mine = get_data(limited, datastore, extra)
        assert "<name>eth0</name>" in mine, (datastore, extra)
        assert "secret0" not in mine and "hidden-text" not in mine and "<rule-list>" not in mine, (datastore, extra)
        everything = get_data(admin, datastore, extra)
        assert "<name>secret0</name>" in everything and "<rule-list>" in everything, (datastore, extra)


def test_compare_shows_only_what_the_user_may_read(admin, limited):
    """The commit history's compare answers a limited user with the edit between two states as
    that user may read them: secret0 and the descriptions are not in it, the rest is."""
    from lxml import etree
    cc = "urn:ncstore:yang:ncstore-commits"

    def last_commit(m):
        reply = m.get(filter=("subtree", '<commits xmlns="%s"/>' % cc)).data_ele
        return int(reply.findall("{%s}commits/{%s}commit/{%s}id" % (cc, cc, cc))[-1].text)

    start = last_commit(admin)
    admin.edit_config(target="running", config=config(
        iface("cmp0"), iface("secret0", description="compared"), iface("eth0", description="other-text")))
    try:
        def answer(m):
            body = '<compare xmlns="%s"><from>%d</from></compare>' % (cc, start)
            return m.dispatch(etree.fromstring(body)).xml

        full, seen = answer(admin), answer(limited)
        assert "cmp0" in full and "secret0" in full and "other-text" in full
        assert "cmp0" in seen
        assert "secret0" not in seen and "description" not in seen and "other-text" not in seen
    finally:
        remove_test_changes(admin, "cmp0")


# ---- candidate and commit --------------------------------------------------------------------

def test_commit_is_checked_against_the_committer(admin, limited):
    before = ncserver.all_config(admin)
    assert rpc_error(lambda: limited.edit_config(target="candidate", config=config(iface("other1")))).tag \
        == "access-denied"
    admin.edit_config(target="candidate", config=config(iface("other1")))
    err = rpc_error(lambda: limited.commit())
    assert err.tag == "access-denied" and "other1" in err.path
    assert ncserver.all_config(admin) == before
    assert "other1" in interfaces(admin, source="candidate"), "a refused commit keeps the candidate"
    admin.commit()
    assert "other1" in interfaces(admin)
    # The limited user commits what its rules permit.
    limited.edit_config(target="candidate", config=config(iface("lab0")))
    limited.commit()
    assert "lab0" in interfaces(admin)


# ---- bad configurations -----------------------------------------------------------------------

def test_a_bad_nacm_configuration_is_refused_and_changes_nothing(admin, limited):
    before = running_nacm(admin)
    unknown_group = nacm_config("<rule-list><name>typo</name><group>no-such-group</group></rule-list>")
    err = rpc_error(lambda: admin.edit_config(target="running", config=unknown_group))
    assert err.tag == "invalid-value"
    assert "no-such-group" in err.message and "rule-list[name='typo']" in err.path, (err.message, err.path)
    bad_path = nacm_config('<rule-list><name>limited</name><rule><name>bad</name><path xmlns:if="%s">'
                           "/if:interfaces/if:no-such-node</path><action>permit</action></rule></rule-list>" % IF)
    err = rpc_error(lambda: admin.edit_config(target="running", config=bad_path))
    assert err.tag == "invalid-value" and "rule[name='bad']" in err.path, (err.message, err.path)
    assert running_nacm(admin) == before
    # The same through the candidate: validate says so, and commit refuses it.
    admin.edit_config(target="candidate", config=unknown_group)
    assert rpc_error(lambda: admin.validate(source="candidate")).tag == "invalid-value"
    assert rpc_error(lambda: admin.commit()).tag == "invalid-value"
    admin.discard_changes()
    assert running_nacm(admin) == before
    # The old rules are still in force.
    assert set(interfaces(limited)) == {"eth0"}


# ---- ncstore-client --------------------------------------------------------------------------

def test_ncstore_client_sees_the_same(admin, users, tmp_path):
    client = os.environ.get("NCSTORE_CLIENT")
    assert client and os.access(client, os.X_OK), "NCSTORE_CLIENT must name ncstore-client"

    def run(user, password, *args):
        return subprocess.run([client, "--port", str(users.port), "--user", user, "--password", password,
                               "--schema-dir", str(tmp_path / "schemas")] + list(args),
                              capture_output=True, text=True, timeout=120)

    out = run(*LIMITED, "get-config", "--source", "running")
    assert out.returncode == 0, out.stderr
    assert "<name>eth0</name>" in out.stdout and "secret0" not in out.stdout and "hidden-text" not in out.stdout
    assert "secret0" in run(ncserver.USER, ncserver.PASSWORD, "get-config", "--source", "running").stdout
    edit = tmp_path / "edit.xml"
    edit.write_text(config(iface("other9")))
    out = run(*LIMITED, "edit-config", "--target", "running", "--config", str(edit))
    assert out.returncode != 0 and "access-denied" in out.stderr, (out.returncode, out.stderr)
    assert "other9" not in interfaces(admin)


# ---- restart and recovery --------------------------------------------------------------------

def test_the_recovery_user_is_not_checked(admin, users):
    rescue = users.connect(*RESCUE)
    try:
        assert "<name>limited</name>" in running_nacm(rescue), "reads /nacm (default-deny-all for others)"
        rescue.edit_config(target="running", config=config(iface("rescued")))
        rescue.delete_config(target="startup")
    finally:
        rescue.close_session()
    assert "rescued" in interfaces(admin)


def test_nacm_survives_a_restart(admin, users):
    admin.close_session()
    users.restart()
    again = users.connect()
    limited = users.connect(*LIMITED)
    try:
        assert "<name>limited</name>" in running_nacm(again)
        assert set(interfaces(limited)) == {"eth0"}
        assert rpc_error(lambda: limited.edit_config(target="running", config=config(iface("other0")))).tag \
            == "access-denied"
    finally:
        limited.close_session()
        again.close_session()


def ncstored(data_dir, *args, password=None):
    return subprocess.run([ncserver.ncstored_binary(), "--data-dir", data_dir] + list(args),
                          input=(password + "\n") if password else None, capture_output=True, text=True,
                          timeout=120)


def test_reset_nacm_gets_a_locked_out_operator_back_in():
    s = ncserver.Server(name="nacm-reset")
    try:
        s.start()
        m = s.connect()
        # The administrator denies itself every write: from its next RPC on, it is locked out.
        m.edit_config(target="running", config=nacm_config(
            '<rule-list><name>admin</name><rule xmlns:nc="%s" nc:operation="replace"><name>permit-all</name>'
            "<module-name>*</module-name><access-operations>create update delete</access-operations>"
            "<action>deny</action></rule></rule-list>" % NC))
        assert rpc_error(lambda: m.edit_config(target="running", config=config(iface("eth0")))).tag \
            == "access-denied"
        # Refused while the server runs, and nothing changes.
        r = ncstored(s.data_dir, "--reset-nacm")
        assert r.returncode == 1 and "stop it first" in r.stderr, r.stderr
        assert rpc_error(lambda: m.edit_config(target="running", config=config(iface("eth0")))).tag \
            == "access-denied"
        m.close_session()
        s.stop()
        r = ncstored(s.data_dir, "--reset-nacm")
        assert r.returncode == 0, r.stderr
        assert "group admin (every operation permitted): e2e" in r.stdout, r.stdout
        saved = [f for f in os.listdir(s.data_dir) if f.startswith("nacm-before-reset-")]
        assert len(saved) == 1
        with open(os.path.join(s.data_dir, saved[0])) as f:
            assert "<action>deny</action>" in f.read()
        s.start()
        m = s.connect()
        m.edit_config(target="running", config=config(iface("eth0")))
        assert "eth0" in interfaces(m)
        m.close_session()
    finally:
        s.stop()
        s.cleanup()


def test_add_user_with_a_group():
    s = ncserver.Server(name="nacm-group")
    try:
        # Offline, before the first start: the store is created with the first-start rules.
        r = ncstored(s.data_dir, "--add-user", "alice", "--group", "admin", password="alice-Secret-1")
        assert r.returncode == 0 and "user alice is in NACM group admin" in r.stdout, r.stderr
        r = ncstored(s.data_dir, "--add-user", "olga", "--group", "operators", password="olga-Secret-1")
        assert r.returncode == 0 and "no rule-list names group operators" in r.stdout, r.stdout
        s.start()
        alice = s.connect("alice", "alice-Secret-1")
        alice.edit_config(target="running", config=config(iface("eth0")))
        olga = s.connect("olga", "olga-Secret-1")
        assert "eth0" in interfaces(olga)
        assert rpc_error(lambda: olga.edit_config(target="running", config=config(iface("eth1")))).tag \
            == "access-denied"
        state = nacm_state(alice)
        assert "<name>operators</name><user-name>olga</user-name>" in state, state
        # While the server runs: refused with the way to do it, and the user is not created.
        r = ncstored(s.data_dir, "--add-user", "pete", "--group", "operators", password="pete-Secret-1")
        assert r.returncode == 1 and "a server is running" in r.stderr and "<user-name>pete</user-name>" in r.stderr
        with pytest.raises(Exception):
            s.connect("pete", "pete-Secret-1")
        olga.close_session()
        alice.close_session()
    finally:
        s.stop()
        s.cleanup()
