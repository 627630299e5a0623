#!/usr/bin/python3
"""Where the server's CPU goes on bulk edits and reads (issue 16): an N-entry ietf-interfaces set,
its get-config and its delete, each repeated, with perf (dwarf call stacks) attached to ncstored
only while the measured request runs.

    sudo benchmarks/profile_bulk.py [--build build] [-n 2048] [--rounds 10]

Prints, per operation, the perf samples per request (~1 ms of server CPU each at 999 Hz) and the
share of the samples in each part of the server (a sample counts for every part on its stack, so parts
that nest add up to more than 100%). Needs root (perf attach) and linux-perf. Not in CI: the
figures go into benchmarks/results/ with this command beside them.
"""
import argparse
import collections
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (label, markers): a sample is in the part when a frame of its stack contains one of the markers.
PARTS = [
    ("read the request (SSH, framing)", ["SshConnection::read"]),
    ("parse <rpc> and <config> (libyang)", ["parseRpc"]),
    ("edit: apply to the tree", ["Editor::apply"]),
    ("edit: validate", ["validateLocally", "lyd_validate"]),
    ("edit: change set (copies of what changed)", ["ChangeBuilder", "changebuilder"]),
    ("edit: serialize records (LYB)", ["RecordCollector::build"]),
    ("edit: journal hooks (history, config-change)", ["History::hook", "notify::Service::hook"]),
    ("group commit: waiting for it and running it", ["Ticket::wait"]),
    ("SQLite statements (the batch's rows)", ["SqliteBackend::deleteRange", "tryExecuteStep"]),
    ("SQLite COMMIT (WAL write, fdatasync)", ["Transaction::commit"]),
    ("get: select, copy and print (opGetConfig)", ["opGetConfig"]),
    ("print a tree (reply, YANG Patch, any)", ["renderReply", "printTree", "lyd_print"]),
    ("write the reply (SSH)", ["SshConnection::write"]),
    ("publisher (hand change sets to listeners)", ["Publisher::loop"]),
    ("WAL checkpoint", ["checkpointLoop"]),
    ("free libyang trees (anywhere)", ["lyd_free"]),
    ("libyang dictionary (anywhere)", ["lydict_"]),
    ("kernel (syscalls, page faults)", ["entry_SYSCALL", "asm_exc_page_fault"]),
]


# The server's operation handlers (Server::op*): a sample under another one than the measured
# operation's is not part of it.
HANDLERS = ["Server::opGetConfig", "Server::opEditConfig", "Server::opGetSchema", "Server::opGetData",
            "Server::opGet(", "Server::opGet ", "Server::opCloseSession", "Server::opLock", "Server::opUnlock"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def stacks(perf_text):
    """Yields the frames (symbol names) of each sample of `perf script -F ip,sym` output."""
    frames = []
    for line in perf_text.splitlines():
        if not line.strip():
            if frames:
                yield frames
            frames = []
        elif line[0] in " \t":
            parts = line.split(None, 1)
            frames.append(parts[1] if len(parts) > 1 else "")
    if frames:
        yield frames


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(HERE.parent / "build"))
    ap.add_argument("-n", type=int, default=2048, help="interfaces per edit")
    ap.add_argument("--rounds", type=int, default=10, help="measured requests per operation")
    a = ap.parse_args()
    if not shutil.which("perf"):
        sys.exit("profile_bulk.py: needs perf (Debian: linux-perf)")
    build = Path(a.build).resolve()
    ncstored, client = build / "netconfd/ncstored", build / "clients/ncstore-client"
    gen = HERE.parent / "clients/generator/ncstore-gen"
    work = Path(tempfile.mkdtemp(prefix="ncstore-profile-bulk."))
    server = None
    try:
        files = {}
        for op in ("set", "delete", "get"):
            files[op] = work / f"{op}.xml"
            args = [str(gen), "interfaces", "--scenario", f"B7-{op}"] + (["-n", str(a.n)] if op != "get" else [])
            files[op].write_text(run(args, capture_output=True, text=True).stdout)
        (work / "data").mkdir(mode=0o700)
        run([str(ncstored), "--data-dir", str(work / "data"), "--add-user", "bench"], input="benchpw\n",
            capture_output=True, text=True)
        log = open(work / "server.log", "w")
        server = subprocess.Popen([str(ncstored), "--data-dir", str(work / "data"), "--listen", "127.0.0.1",
                                   "--port", "0", "--print-port-file", str(work / "port"), "--log-level", "warning",
                                   "--stats-interval", "0"], stdout=log, stderr=subprocess.STDOUT)
        for _ in range(400):
            if (work / "port").exists() and (work / "port").read_text().strip():
                break
            time.sleep(0.05)
        port = (work / "port").read_text().strip()
        base = [str(client), "--port", port, "--user", "bench", "--password", "benchpw", "--schema-dir",
                str(work / "schemas"), "-q"]

        def request(op):
            if op == "get":
                run(base + ["get-config", "--source", "running", "--filter-subtree", str(files["get"])], capture_output=True)
            else:
                run(base + ["edit-config", "--target", "running", "--config", str(files[op])], capture_output=True)

        before_each = {"set": [], "get": ["set"], "delete": ["set"]}
        after_each = {"set": ["delete"], "get": ["delete"], "delete": []}
        for _ in range(2):  # warm-up: the WAL, the commit history and the server's heap in use
            for op in ("set", "get", "delete"):
                request(op)
        print(f"# server CPU on {a.n}-entry ietf-interfaces edits and reads, {a.rounds} requests each "
              f"(ncstored {ncstored}, durability full)\n"
              f"# each request is a session of its own (ncstore-client); the samples of its set-up (SSH, "
              f"hello, what the client reads of the schemas) are left out; at 999 Hz a sample is ~1 ms of "
              f"server CPU")
        for op in ("set", "get", "delete"):
            texts = []
            for i in range(a.rounds):
                for setup in before_each[op]:
                    request(setup)
                data = work / f"perf-{op}-{i}.data"
                perf = subprocess.Popen(["perf", "record", "-F", "999", "--call-graph", "dwarf,16384", "-p",
                                         str(server.pid), "-o", str(data)], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
                time.sleep(0.5)  # perf attached
                request(op)
                time.sleep(0.05)  # what the publisher and the checkpoint do right after
                perf.send_signal(signal.SIGINT)
                perf.wait()
                texts.append(run(["perf", "script", "-i", str(data), "-F", "ip,sym"], capture_output=True,
                                 text=True).stdout)
                for cleanup in after_each[op]:
                    request(cleanup)
            # The client's own session set-up (SSH handshake, hello, what libnetconf2 reads of the
            # server's schemas) falls inside the window too: its samples are left out.
            own = "Server::opGetConfig" if op == "get" else "Server::opEditConfig"
            others = [h for h in HANDLERS if h != own]
            samples = [s for t in texts for s in stacks(t)
                       if not any(m in f for f in s for m in others + ["SshListener::handshake", "ClientHello",
                                                                         "serverHello"])]
            counts = collections.Counter()
            for s in samples:
                for label, markers in PARTS:
                    if any(m in f for f in s for m in markers):
                        counts[label] += 1
            print(f"\n{op} {a.n}: {len(samples)} perf samples, {len(samples) / a.rounds:.0f} per request "
                  f"(~{len(samples) / a.rounds:.0f} ms of server CPU each)")
            for label, _ in PARTS:
                if counts[label]:
                    print(f"  {100 * counts[label] / max(1, len(samples)):5.1f}%  {label}")
    finally:
        if server:
            server.terminate()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
