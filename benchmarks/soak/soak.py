#!/usr/bin/python3
"""Soak test: many sessions doing everything at once for a long time, while the server's resources
are sampled every minute (issue 10). Not part of CI: a full run takes 30 minutes.

  benchmarks/soak/soak.py --ncstored build/netconfd/ncstored [--minutes 30] [--sessions 50]
                          [--out benchmarks/results/DATE-COMMIT-soak.md]

What it does: starts ncstored (durability full, the bundled Open ROADM inventory model) on a
temporary data dir, seeds devices (300 owned by nobody and 20 per session: the store starts at its
steady size), then runs --sessions client sessions in --processes worker
processes (threads inside each, so that the Python client is not the bottleneck). Each session
owns its own device keys and loops over a weighted mix of: create a device (edit-config create),
merge leaves into one of its devices, delete one of them, read one device by key, read the whole
running datastore, lock/edit/unlock running, edit candidate and commit under the running and
candidate locks (RFC 6241's discipline: a commit replaces running), and — rarely — kill
another live session (the victim reconnects) or close and reconnect itself. Replies are checked:
an rpc-error other than the ones concurrency makes legitimate (lock-denied, in-use) is an error.

A session that loses its connection (killed) takes stock of its devices when it reconnects: a
create whose reply the kill cut off may still have been committed.

Every minute: the server's RSS, the number of devices in running, open file descriptors, threads,
the WAL file's size, operations done and their latency (p50/p99/max) over that minute. At the end
the verdict against the issue's targets: no error, the store's size flat and RSS growth <= 5% after
the first 5 minutes (the mean of the last five samples against the first five: one sample swings
with the replies in flight), fds and threads flat (their maximum within the sessions' bound, no
upward trend), WAL bounded. SQLite's page cache (ncstored --sqlite-cache-mb, 64 MiB by default)
fills as the file grows and is part of the server's steady memory: a run that should show the
rest flat sooner passes --server-arg=--sqlite-cache-mb=N. Output: a markdown report (table +
verdict + machine) and a JSON file beside it.
"""
import argparse
import json
import multiprocessing as mp
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import paramiko

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "clients", "python"))
from ncframed import BASE_NS, FramedSession, ReplyMismatch  # noqa: E402

INV_NS = "urn:ncstore:yang:openroadm-inventory"
MONITORING_NS = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"
USER, PASSWORD = "soak", "soak-Secret-1"
# Devices a session keeps at most. Each session starts with this many (created before the clock
# starts) and creates one only after deleting one: the store's size is flat from the first minute.
KEEP = 20
# rpc-errors that concurrency makes legitimate: another session holds a lock.
EXPECTED_TAGS = {"lock-denied", "in-use"}


class Session(FramedSession):
    """A session of the soak's user."""

    def __init__(self, port, timeout=120):
        super().__init__("127.0.0.1", port, USER, PASSWORD, timeout=timeout)


# A subtree filter that selects every device's key and nothing else.
DEVICE_IDS = (f'<filter type="subtree"><openroadm-devices xmlns="{INV_NS}"><openroadm-device><device-id/>'
              f'</openroadm-device></openroadm-devices></filter>')


def error_tags(reply):
    return re.findall(rb"<error-tag>([^<]*)</error-tag>", reply)


def device_xml(device_id, template):
    return template.replace("C201-7-1A-9001", device_id)


def edit(target, config, extra=""):
    return (f'<edit-config><target><{target}/></target>{extra}<config xmlns:nc="{BASE_NS}">{config}</config>'
            f"</edit-config>")


def strip_comment(xml):
    return re.sub(r"<!--.*?-->", "", xml, flags=re.S).strip()


def inner_config(xml):
    """The content of a <config> example file."""
    body = strip_comment(xml)
    start = body.index(">", body.index("<config")) + 1
    return body[start:body.rindex("</config>")]


