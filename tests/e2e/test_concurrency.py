"""50 sessions at once, each editing its own entries: every acknowledged edit is there."""

import threading

from ncserver import config, iface, interfaces

SESSIONS = 50
EDITS = 4
CONNECT_RETRIES = 10


def test_fifty_concurrent_sessions_editing(server, m):
    errors = []
    retries = []
    barrier = threading.Barrier(SESSIONS)

    def worker(i):
        try:
            barrier.wait(timeout=60)
        except threading.BrokenBarrierError:
            pass
        try:
            s, failed = server.connect(retries=CONNECT_RETRIES)
            if failed:
                retries.append((i, failed))
            try:
                for k in range(EDITS):
                    s.edit_config(target="running", config=config(
                        iface("c%02d-%d" % (i, k), description="session %d edit %d" % (i, k))))
                got = interfaces(s)
                mine = {n for n in got if n.startswith("c%02d-" % i)}
                if len(mine) != EDITS:
                    errors.append("session %d sees %d of its %d entries" % (i, len(mine), EDITS))
            finally:
                s.close_session()
        except Exception as e:  # collected: the test reports every failing session
            errors.append("session %d: %r" % (i, e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(SESSIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    if retries:
        print("connect retries needed (session, failed attempts): %s" % retries)
    assert not errors, errors
    got = interfaces(m)
    expected = {"c%02d-%d" % (i, k) for i in range(SESSIONS) for k in range(EDITS)}
    assert expected <= set(got), sorted(expected - set(got))[:10]
    assert got["c07-3"]["description"] == "session 7 edit 3"
    assert server.alive()


def test_concurrent_connects_without_retry(server, m):
    """Reported, not retried: how many of 50 simultaneous connects fail outright."""
    failures = []
    barrier = threading.Barrier(SESSIONS)
    sessions = []
    lock = threading.Lock()

    def worker(i):
        try:
            barrier.wait(timeout=60)
        except threading.BrokenBarrierError:
            pass
        try:
            s = server.connect()
            with lock:
                sessions.append(s)
        except Exception as e:
            failures.append(repr(e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(SESSIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    for s in sessions:
        try:
            s.close_session()
        except Exception:
            pass
    assert not failures, "%d of %d simultaneous connects failed: %s" % (
        len(failures), SESSIONS, failures[:3])
