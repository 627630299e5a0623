"""The Python guide's complete example (docs/python-api.md, "A complete example"), run as it is
written there: the python block is taken from the guide and run with this Python and the package
of this source tree, against the real ncstored; ncclient checks what the guide says it does."""

import os
import re
import subprocess
import sys
import threading
import time

import pytest
from lxml import etree
from ncclient.operations import RPCError

import ncserver
from ncserver import config, iface

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GUIDE = os.path.join(REPO, "docs", "python-api.md")
STATE = ("subtree", '<interfaces-state xmlns="urn:ietf:params:xml:ns:yang:ietf-interfaces"/>')


def guide_block():
    text = open(GUIDE).read()
    found = re.search(r"## A complete example.*?```python\n(.*?)```", text, re.S)
    assert found, "docs/python-api.md has no python block under 'A complete example'"
    return found.group(1)


def test_the_guides_example_works_as_written():
    server = ncserver.Server(name="py-example", extra_args=["--app-root-user", ncserver.USER])
    server.start()
    script = os.path.join(server.tmp, "ifmgr.py")
    with open(script, "w") as f:
        f.write(guide_block())
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"),
               NCSTORE_APP_SOCKET=os.path.join(server.data_dir, "app.sock"))
    proc = subprocess.Popen([sys.executable, script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()

    def wait_for(predicate, what):
        deadline = time.monotonic() + 10
        while not predicate():
            assert proc.poll() is None, "the example ended: " + "".join(lines)
            assert time.monotonic() < deadline, what + ": " + "".join(lines)
            time.sleep(0.05)
    try:
        wait_for(lambda: any(line.startswith("ifmgr.py: session ") for line in lines), "it did not subscribe")
        assert any(re.match(r"ifmgr\.py: session \d+ as e2e$", line) for line in lines), lines
        with server.connect() as m:
            m.edit_config(target="running", config=config(iface("eth0")))
            wait_for(lambda: "<oper-status>up</oper-status>" in m.get(filter=STATE).data_xml, "no state for eth0")
            m.edit_config(target="running", config=config(iface("eth0", enabled=False)))
            wait_for(lambda: "<oper-status>down</oper-status>" in m.get(filter=STATE).data_xml,
                     "the state did not follow enabled=false")
            with pytest.raises(RPCError) as e:
                m.edit_config(target="running", config=config(iface("fc0", type_="fibreChannel")))
            assert e.value.tag == "invalid-value"
            assert e.value.message == "this device has no interface of type fibreChannel"
            assert e.value.path.strip() == "/ietf-interfaces:interfaces/interface[name='fc0']"
            assert "<error-app-tag>unsupported-interface-type</error-app-tag>" in etree.tostring(e.value.xml).decode()
            assert "fc0" not in m.get_config(source="running").data_xml
            proc.terminate()
            assert proc.wait(10) == 0, "".join(lines)
            reader.join(5)
            wait_for_gone = time.monotonic() + 5
            while "eth0" in m.get(filter=STATE).data_xml:
                assert time.monotonic() < wait_for_gone, "the example's state outlived it"
                time.sleep(0.05)
        applies = [line for line in lines if line.startswith("apply ")]
        assert any("create /ietf-interfaces:interfaces" in line for line in applies), lines
        assert any("/enabled" in line for line in applies), lines
        assert not any("fc0" in line for line in applies), lines
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        status = server.stop()
        reports = server.sanitizer_reports()
        server.cleanup()
    assert not reports, reports
    assert not status, "ncstored exited with status %s on SIGTERM" % status