class Worker:
    """One client session's loop; counts and timings go to `report` (a queue) every second."""

    def __init__(self, index, port, stop, report, live_ids, templates, seed):
        self.index = index
        self.port = port
        self.stop = stop
        self.report = report
        self.live_ids = live_ids
        self.t = templates
        self.rng = random.Random(seed)
        self.mine = []          # device ids this worker created and did not delete
        self.next_device = 0
        self.session = None
        self.samples = []       # (op, seconds)
        self.errors = []        # unexpected errors
        self.expected = 0
        self.reconnects = 0
        self.killed = 0
        self.refused = False
        self.keep = KEEP

    def connect(self):
        if self.session:
            self.live_ids.pop(self.session.id, None)
            self.session.close()
        self.session = Session(self.port)
        self.live_ids[self.session.id] = self.index

    def adopt(self, lost_id):
        """After a lost session: the devices of this worker that running holds. A create whose
        reply the kill cut off may have been committed, and a device nobody owns would never be
        deleted: the store would grow for the whole run (the first soak did).

        A killed session's transport is cut at once, but an RPC it was running finishes
        (unanswered, RFC 6241 7.9): the stock is taken once the server no longer lists the lost
        session (ietf-netconf-monitoring), else that RPC could still change it afterwards."""
        session_filter = (f'<filter type="subtree"><netconf-state xmlns="{MONITORING_NS}"><sessions><session>'
                          f'<session-id>{lost_id}</session-id></session></sessions></netconf-state></filter>')
        deadline = time.time() + 60
        listed = re.compile(rb"<session-id[^>]*>%d<" % lost_id)
        while listed.search(self.session.call(f"<get>{session_filter}</get>")):
            if time.time() > deadline:
                self.errors.append(f"session {lost_id} still listed 60 s after it was killed")
                break
            time.sleep(0.05)
        reply = self.session.call("<get-config><source><running/></source>%s</get-config>" % DEVICE_IDS)
        prefix = f"w{self.index}-d"
        self.mine = [d.decode() for d in re.findall(rb"<device-id[^>]*>([^<]*)</device-id>", reply)
                     if d.decode().startswith(prefix)]

    def timed(self, op, operation):
        """True when the reply is <ok/> or data; an expected refusal sets self.refused."""
        t0 = time.perf_counter()
        reply = self.session.call(operation)
        self.samples.append((op, time.perf_counter() - t0))
        tags = {t.decode() for t in error_tags(reply)}
        self.refused = bool(tags) and tags <= EXPECTED_TAGS
        if tags - EXPECTED_TAGS or (not tags and b"<rpc-reply" not in reply[:200]):
            self.errors.append(f"{op}: {reply[:600].decode(errors='replace')}")
        elif tags:
            self.expected += 1
        return not tags

    def new_device(self):
        self.next_device += 1
        return f"w{self.index}-d{self.next_device}"

    # The mix: (operation, weight). Locks are rare: while one session holds running, every other
    # session's write is refused (in-use), as RFC 6241 says.
    MIX = [("create", 25), ("merge", 20), ("delete", 15), ("read-one", 25), ("read-all", 3),
           ("locked-merge", 2), ("candidate", 3), ("read-one", 5.5), ("kill", 1), ("reconnect", 0.5)]

    def step(self):
        op = self.rng.choices([m[0] for m in self.MIX], weights=[m[1] for m in self.MIX])[0]
        if not self.mine:
            op = "create"
        elif op == "create" and len(self.mine) >= self.keep:
            op = "delete"  # at its bound a session deletes instead: the store's size stays flat
        getattr(self, "op_" + op.replace("-", "_"))()

    def op_create(self):
        dev = self.new_device()
        if self.timed("create", edit("running", device_xml(dev, self.t["create"]))):
            self.mine.append(dev)

    def op_merge(self):
        dev = self.rng.choice(self.mine)
        self.timed("merge", edit("running", device_xml(dev, self.t["merge"])))

    def op_delete(self):
        dev = self.mine.pop(self.rng.randrange(len(self.mine)))
        if not self.timed("delete", edit("running", device_xml(dev, self.t["delete"]))) and self.refused:
            self.mine.append(dev)  # refused (locked): still there

    def op_read_one(self):
        dev = self.rng.choice(self.mine)
        self.timed("read-one", "<get-config><source><running/></source>%s</get-config>"
                   % device_xml(dev, self.t["filter"]))

    def op_read_all(self):
        self.timed("read-all", "<get-config><source><running/></source></get-config>")

    def op_locked_merge(self):
        if self.timed("lock", "<lock><target><running/></target></lock>"):
            self.op_merge()
            self.timed("unlock", "<unlock><target><running/></target></unlock>")

    def op_candidate(self):
        # RFC 6241 8.3: a commit makes running what the candidate is, so a session edits the
        # candidate under the running and candidate locks (else others' direct running edits
        # would be overwritten by its commit, as the RFC says they are). With both locks, an
        # acknowledged candidate edit followed by a successful commit must be in running.
        if not self.timed("lock", "<lock><target><running/></target></lock>"):
            return
        if self.timed("lock", "<lock><target><candidate/></target></lock>"):
            dev = self.new_device()
            if self.timed("candidate-edit", edit("candidate", device_xml(dev, self.t["create"]))):
                if self.timed("commit", "<commit/>"):
                    read = "<get-config><source><%s/></source>" + device_xml(dev, self.t["filter"]) + "</get-config>"
                    reply = self.session.call(read % "running")
                    if dev.encode() in reply:
                        self.mine.append(dev)
                    else:
                        # What a report needs to find the cause: where the entry is, a moment later.
                        when = time.strftime("%H:%M:%S")
                        in_candidate = dev.encode() in self.session.call(read % "candidate")
                        time.sleep(0.5)
                        later = dev.encode() in self.session.call(read % "running")
                        self.errors.append(f"commit: acknowledged candidate entry {dev} is not in running "
                                           f"(session {self.session.id}, {when} UTC; in candidate: "
                                           f"{in_candidate}; in running 0.5 s later: {later})")
            self.timed("unlock", "<unlock><target><candidate/></target></unlock>")
        self.timed("unlock", "<unlock><target><running/></target></unlock>")

    def op_kill(self):
        victims = [sid for sid, w in list(self.live_ids.items()) if w != self.index]
        if victims:
            # The victim may end before the kill arrives: then "no session" is right.
            reply = self.session.call(f"<kill-session><session-id>{self.rng.choice(victims)}"
                                      f"</session-id></kill-session>")
            tags = error_tags(reply)
            if tags and not (tags == [b"invalid-value"] and b"no session" in reply):
                self.errors.append(f"kill-session: {reply[:600].decode(errors='replace')}")

    def op_reconnect(self):
        self.timed("close-session", "<close-session/>")
        self.reconnects += 1
        self.connect()

    def flush(self):
        self.report.put({"samples": self.samples, "errors": self.errors, "expected": self.expected,
                         "reconnects": self.reconnects, "killed": self.killed})
        self.samples, self.errors = [], []
        self.expected = self.reconnects = self.killed = 0

    def run(self):
        last = time.time()
        lost_id = 0
        self.mine = [f"w{self.index}-d{i}" for i in range(1, self.keep + 1)]  # made by main()
        self.next_device = self.keep
        self.connect()
        while not self.stop.is_set():
            try:
                if self.session is None:  # lost: a new session, then take stock
                    self.connect()
                    self.adopt(lost_id)
                self.step()
            except ReplyMismatch as e:
                # Never expected: the server answered out of turn. The session cannot be trusted.
                self.errors.append(f"out-of-turn reply on session {self.session.id}: {e}")
                self.live_ids.pop(self.session.id, None)
                self.session.close()
                self.session = None
                lost_id = 0
            except (EOFError, OSError, paramiko.SSHException) as e:
                if self.stop.is_set():
                    break
                # Killed by another worker (or the connection dropped): reconnect next turn.
                # Refused connections are errors, a kill of the new session is not.
                lost_session = self.session is not None
                if lost_session:
                    lost_id = self.session.id
                    self.live_ids.pop(self.session.id, None)
                self.session = None
                if lost_session:
                    self.killed += 1
                else:
                    self.errors.append(f"reconnect: {e!r}")
                    time.sleep(1)
            if time.time() - last >= 1:
                self.flush()
                last = time.time()
        self.flush()
        if self.session:
            self.session.close()


