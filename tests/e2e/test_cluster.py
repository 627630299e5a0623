"""High availability (issue 17): three ncstored with --backend dqlite on 127.0.0.1, each running
one node of a dqlite cluster. Only the leader's server serves NETCONF; when it is killed with -9,
another takes over with every acknowledged edit; a server whose node loses the leadership stops
serving (exit 75, for systemd to restart it as a standby) and comes back as a standby.

Loopback only: the network partitions (links cut between namespaces) are tests/ha's."""

import socket
import subprocess
import time

import pytest

from ncserver import Server, config, edits_until_kill, iface, interfaces

LATENCY_MS = 20  # Raft election timeout 300 ms


def free_address():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return "127.0.0.1:%d" % s.getsockname()[1]


class Cluster:
    def __init__(self, size=3):
        self.addresses = [free_address() for _ in range(size)]
        self.servers = []
        for i, address in enumerate(self.addresses, start=1):
            args = ["--backend", "dqlite", "--dqlite-id", str(i), "--dqlite-address", address,
                    "--dqlite-latency-ms", str(LATENCY_MS)]
            for other in self.addresses:
                if other != address:
                    args += ["--dqlite-peer", other]
            self.servers.append(Server(extra_args=args, name="cluster-%d" % i))

    def status(self):
        """`ncstored --cluster-status` asked through every node: {id: (role, leader?)}."""
        cmd = [self.servers[0].binary, "--cluster-status", "--backend", "dqlite"]
        for a in self.addresses:
            cmd += ["--dqlite-peer", a]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        out = {}
        for line in r.stdout.splitlines():
            words = line.split()
            out[int(words[1])] = (words[3], words[-1] == "leader")
        return out

    def wait_voters(self, n, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                s = self.status()
                if sum(1 for role, _ in s.values() if role == "voter") == n:
                    return s
            except AssertionError:
                pass
            time.sleep(0.2)
        raise AssertionError("the cluster did not get %d voters: %s" % (n, self.status()))

    def serving(self, timeout=20, besides=None):
        """The one server that serves, once exactly one does (and it is not `besides`)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            up = [s for s in self.servers if s.alive() and s.serving() and s is not besides]
            if len(up) == 1:
                return up[0]
            assert len(up) < 2, "two servers serve at once: %s" % [s.log_path for s in up]
            time.sleep(0.05)
        raise AssertionError("no server took over within %ss:\n%s"
                             % (timeout, "\n".join(s.log_tail(1500) for s in self.servers)))

    def cleanup(self):
        """Stops every server; returns their sanitizer reports ("" when none)."""
        reports = []
        for s in self.servers:
            if s.alive():
                s.stop()
            reports.append(s.sanitizer_reports())
            s.cleanup()
        return "".join(reports)


@pytest.fixture
def cluster():
    c = Cluster()
    try:
        c.servers[0].start()  # node 1 bootstraps and leads
        for s in c.servers[1:]:
            s.start(wait=False)
        c.wait_voters(3)
        yield c
    finally:
        # Also when the set-up failed: no server may outlive the test.
        reports = c.cleanup()
    assert not reports, reports


CLUSTER_NS = "urn:ncstore:yang:ncstore-cluster"


def cluster_state(m):
    """The leader's /cluster state data (ncstore-cluster): (this-node, leader, {id: (address, role)})."""
    from lxml import etree
    reply = m.get(filter=("subtree", '<cluster xmlns="%s"/>' % CLUSTER_NS))
    root = etree.fromstring(reply.data_xml.encode())
    ns = {"c": CLUSTER_NS}
    nodes = {int(n.findtext("c:id", namespaces=ns)): (n.findtext("c:address", namespaces=ns),
                                                       n.findtext("c:role", namespaces=ns))
             for n in root.iterfind(".//c:node", ns)}
    return (root.findtext(".//c:this-node", namespaces=ns), root.findtext(".//c:leader", namespaces=ns), nodes)


def test_only_the_leader_serves_and_a_kill_9_loses_no_acknowledged_edit(cluster):
    leader = cluster.servers[0]
    assert cluster.serving() is leader
    m = leader.connect()
    try:
        this, lead, nodes = cluster_state(m)
        assert (this, lead) == ("1", "1")
        assert nodes == {i + 1: (a, "voter") for i, a in enumerate(cluster.addresses)}
    finally:
        m.close_session()
    for s in cluster.servers[1:]:
        assert s.alive() and not s.serving(), "a standby serves:\n" + s.log_tail()

    # 10 sessions commit until the leader is killed (issue 17's test).
    acked = edits_until_kill(
        leader, lambda m, name: m.edit_config(target="running", config=config(iface(name))), "ha",
        writers=10, at_least=100)
    assert acked
    killed_at = time.time()
    successor = cluster.serving(besides=leader)
    took = time.time() - killed_at
    m = successor.connect()
    try:
        got = set(interfaces(m))
        missing = [n for n in acked if n not in got]
        assert not missing, "acknowledged but lost in the failover: %s" % missing[:10]
        # The new leader takes writes, and says it leads.
        m.edit_config(target="running", config=config(iface("after-failover")))
        assert "after-failover" in interfaces(m)
        this, lead, _ = cluster_state(m)
        assert this == lead == str(cluster.servers.index(successor) + 1)
    finally:
        m.close_session()
    assert took < 10, "failover took %.1f s" % took

    # The old leader comes back as a standby of the new one.
    leader.start(wait=False)
    cluster.wait_voters(3)
    time.sleep(1)
    assert leader.alive() and not leader.serving(), leader.log_tail()
    assert cluster.serving() is successor


def test_a_server_whose_node_loses_the_leadership_stops_serving(cluster):
    leader = cluster.servers[0]
    m = leader.connect()
    m.edit_config(target="running", config=config(iface("before")))
    m.close_session()
    # Frozen past the election timeout, node and server alike: the others elect a leader.
    leader.proc.send_signal(19)  # SIGSTOP
    try:
        successor = cluster.serving(besides=leader)
    finally:
        leader.proc.send_signal(18)  # SIGCONT
    assert leader.proc.wait(30) == 75, leader.log_tail()
    assert "no longer the leader" in leader.log_tail()
    m = successor.connect()
    try:
        assert "before" in interfaces(m)
    finally:
        m.close_session()
    leader.start(wait=False)
    cluster.wait_voters(3)
    assert not leader.serving()


def test_a_cluster_that_lost_its_majority_is_recovered_on_the_survivor(cluster):
    survivor = cluster.servers[0]
    m = survivor.connect()
    m.edit_config(target="running", config=config(iface("kept")))
    m.close_session()
    for s in cluster.servers[1:]:
        s.kill()  # for good: two of three, the majority
    # Alone, its node cannot stay leader: the server stops serving.
    assert survivor.proc.wait(30) == 75, survivor.log_tail()
    address = cluster.addresses[0]
    r = subprocess.run([survivor.binary, "--data-dir", survivor.data_dir, "--backend", "dqlite",
                        "--dqlite-id", "1", "--dqlite-address", address, "--cluster-recover", "1@" + address],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    survivor.start()  # leads a cluster of one
    m = survivor.connect()
    try:
        assert "kept" in interfaces(m)
        m.edit_config(target="running", config=config(iface("after-recovery")))
        assert "after-recovery" in interfaces(m)
    finally:
        m.close_session()


def test_membership_commands_add_and_remove_a_node(cluster):
    binary = cluster.servers[0].binary
    peers = [x for a in cluster.addresses for x in ("--dqlite-peer", a)]
    spare = free_address()  # a fourth node, added before it ever starts (it never does here)
    r = subprocess.run([binary, "--cluster-add", "4@" + spare, "--backend", "dqlite"] + peers,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    # A spare until it runs (Raft makes a node vote once it caught up); writes go on meanwhile.
    assert cluster.status()[4] == ("spare", False)
    m = cluster.servers[0].connect()
    try:
        m.edit_config(target="running", config=config(iface("with-four")))
        assert cluster_state(m)[2][4] == (spare, "spare")
    finally:
        m.close_session()
    r = subprocess.run([binary, "--cluster-remove", "4", "--backend", "dqlite"] + peers,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert set(cluster.status()) == {1, 2, 3}
    bad = subprocess.run([binary, "--cluster-add", "four", "--backend", "dqlite"] + peers,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "is not ID@ADDRESS" in bad.stderr, bad.stderr


def test_ncstore_db_reads_the_clusters_database_and_refuses_to_import_into_it(cluster):
    """`ncstore-db --dqlite-peer ...` exports, checks, backs up (a SQLite file the tool then reads
    like any store) and lists the history of the cluster's database beside the running servers;
    it refuses import, which the servers (holding the data in memory) would not see."""
    import os
    db = os.environ.get("NCSTORE_DB")
    assert db and os.access(db, os.X_OK), "NCSTORE_DB must name ncstore-db"
    peers = []
    for a in reversed(cluster.addresses):  # the leader last: it is found through the others
        peers += ["--dqlite-peer", a]

    def run(*args):
        r = subprocess.run([db] + list(args), capture_output=True, text=True, timeout=120)
        return r.returncode, r.stdout, r.stderr

    m = cluster.serving().connect()
    try:
        m.edit_config(target="running", config=config(iface("db-a"), iface("db-b")))
    finally:
        m.close_session()

    rc, out, err = run("export", *peers)
    assert rc == 0, err
    assert "<name>db-a</name>" in out and "<name>db-b</name>" in out
    rc, out, err = run("check", *peers)
    assert (rc, out) == (0, "the dqlite cluster's database: ok\n"), err
    rc, out, err = run("history", *peers)
    assert rc == 0 and len(out.splitlines()) >= 2, err

    work = cluster.servers[0].data_dir + "-db"
    os.makedirs(work, mode=0o700)
    backup = os.path.join(work, "cluster.db")
    rc, out, err = run("backup", backup, *peers)
    assert rc == 0, err
    assert os.stat(backup).st_mode & 0o777 == 0o600
    offline = os.path.join(work, "offline")
    os.makedirs(offline, mode=0o700)
    os.rename(backup, os.path.join(offline, "ncstore.db"))
    rc, out, err = run("export", "--data-dir", offline)
    assert rc == 0, err
    assert "<name>db-a</name>" in out and "<name>db-b</name>" in out

    rc, out, err = run("import", os.path.join(offline, "ncstore.db"), *peers)
    assert rc != 0 and "copy-config" in err, err
    rc, out, err = run("backup", *peers)
    assert rc != 0 and "needs a DEST" in err, err
