"""yangcli (yuma123, Debian package yangcli) against ncstored: connect (it reads capabilities
and fetches schemas), edit the candidate, commit, read back with an XPath get-config."""

import os
import shutil
import subprocess

from ncserver import USER, PASSWORD, config, iface, interfaces

YANGCLI = shutil.which("yangcli") or "yangcli"  # CMake registers this file only when found


def yangcli(server, script_text):
    script = os.path.join(server.tmp, "script.yc")
    with open(script, "w") as f:
        f.write(script_text)
    home = os.path.join(server.tmp, "yangcli-home")
    os.makedirs(home, exist_ok=True)
    cmd = [YANGCLI, "--server=127.0.0.1", "--ncport=%d" % server.port, "--user=" + USER,
           "--password=" + PASSWORD, "--batch-mode", "--run-script=" + script,
           "--display-mode=xml", "--log-level=info"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, HOME=home))
    return r.returncode, r.stdout + r.stderr


def test_yangcli_reads_what_ncclient_wrote(server, m):
    m.edit_config(target="running", config=config(iface("nc0", description="from-ncclient")))
    rc, out = yangcli(server, "sget-config /interfaces source=running\n")
    assert "from-ncclient" in out, out[-3000:]
    assert "ietf-interfaces@2014-05-08" in out


def test_yangcli_candidate_edit_commit(server, m):
    rc, out = yangcli(server, "create /interfaces/interface -- name=y0 type=ethernetCsmacd "
                              "description=from-yangcli\ncommit\n"
                              "xget-config /interfaces/interface[name='y0'] source=running\n")
    assert "from-yangcli" in out, out[-3000:]
    assert interfaces(m)["y0"]["description"] == "from-yangcli"


def test_yangcli_sees_rpc_error(server, m):
    m.edit_config(target="running", config=config(iface("dup0")))
    m.discard_changes()
    rc, out = yangcli(server, "create /interfaces/interface -- name=dup0 type=ethernetCsmacd\n")
    assert "data-exists" in out, out[-3000:]