def worker_process(indices, port, stop, report, live_ids, templates):
    threads = []
    for i in indices:
        w = Worker(i, port, stop, report, live_ids, templates, seed=i)
        t = threading.Thread(target=w.run, daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    kib = lambda k: int(out.get(k, "0 kB").split()[0]) * 1024
    # RssAnon is the heap (malloc arenas, SQLite's page cache, thread stacks); RssFile the mapped
    # libraries and files: telling them apart says which one grows.
    return kib("VmRSS"), kib("RssAnon"), kib("RssFile"), int(out["Threads"])


def percentile(values, p):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100.0 * (len(values) - 1))))]


def start_server(binary, data_dir, log_path, extra):
    subprocess.run([binary, "--data-dir", data_dir, "--add-user", USER], input=PASSWORD + "\n",
                   text=True, check=True, capture_output=True)
    port_file = os.path.join(os.path.dirname(data_dir), "port")
    log = open(log_path, "a")
    # info: a line per session and per failed SSH handshake (a connection closed before its hello
    # is explained there), none per RPC.
    proc = subprocess.Popen([binary, "--data-dir", data_dir, "--listen", "127.0.0.1", "--port", "0",
                             "--print-port-file", port_file, "--log-level", "info",
                             "--max-sessions", "256", *extra], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while not os.path.exists(port_file) or not open(port_file).read().strip():
        if proc.poll() is not None or time.time() > deadline:
            raise SystemExit("ncstored did not start; see " + log_path)
        time.sleep(0.1)
    return proc, int(open(port_file).read())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ncstored", default=os.path.join(REPO, "build", "netconfd", "ncstored"))
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--processes", type=int, default=5)
    ap.add_argument("--seed-devices", type=int, default=300)
    ap.add_argument("--interval", type=float, default=60, help="seconds between samples")
    ap.add_argument("--out", help="markdown report (a .json beside it)")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="one more ncstored argument (repeat it), e.g. --server-arg=--sqlite-cache-mb=8")
    args = ap.parse_args()

    examples = os.path.join(REPO, "yang", "openroadm", "examples")
    templates = {
        "create": inner_config(open(os.path.join(examples, "device-create.xml")).read()),
        "merge": inner_config(open(os.path.join(examples, "device-merge-status.xml")).read()),
        "delete": inner_config(open(os.path.join(examples, "device-delete.xml")).read()),
        "filter": strip_comment(open(os.path.join(examples, "device-filter.xml")).read()),
    }
    tmp = tempfile.mkdtemp(prefix="ncstore-soak-")
    data_dir = os.path.join(tmp, "data")
    log_path = os.path.join(tmp, "ncstored.log")
    proc, port = start_server(os.path.abspath(args.ncstored), data_dir, log_path, args.server_arg)
    print(f"soak: ncstored pid {proc.pid} on port {port}, data {data_dir}", flush=True)

    # Seed devices (owned by nobody: they make reads and validation realistic).
    seed = Session(port)
    create = templates["create"]
    device = create[create.index("<openroadm-device "):create.rindex("</openroadm-device>") + len("</openroadm-device>")]
    for i in range(0, args.seed_devices, 50):
        config = (f'<openroadm-devices xmlns="{INV_NS}">' +
                  "".join(device_xml(f"seed-{j}", device) for j in range(i, min(i + 50, args.seed_devices))) +
                  "</openroadm-devices>")
        reply = seed.call(edit("running", config))
        if error_tags(reply):
            raise SystemExit("seeding failed: " + reply[:800].decode(errors="replace"))
    # Every session's own devices, so that the store starts at its steady size.
    owned = [f"w{w}-d{i}" for w in range(args.sessions) for i in range(1, KEEP + 1)]
    for i in range(0, len(owned), 50):
        config = (f'<openroadm-devices xmlns="{INV_NS}">' +
                  "".join(device_xml(d, device) for d in owned[i:i + 50]) + "</openroadm-devices>")
        reply = seed.call(edit("running", config))
        if error_tags(reply):
            raise SystemExit("seeding failed: " + reply[:800].decode(errors="replace"))
    seed.close()
    # Counts the devices each minute (the store's size is flat by construction; this shows it).
    monitor = Session(port)

    manager = mp.Manager()
    stop = manager.Event()
    report = manager.Queue()
    live_ids = manager.dict()
    groups = [list(range(p, args.sessions, args.processes)) for p in range(args.processes)]
    procs = [mp.Process(target=worker_process, args=(g, port, stop, report, live_ids, templates))
             for g in groups if g]
    for p in procs:
        p.start()

    rows, all_errors = [], []
    t_start = time.time()
    end = t_start + args.minutes * 60
    next_sample = t_start + args.interval
    window = []
    totals = {"ops": 0, "expected": 0, "reconnects": 0, "killed": 0}
    wal = os.path.join(data_dir, "ncstore.db-wal")
    while time.time() < end:
        if proc.poll() is not None:
            all_errors.append(f"ncstored exited with {proc.returncode}")
            break
        try:
            item = report.get(timeout=0.5)
            window.extend(item["samples"])
            all_errors.extend(item["errors"])
            for k in ("expected", "reconnects", "killed"):
                totals[k] += item[k]
        except Exception:
            pass
        if time.time() >= next_sample:
            rss, anon, mapped, threads = proc_status(proc.pid)
            devices = len(re.findall(rb"<device-id[ >]", monitor.call(
                "<get-config><source><running/></source>%s</get-config>" % DEVICE_IDS)))
            fds = len(os.listdir(f"/proc/{proc.pid}/fd"))
            secs = [s for _, s in window]
            row = {"minute": round((time.time() - t_start) / 60, 1), "rss_mb": round(rss / 2**20, 1),
                   "anon_mb": round(anon / 2**20, 1), "file_mb": round(mapped / 2**20, 1),
                   "devices": devices, "fds": fds, "threads": threads,
                   "wal_mb": round(os.path.getsize(wal) / 2**20, 2) if os.path.exists(wal) else 0.0,
                   "ops": len(window), "ops_per_s": round(len(window) / args.interval, 1),
                   "p50_ms": round(percentile(secs, 50) * 1000, 2),
                   "p99_ms": round(percentile(secs, 99) * 1000, 2),
                   "max_ms": round(max(secs) * 1000, 2) if secs else 0.0,
                   "errors": len(all_errors)}
            rows.append(row)
            totals["ops"] += len(window)
            print("soak: " + json.dumps(row), flush=True)
            window = []
            next_sample += args.interval
    stop.set()
    for p in procs:
        p.join(timeout=60)
    while not report.empty():
        item = report.get()
        all_errors.extend(item["errors"])
    alive = proc.poll() is None
    monitor.close()
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "killed after 60 s"

    # Verdict against the targets.
    verdict = []
    verdict.append(("no unexpected error and the server alive", not all_errors and alive,
                    f"{len(all_errors)} errors; server {'alive' if alive else 'gone'}; exit {rc}"))
    after5 = [r for r in rows if r["minute"] >= 5]
    if after5:
        # One sample catches however many whole-datastore replies are in flight at that instant
        # (each holds a few copies of a multi-MB reply), so single samples swing by tens of MB
        # both ways. Growth is judged on the trend: the mean of the last five samples against
        # the mean of the first five after minute 5. The largest sample is reported beside it.
        first, last = after5[:5], after5[-5:]
        base = statistics.mean(r["rss_mb"] for r in first)
        end = statistics.mean(r["rss_mb"] for r in last)
        top = max(r["rss_mb"] for r in after5)
        growth = (end - base) / base * 100 if base else 0
        verdict.append(("RSS growth <= 5% after minute 5 (mean of the last 5 samples against the first 5)",
                        growth <= 5, f"{base:.1f} -> {end:.1f} MB ({growth:+.1f}%); largest sample {top} MB "
                        f"({(top - after5[0]['rss_mb']) / after5[0]['rss_mb'] * 100:+.1f}% on minute 5's)"))
        devices = [r["devices"] for r in after5]
        # The RSS verdict means something only if the store's size is flat too.
        verdict.append(("store size flat after minute 5 (devices within 5%)",
                        max(devices) <= min(devices) * 1.05, f"{min(devices)}..{max(devices)} devices"))
        fds = [r["fds"] for r in after5]
        threads = [r["threads"] for r in after5]
        bound = args.sessions + 20
        verdict.append(("open fds flat", max(fds) - min(fds) <= args.sessions // 5 + 5 and fds[-1] <= fds[0] + 5,
                        f"{min(fds)}..{max(fds)} (first {fds[0]}, last {fds[-1]})"))
        verdict.append(("threads flat, bounded by the sessions", max(threads) <= bound and threads[-1] <= threads[0] + 5,
                        f"{min(threads)}..{max(threads)} (bound {bound})"))
        wals = [r["wal_mb"] for r in after5]
        verdict.append(("WAL bounded", max(wals) <= 64, f"max {max(wals)} MB"))
    passed = all(ok for _, ok, _ in verdict)

    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    out = args.out or os.path.join(REPO, "benchmarks", "results",
                                   time.strftime("%Y-%m-%d") + f"-{commit}-soak.md")
    lines = [f"# Soak run at {commit}: {'PASS' if passed else 'FAIL'}", "",
             f"Command: `benchmarks/soak/soak.py --minutes {args.minutes:g} --sessions {args.sessions} "
             f"--processes {args.processes} --seed-devices {args.seed_devices}"
             f"{''.join(' --server-arg=' + a for a in args.server_arg)}`  ",
             f"Machine: {platform.node()}, {os.cpu_count()} cores, {platform.platform()}; "
             f"client and server on the same machine.  ",
             f"Totals: {totals['ops']} operations, {totals['expected']} expected refusals (lock-denied/in-use), "
             f"{totals['killed']} sessions killed by others (reconnected), {totals['reconnects']} "
             f"close-and-reconnect.", "",
             "| minute | RSS MB | anon MB | file MB | devices | fds | threads | WAL MB | ops/s | p50 ms | p99 ms "
             "| max ms | errors |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['minute']} | {r['rss_mb']} | {r['anon_mb']} | {r['file_mb']} | {r['devices']} | {r['fds']} | {r['threads']} | {r['wal_mb']} | "
                     f"{r['ops_per_s']} | {r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} | {r['errors']} |")
    lines += ["", "| target | met | measured |", "|---|---|---|"]
    for name, ok, what in verdict:
        lines.append(f"| {name} | {'yes' if ok else 'NO'} | {what} |")
    if all_errors:
        lines += ["", "First errors:", ""] + ["    " + e.replace("\n", " ")[:400] for e in all_errors[:20]]
    lines += ["", "Latency is measured by Python clients (paramiko) on the same 2 cores: it includes "
                  "the clients' own scheduling; compare minutes, not absolute values."]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.splitext(out)[0] + ".json", "w") as f:
        json.dump({"rows": rows, "verdict": verdict, "totals": totals, "errors": all_errors[:100]}, f, indent=1)
    print("\n".join(lines))
    if passed:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"soak: server data and log kept in {tmp}")
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
