"""The application guide's complete example (docs/app-guide.md, "A complete example"), run as
it is written there: the shell block is taken from the guide and run with bash, with a free port
and the build directory under test in place of `build/`. A guide whose commands stop working
fails this test."""

import os
import re
import socket
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
GUIDE = os.path.join(HERE, "..", "..", "docs", "app-guide.md")


def guide_block():
    text = open(GUIDE).read()
    found = re.search(r"## A complete example.*?```sh\n(.*?)```", text, re.S)
    assert found, "docs/app-guide.md has no shell block under 'A complete example'"
    return found.group(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_guides_example_works_as_written():
    build = os.path.dirname(os.path.dirname(os.path.abspath(os.environ["NCSTORED"])))
    script = guide_block().replace("build/", build + "/")
    env = dict(os.environ, PORT=str(free_port()))
    r = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, timeout=120, env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "<oper-status>up</oper-status>" in r.stdout, out          # the application's state
    assert "apply " in r.stdout and "  eth0 up" in r.stdout, out      # it applied eth0
    assert "refused" in r.stdout, out                                  # the edit that failed
    assert "tag: invalid-value" in out and "app-tag: unsupported-interface-type" in out, out
    assert "message: this device has no interface of type fibreChannel" in out, out
    assert "path: /ietf-interfaces:interfaces/interface[name='fc0']" in out, out
