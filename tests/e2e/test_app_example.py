"""The application guide's complete example (docs/app-guide.md, "A complete example"), run as
it is written there: the shell block is taken from the guide and run with bash, with a free port
and the build directory under test in place of `build/`. A guide whose commands stop working
fails this test."""

import os
import re
import socket
import subprocess
import time

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


def test_the_example_killed_and_restarted_applies_exactly_the_commits_it_missed():
    """libncstore-app's resume against the real server: ncstore-example-ifmgr keeps the last commit
    it applied in its --state file; killed with -9 and started again, it is given every change set
    after that commit, once, and its operational state is back."""
    import ncserver
    build = os.path.dirname(os.path.dirname(os.path.abspath(os.environ["NCSTORED"])))
    ifmgr = os.path.join(build, "app", "ncstore-example-ifmgr")
    server = ncserver.Server(name="ifmgr-resume", extra_args=["--app-root-user", ncserver.USER])
    server.start()
    state = os.path.join(server.tmp, "ifmgr.last")
    sock = os.path.join(server.data_dir, "app.sock")

    seen = []

    def start():
        # Its first applies may come before the line that says it subscribed (another thread).
        p = subprocess.Popen([ifmgr, "--socket", sock, "--state", state], stdout=subprocess.PIPE, text=True)
        del seen[:]
        for line in p.stdout:
            seen.append(line)
            if line.startswith("ifmgr: session "):
                return p
        raise AssertionError("ifmgr ended: " + "".join(seen))

    def wait_for(predicate, what):
        deadline = time.monotonic() + 10
        while not predicate():
            assert time.monotonic() < deadline, what
            time.sleep(0.05)
    try:
        with server.connect() as m:
            first = start()
            wait_for(lambda: os.path.exists(state) and open(state).read().strip(), "no initial commit recorded")
            initial = int(open(state).read())
            m.edit_config(target="running", config=ncserver.config(ncserver.iface("i1")))
            wait_for(lambda: int(open(state).read() or 0) > initial, "i1 was not applied")
            applied = int(open(state).read())
            first.kill()
            first.wait()
            m.edit_config(target="running", config=ncserver.config(ncserver.iface("i2")))
            m.edit_config(target="running", config=ncserver.config(ncserver.iface("i1", op="delete")))
            again = start()
            try:
                wait_for(lambda: int(open(state).read()) > applied + 1, "the missed commits were not applied")
                flt = ("subtree", '<interfaces-state xmlns="urn:ietf:params:xml:ns:yang:ietf-interfaces"/>')
                wait_for(lambda: "<name>i2</name>" in m.get(filter=flt).data_xml, "no state after the restart")
                assert "<name>i1</name>" not in m.get(filter=flt).data_xml
            finally:
                again.terminate()
                out = "".join(seen) + again.communicate(timeout=10)[0]
        lines = [line for line in out.splitlines() if line.startswith("apply ")]
        commits = sorted({int(line.split()[1].rstrip(":")) for line in lines})
        assert len(commits) == 2 and commits[0] > applied, out   # the two missed commits, once each
        assert any("create" in line and "interface[name='i2']" in line for line in lines), out
        assert any("delete" in line and "interface[name='i1']" in line for line in lines), out
    finally:
        server.stop()
        server.cleanup()
