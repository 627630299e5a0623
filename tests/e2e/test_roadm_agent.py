"""ncstore-roadm-agent (app/roadm, docs/roadm-device.md) with ncstored serving the complete
official Open ROADM 2.2.1 device set, driven with ncclient as a controller would: info, RPCs,
the agent's verify rules, alarms and their notifications, PM counters, change-notification,
faults through the control FIFO, the database RPCs, and resume after kill -9.

Needs ../shared/yang/openroadm/2.2.1-all (NCSTORE_SHARED_DIR): skipped without it, failed
under CI=true (tests/shared_data.py). Environment: NCSTORED (ctest sets it); the agent is found
beside it in the build tree (app/roadm/ncstore-roadm-agent) or in $NCSTORE_ROADM_AGENT."""

import os
import re
import socket
import subprocess
import sys
import time

import pytest
from lxml import etree
from ncclient.operations.rpc import RPCError
from ncclient.xml_ import to_ele

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import ncserver  # noqa: E402
import shared_data  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
NEEDS = [("yang/openroadm/2.2.1-all", "the complete official Open ROADM 2.2.1 device models")]
_reason = shared_data.missing(NEEDS)
if _reason:
    if shared_data.ci():
        raise RuntimeError("CI=true, nothing may be skipped: " + _reason)
    pytest.skip(_reason, allow_module_level=True)

YANG = str(shared_data.shared_dir() / "yang/openroadm/2.2.1-all")
DEV = "http://org/openroadm/device"
ALARM = "http://org/openroadm/alarm"
PM = "http://org/openroadm/pm"
DB = "http://org/openroadm/database"
OPS = "http://org/openroadm/de/operations"
CONNECTION = "SRG1-PP1-TXRX-DEG1-TTP-TXRX-193.1"


def agent_binary():
    path = os.environ.get("NCSTORE_ROADM_AGENT") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(ncserver.ncstored_binary()))), "app", "roadm",
        "ncstore-roadm-agent")
    assert os.access(path, os.X_OK), "no agent at %s" % path
    return path


