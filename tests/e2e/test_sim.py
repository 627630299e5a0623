"""ncstore-sim: ten simulated Open ROADM 2.2.1 devices from one dump, each its own ncstored with
its node-id, port and data; listed, each answering a <get> of info with ncclient, one killed
without the others noticing, started again with its data, all stopped.

Needs the official models (../shared/yang/openroadm/2.2.1-all, or $NCSTORE_SHARED_DIR): skipped
without them, failed under CI=true (tests/shared_data.py)."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

import pytest
from ncclient import manager

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import shared_data  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SIM = os.path.join(REPO, "tools", "ncstore-sim")
DUMP = os.path.join(HERE, "data", "roadm-2.2.1-defects.xml")
MODELS = str(shared_data.shared_dir() / "yang" / "openroadm" / "2.2.1-all")
ORD = "http://org/openroadm/device"
INFO = ("subtree", '<org-openroadm-device xmlns="%s"><info/></org-openroadm-device>' % ORD)
COUNT = 10


def build_dir():
    return os.path.dirname(os.path.dirname(os.path.abspath(os.environ["NCSTORED"])))


def free_base_port(count):
    """A run of `count` free loopback ports (tried, not guaranteed: the test says which failed)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count >= 65535:
            continue
        ok = True
        for port in range(base, base + count):
            with socket.socket() as t:
                try:
                    t.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no run of %d free ports" % count)


def sim(*args, timeout=180):
    cmd = [SIM] + list(args)
    if args[0] == "start":   # the programs under test, not whatever PATH has
        cmd += ["--ncstored", os.environ["NCSTORED"],
                "--ncstore-load", os.path.join(build_dir(), "tools", "ncstore-load")]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def devices():
    reason = shared_data.missing([("yang/openroadm/2.2.1-all", "the official Open ROADM 2.2.1 device set")])
    if reason:
        if shared_data.ci():
            pytest.fail("CI=true, nothing may be skipped: " + reason)
        pytest.skip(reason)
    root = tempfile.mkdtemp(prefix="ncstore-sim-")
    base = free_base_port(COUNT)
    r = sim("start", "--dir", root, "--count", str(COUNT), "--dump", DUMP, "--yang-dir", MODELS,
            "--base-port", str(base), "--node-prefix", "ROADM")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%d devices up" % COUNT in r.stdout and "(0 failed)" in r.stdout, r.stdout
    yield root, base
    sim("stop", "--dir", root)
    shutil.rmtree(root, ignore_errors=True)


def node_id(port):
    with manager.connect(host="127.0.0.1", port=port, username="admin", password="admin", hostkey_verify=False,
                         allow_agent=False, look_for_keys=False, timeout=30) as m:
        xml = m.get(filter=INFO).data_xml
    assert "<vendor" in xml, xml    # the dump's state is served beside the configuration
    start = xml.index("<node-id")
    return xml[xml.index(">", start) + 1:xml.index("</node-id>", start)]


def test_every_device_answers_with_its_own_node_id(devices):
    root, base = devices
    listing = sim("list", "--dir", root).stdout
    assert "%d running" % COUNT in listing, listing
    for n in range(1, COUNT + 1):
        assert "ROADM-%03d" % n in listing
        assert node_id(base + n - 1) == "ROADM-%03d" % n


def test_a_killed_device_leaves_the_others_serving_and_starts_again_with_its_data(devices):
    root, base = devices
    pid = int(open(os.path.join(root, "dev-003", "pid")).read())
    os.kill(pid, signal.SIGKILL)
    listing = sim("list", "--dir", root).stdout
    assert "%d running" % (COUNT - 1) in listing and "stopped" in listing, listing
    assert node_id(base + 3) == "ROADM-004"
    r = sim("start", "--dir", root, "--count", str(COUNT), "--yang-dir", MODELS, "--base-port", str(base),
            "--node-prefix", "ROADM", "-v")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "device 3: started" in r.stdout and "device 4: already running" in r.stdout, r.stdout
    assert node_id(base + 2) == "ROADM-003"   # its data survived the kill: no dump given this time


def test_stop_stops_them_all(devices):
    root, _ = devices
    assert "%d devices stopped" % COUNT in sim("stop", "--dir", root).stdout
    assert "0 running" in sim("list", "--dir", root).stdout
