"""Files at rest: what an operator finds in the data directory once the real server has started
and written (directories 0700, every file 0600, the application socket 0660 inside the 0700
directory: only the server's user and root reach it there), even when ncstored runs under umask
0; a data directory that group or others can write is refused before anything is read or
written."""

import os
import stat

import pytest

import ncserver
from ncserver import config, iface

EXPECTED = {"ncstore.db", "ncstore.db-wal", "ncstore.db-shm", "users", "ssh_host_ed25519_key",
            "ssh_host_rsa_key", "authorized_keys", "app.sock"}


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def modes(data_dir):
    """{relative path: mode} of the data directory and everything in it."""
    out = {".": mode(data_dir)}
    for root, dirs, files in os.walk(data_dir):
        for name in dirs + files:
            p = os.path.join(root, name)
            out[os.path.relpath(p, data_dir)] = mode(p)
    return out


@pytest.fixture
def fresh():
    """A server whose data directory does not exist yet; ncstored --add-user and ncstored itself
    run under umask 0, so that nothing is private by the umask's grace."""
    old = os.umask(0)
    try:
        s = ncserver.Server(name="files")
    finally:
        os.umask(old)
    yield s
    s.cleanup()


def start_with_umask_0(server):
    old = os.umask(0)
    try:
        server.start()
    finally:
        os.umask(old)


def test_data_dir_0700_and_every_file_0600_after_the_server_wrote(fresh):
    start_with_umask_0(fresh)
    m = fresh.connect()
    try:
        m.edit_config(target="running", config=config(*[iface("f%d" % i) for i in range(10)]))
        m.copy_config(source="running", target="startup")
        got = modes(fresh.data_dir)  # while the server runs: the WAL and shared memory are there
    finally:
        m.close_session()
    assert EXPECTED <= set(got), "missing from the data dir: %s" % (EXPECTED - set(got))
    def private(p):
        path = os.path.join(fresh.data_dir, p)
        if stat.S_ISSOCK(os.stat(path).st_mode):
            return 0o660  # the application socket (docs/app-guide.md): its group, if it is moved out
        return 0o700 if os.path.isdir(path) else 0o600
    wrong = {p: oct(v) for p, v in got.items() if v != private(p)}
    assert not wrong, "not private: %s" % wrong


@pytest.mark.parametrize("bad", [0o777, 0o770, 0o722])
def test_a_data_dir_others_can_write_is_refused(fresh, bad):
    os.chmod(fresh.data_dir, bad)
    with pytest.raises(RuntimeError, match="exited with 1"):
        fresh.start()
    log = fresh.log_tail()
    assert "refusing the directory %s (mode %04o)" % (fresh.data_dir, bad) in log, log
    assert "chmod go-w %s" % fresh.data_dir in log, log
    # refused before anything was created or changed
    assert not os.path.exists(os.path.join(fresh.data_dir, "ncstore.db"))
    assert mode(fresh.data_dir) == bad
    # what the operator is told to do is enough (0750: the package's /var/lib/ncstore)
    os.chmod(fresh.data_dir, 0o750)
    fresh.start()
    assert fresh.alive()


def test_a_store_and_keys_left_readable_are_made_private(fresh):
    fresh.start()
    m = fresh.connect()
    m.edit_config(target="running", config=config(iface("kept")))
    m.close_session()
    assert fresh.stop() == 0
    readable = ["ncstore.db", "ssh_host_ed25519_key", "ssh_host_rsa_key"]
    for name in readable:
        os.chmod(os.path.join(fresh.data_dir, name), 0o644)
    fresh.start()
    m = fresh.connect()
    try:
        assert "kept" in ncserver.interfaces(m)
    finally:
        m.close_session()
    assert {n: oct(mode(os.path.join(fresh.data_dir, n))) for n in readable} == \
        {n: oct(0o600) for n in readable}