class Agent:
    def __init__(self, server):
        self.server = server
        self.files = os.path.join(server.tmp, "roadm-agent")
        self.state = os.path.join(self.files, "agent.state")
        self.log = os.path.join(server.tmp, "agent.log")
        self.proc = None

    def args(self):
        return [agent_binary(), "--socket", os.path.join(self.server.data_dir, "app.sock"), "--yang-dir", YANG,
                "--profile", os.path.join(REPO, "app/roadm/examples/device.profile"), "--files-dir", self.files]

    def start(self):
        out = open(self.log, "a")
        self.proc = subprocess.Popen(self.args(), stdout=subprocess.PIPE, stderr=out, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("ncstore-roadm-agent: session "), line + self.log_text()
        return line

    def commit(self):
        try:
            return int(open(self.state).read())
        except (OSError, ValueError):
            return 0

    def fault(self, line):
        subprocess.run(self.args()[:1] + ["--files-dir", self.files, "--fault", line], check=True, timeout=10)

    def log_text(self):
        return open(self.log).read() if os.path.exists(self.log) else ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


@pytest.fixture(scope="module")
def device():
    server = ncserver.Server(name="roadm-agent", extra_args=["--yang-dir", YANG, "--app-root-user", ncserver.USER])
    server.start()
    agent = Agent(server)
    agent.start()
    try:
        with server.connect() as m:
            m.edit_config(target="running", config=config(
                open(os.path.join(REPO, "app/roadm/examples/roadm.xml")).read()))
        wait_for(lambda: agent.commit() > 0, "the agent applied nothing")
        yield server, agent
    finally:
        agent.stop()
        server.stop()
        server.cleanup()


def wait_for(predicate, what, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def xml_of(error):
    return etree.tostring(error.xml, encoding="unicode")


def opers(xml):
    return re.findall(r"<operational-state>([^<]*)<", xml)


def get(m, xml):
    return m.get(filter=("subtree", xml)).data_xml


def rpc(m, xml):
    return m.dispatch(to_ele(xml)).xml


def config(xml):
    return '<config xmlns="urn:ietf:params:xml:ns:netconf:base:1.0">%s</config>' % xml


def device_edit(body):
    return config('<org-openroadm-device xmlns="%s">%s</org-openroadm-device>' % (DEV, body))


def port_admin(cp, port, state):
    return device_edit("<circuit-packs><circuit-pack-name>%s</circuit-pack-name><ports><port-name>%s</port-name>"
                       "<administrative-state>%s</administrative-state></ports></circuit-packs>" % (cp, port, state))


def test_info_has_node_id_vendor_and_the_device_clock(device):
    server, _ = device
    with server.connect() as m:
        info = get(m, '<org-openroadm-device xmlns="%s"><info/></org-openroadm-device>' % DEV)
    assert "<node-id>ROADM-A1</node-id>" in info
    assert "<vendor>ncstore</vendor>" in info and "<serial-id>NCS0000001</serial-id>" in info
    assert "<max-degrees>2</max-degrees>" in info and "<openroadm-version>2.2</openroadm-version>" in info
    assert re.search(r"<current-datetime>\d{4}-\d\d-\d\dT", info), info


def test_operational_state_follows_administrative_state(device):
    server, agent = device
    flt = ('<org-openroadm-device xmlns="%s"><interface><name>SRG1-PP1-TXRX-nmc-193.1</name></interface>'
           '<circuit-packs><circuit-pack-name>3/0</circuit-pack-name></circuit-packs></org-openroadm-device>' % DEV)
    with server.connect() as m:
        state = get(m, flt)
        assert "<vendor>ncstore</vendor>" in state
        assert len(opers(state)) >= 6 and set(opers(state)) == {"inService"}, state   # pack, 4 ports, interface
        # The circuit-pack out of service takes its ports and the interfaces on them along.
        m.edit_config(target="running", config=device_edit(
            "<circuit-packs><circuit-pack-name>3/0</circuit-pack-name>"
            "<administrative-state>outOfService</administrative-state></circuit-packs>"))
        try:
            wait_for(lambda: set(opers(get(m, flt))) == {"outOfService"}, "the state did not follow")
        finally:
            m.edit_config(target="running", config=device_edit(
                "<circuit-packs><circuit-pack-name>3/0</circuit-pack-name>"
                "<administrative-state>inService</administrative-state></circuit-packs>"))
        wait_for(lambda: set(opers(get(m, flt))) == {"inService"}, "the state did not come back")


def test_led_control_answers_ok(device):
    server, _ = device
    with server.connect() as m:
        reply = rpc(m, '<led-control xmlns="%s"><circuit-pack-name>1/0</circuit-pack-name><enabled>true</enabled>'
                       '</led-control>' % DEV)
        assert "Successful" in reply, reply
        alarms = get(m, '<active-alarm-list xmlns="%s"/>' % ALARM)
        assert "circuit-pack:1/0:equipmentLedOn" in alarms
        rpc(m, '<led-control xmlns="%s"><circuit-pack-name>1/0</circuit-pack-name><enabled>false</enabled>'
               '</led-control>' % DEV)
        assert "equipmentLedOn" not in get(m, '<active-alarm-list xmlns="%s"/>' % ALARM)


def test_get_connection_port_trail_returns_the_configured_ports(device):
    server, _ = device
    with server.connect() as m:
        reply = rpc(m, '<get-connection-port-trail xmlns="%s"><connection-name>%s</connection-name>'
                       '</get-connection-port-trail>' % (DEV, CONNECTION))
        assert ">Successful</status>" in reply, reply
        ports = re.findall(r"<(?:\w+:)?circuit-pack-name>([^<]*)</(?:\w+:)?circuit-pack-name>\s*"
                           r"<(?:\w+:)?port-name>([^<]*)<", reply)
        # The add/drop port, the SRG's port to degree 1 and the degree's port to the SRG (the
        # physical link), the line port.
        assert ports == [("3/0", "PP1"), ("3/0", "CP-DEG1"), ("1/0", "CTP-SRG1"), ("1/0", "L1")], reply
        missing = rpc(m, '<get-connection-port-trail xmlns="%s"><connection-name>nope</connection-name>'
                         '</get-connection-port-trail>' % DEV)
        assert "Failed" in missing and "no roadm-connection named nope" in missing


def test_an_impossible_roadm_connection_is_refused_with_the_agents_error_path(device):
    server, _ = device
    with server.connect() as m:
        with pytest.raises(RPCError) as e:
            m.edit_config(target="running", config=device_edit(
                "<roadm-connections><connection-name>bad</connection-name><source><src-if>OTS-DEG1-TTP-TXRX</src-if>"
                "</source><destination><dst-if>DEG1-TTP-TXRX-nmc-193.1</dst-if></destination></roadm-connections>"))
        assert e.value.tag == "invalid-value"
        assert e.value.path.strip() == ("/org-openroadm-device:org-openroadm-device/roadm-connections"
                                        "[connection-name='bad']/source/src-if"), e.value.path
        assert "is of type opticalTransport" in e.value.message
        assert "roadm-connection-interface-type" in xml_of(e.value)
        assert "<connection-name>bad</connection-name>" not in m.get_config("running").data_xml


def test_a_wavelength_used_twice_on_a_degree_is_refused(device):
    server, _ = device
    nmc = ('<interface><name>DEG1-second-nmc</name><type xmlns:i="http://org/openroadm/interfaces">'
           'i:networkMediaChannelConnectionTerminationPoint</type><administrative-state>inService'
           '</administrative-state><supporting-circuit-pack-name>1/0</supporting-circuit-pack-name>'
           '<supporting-port>L1</supporting-port><nmc-ctp xmlns="http://org/openroadm/network-media-channel-interfaces">'
           '<frequency>%s</frequency><width>40</width></nmc-ctp></interface>')
    with server.connect() as m:
        with pytest.raises(RPCError) as e:
            m.edit_config(target="running", config=device_edit(nmc % "193.11"))
        assert "wavelength-in-use" in xml_of(e.value) and "degree 1" in e.value.message, xml_of(e.value)
        assert "interface[name='DEG1-second-nmc']" in e.value.path
        m.edit_config(target="running", config=device_edit(nmc % "193.2"))   # 50 GHz away: free


def test_a_circuit_pack_in_use_cannot_be_deleted(device):
    server, _ = device
    with server.connect() as m:
        # libyang's leafrefs refuse deleting it alone; deleting it with everything on it is the
        # agent's rule (it is in service).
        with pytest.raises(RPCError) as e:
            m.edit_config(target="running", config=device_edit(
                '<circuit-packs xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0" nc:operation="delete">'
                "<circuit-pack-name>2/0</circuit-pack-name></circuit-packs>"
                '<interface xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0" nc:operation="delete">'
                "<name>OMS-DEG2-TTP-TXRX</name></interface>"
                '<interface xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0" nc:operation="delete">'
                "<name>OTS-DEG2-TTP-TXRX</name></interface>"
                '<degree xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0" nc:operation="delete">'
                "<degree-number>2</degree-number></degree>"
                '<physical-link xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0" nc:operation="delete">'
                "<physical-link-name>phy-DEG2-SRG1</physical-link-name></physical-link>"))
        assert "circuit-pack-in-use" in xml_of(e.value), xml_of(e.value)
        assert e.value.path.strip() == "/org-openroadm-device:org-openroadm-device/circuit-packs[circuit-pack-name='2/0']"


def test_a_port_out_of_service_raises_an_alarm_listed_and_notified(device):
    server, _ = device
    with server.connect() as sub, server.connect() as m:
        sub.create_subscription()
        m.edit_config(target="running", config=port_admin("3/0", "PP2", "outOfService"))
        seen = ncserver.take_until(sub, r"alarm-notification[\s\S]*port:3/0/PP2:administrativeDown")
        assert "<severity>minor</severity>" in seen[-1]
        alarms = get(m, '<active-alarm-list xmlns="%s"/>' % ALARM)
        assert "<id>port:3/0/PP2:administrativeDown</id>" in alarms
        assert "<port-name>PP2</port-name>" in alarms
        # change-notification of the edit, named like the RFC 6470 record.
        change = ncserver.take_until(sub, r"<change-notification[\s\S]*port-name='PP2'\]")[-1]
        assert "<operation>merge</operation>" in change and "<username>e2e</username>" in change, change
        m.edit_config(target="running", config=port_admin("3/0", "PP2", "inService"))
        cleared = ncserver.take_until(sub, r"<severity>clear</severity>")[-1]
        assert "port:3/0/PP2:administrativeDown" in cleared
        assert "PP2" not in get(m, '<active-alarm-list xmlns="%s"/>' % ALARM)


def test_pm_counters_move(device):
    server, _ = device
    flt = '<current-pm-list xmlns="%s"/>' % PM
    with server.connect() as m:
        first = get(m, flt)
        assert "opticalPowerInput" in first and "unavailableSeconds" in first
        values = lambda xml: re.findall(r"<pmParameterValue>([^<]*)<", xml)  # noqa: E731
        wait_for(lambda: values(get(m, flt)) != values(first), "the counters stand still", timeout=5)


def test_a_fault_injected_through_the_control_fifo_raises_and_clears_an_alarm(device):
    server, agent = device
    with server.connect() as sub, server.connect() as m:
        sub.create_subscription()
        agent.fault("raise circuit-pack 3/0 equipmentFault major fan tray failed")
        note = ncserver.take_until(sub, r"circuit-pack:3/0:equipmentFault")[-1]
        assert "<severity>major</severity>" in note and "fan tray failed" in note
        assert "equipmentFault" in get(m, '<active-alarm-list xmlns="%s"/>' % ALARM)
        agent.fault("clear circuit-pack 3/0 equipmentFault")
        ncserver.take_until(sub, r"equipmentFault[\s\S]*<severity>clear</severity>")
        assert "equipmentFault" not in get(m, '<active-alarm-list xmlns="%s"/>' % ALARM)


def test_device_rpcs_and_their_notifications(device):
    server, agent = device
    with server.connect() as sub, server.connect() as m:
        sub.create_subscription()
        reply = rpc(m, '<create-tech-info xmlns="%s"><log-option>all</log-option></create-tech-info>' % DEV)
        name = re.search(r"log-file-name[^>]*>([^<]+)<", reply).group(1)
        assert "ROADM-A1" in open(os.path.join(agent.files, name)).read()
        ncserver.take_until(sub, r"create-tech-info-notification[\s\S]*Successful")

        assert "Successful" in rpc(m, '<set-current-datetime xmlns="%s"><current-datetime>2030-01-02T03:04:05Z'
                                      '</current-datetime></set-current-datetime>' % DEV)
        info = get(m, '<org-openroadm-device xmlns="%s"><info><current-datetime/></info></org-openroadm-device>' % DEV)
        assert re.search(r"<current-datetime[^>]*>2030-01-02T03:04:", info), info
        assert "Successful" in rpc(m, '<disable-automatic-shutoff xmlns="%s"><degree-number>1</degree-number>'
                                      '<support-timer>1</support-timer></disable-automatic-shutoff>' % DEV)
        ncserver.take_until(sub, r"automaticShutoffDisabled[\s\S]*<severity>warning")
        ncserver.take_until(sub, r"automaticShutoffDisabled[\s\S]*<severity>clear")   # the timer ran out

        assert "Successful" in rpc(m, '<restart xmlns="%s"><device><node-id>ROADM-A1</node-id></device>'
                                      '<resourceType><type>device</type></resourceType><option>warm</option>'
                                      '</restart>' % OPS)
        ncserver.take_until(sub, r"restart-notification[\s\S]*ROADM-A1")

        assert "Successful" in rpc(m, '<db-backup xmlns="%s"><filename>backup-1.DBS</filename></db-backup>' % DB)
        ncserver.take_until(sub, r"db-backup-notification[\s\S]*Successful")
        assert "<node-id>ROADM-A1</node-id>" in open(os.path.join(agent.files, "backup-1.DBS")).read()
        # A name with a directory in it would write outside the files directory.
        with pytest.raises(RPCError):
            m.dispatch(to_ele('<db-backup xmlns="%s"><filename>../escape.xml</filename></db-backup>' % DB))
        # Change something, restore the backup, activate it: the change is gone.
        m.edit_config(target="running", config=device_edit("<info><clli>CHANGED</clli></info>"))
        assert "Successful" in rpc(m, '<db-restore xmlns="%s"><filename>backup-1.DBS</filename></db-restore>' % DB)
        ncserver.take_until(sub, r"db-restore-notification[\s\S]*Successful")
        assert "Successful" in rpc(m, '<db-activate xmlns="%s"/>' % DB)
        ncserver.take_until(sub, r"db-activate-notification[\s\S]*Successful")
        assert "<clli>NCSTORE1</clli>" in m.get_config("running").data_xml


def test_killed_and_restarted_the_agent_loses_no_change(device):
    server, agent = device
    with server.connect() as sub, server.connect() as m:
        before = agent.commit()
        agent.proc.kill()
        agent.proc.wait()
        sub.create_subscription()
        # Made while no agent runs: a port taken out of service, a new interface.
        m.edit_config(target="running", config=port_admin("3/0", "PP3", "outOfService"))
        m.edit_config(target="running", config=device_edit(
            '<interface><name>OTS-spare</name><type xmlns:i="http://org/openroadm/interfaces">i:opticalTransport</type>'
            '<administrative-state>outOfService</administrative-state>'
            '<supporting-circuit-pack-name>2/0</supporting-circuit-pack-name><supporting-port>CTP-SRG1</supporting-port>'
            '</interface>'))
        line = agent.start()
        assert "resuming after commit %d" % before in line, line
        # The missed changes are applied: the alarm, the state, and their change-notifications.
        ncserver.take_until(sub, r"alarm-notification[\s\S]*port:3/0/PP3:administrativeDown")
        ncserver.take_until(sub, r"<change-notification[\s\S]*interface\[org-openroadm-device:name='OTS-spare'\]")
        assert "port:3/0/PP3:administrativeDown" in get(m, '<active-alarm-list xmlns="%s"/>' % ALARM)
        state = get(m, '<org-openroadm-device xmlns="%s"><interface><name>OTS-spare</name></interface>'
                       '</org-openroadm-device>' % DEV)
        assert "<operational-state>outOfService</operational-state>" in state, state
        wait_for(lambda: agent.commit() > before + 1, "the state file did not move past the missed commits")
        # An alarm raised before the kill is not raised twice: it was kept (persistent).
        log = agent.log_text()
        assert log.count("alarm raised: port:3/0/PP3") == 1, log


def test_the_guide_works_as_written():
    """docs/roadm-device.md, "Try it": the shell block as written, with a free port, the build
    directory under test and the shared models."""
    text = open(os.path.join(REPO, "docs", "roadm-device.md")).read()
    block = re.search(r"## Try it.*?```sh\n(.*?)```", text, re.S)
    assert block, "docs/roadm-device.md has no shell block under 'Try it'"
    build = os.path.dirname(os.path.dirname(os.path.abspath(ncserver.ncstored_binary())))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PORT=str(port), YANG=YANG)
    r = subprocess.run(["bash", "-e", "-c", block.group(1).replace("build/", build + "/")], cwd=REPO,
                       capture_output=True, text=True, timeout=120, env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "<node-id>ROADM-A1</node-id>" in out and "<vendor>ncstore</vendor>" in out, out
    assert out.count("<ports") == 4 and "<port-name>CP-DEG1</port-name>" in out, out
    assert "refused" in out and "app-tag: roadm-connection-interface-type" in out, out
    assert "path: /org-openroadm-device:org-openroadm-device/roadm-connections[connection-name='bad']/source/src-if" \
        in out, out
    assert "lossOfSignal" in r.stdout, out
