#!/usr/bin/env python3
"""Issue 37: single-row transactions against a store on this machine, OVSDB against ncstore.

For every backend, durability, shape (clients x transactions) and round this starts a fresh server
in a temporary directory, runs ncstore-localload against it (C++: forks the clients, times every
transaction, measures the server's CPU over the timed interval) and stops the server. Each figure
is the median of --rounds runs. Writes a Markdown table (--out) and the raw runs beside it (.json).

    benchmarks/local/ovsdb_vs_ncstore.py --build build-bench --out benchmarks/local/results.md

Standard library only. A backend is a Backend entry in BACKENDS: how to start its server for one
run (fresh state, durable or not) and stop it; the driver needs the matching --backend.
"""

import argparse
import dataclasses
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclasses.dataclass
class Server:
    """One running server of one run."""
    proc: subprocess.Popen
    socket: str
    driver_args: list  # extra ncstore-localload arguments (e.g. --opt KEY=VALUE)
    log_files: list    # shown when the server fails


@dataclasses.dataclass
class Backend:
    name: str                   # ncstore-localload --backend NAME
    start: object               # start(workdir: Path, durable: bool, args) -> Server
    stop: object                # stop(server)
    version: object             # version(args) -> str, for the machine description
    durability: tuple           # (label non-durable, label durable) for the table


def wait_for_socket(proc, path, what, timeout=15.0, logs=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening" + tail_logs(logs))
        if os.path.exists(path):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
                return
            except OSError:
                pass
            finally:
                s.close()
        time.sleep(0.02)
    raise RuntimeError(f"{what} did not listen on {path} within {timeout} s" + tail_logs(logs))


def tail_logs(paths):
    out = ""
    for p in paths:
        try:
            out += f"\n--- {p}:\n" + "".join(Path(p).read_text(errors="replace").splitlines(True)[-20:])
        except OSError:
            pass
    return out


def stop_process(proc, timeout=10.0):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- OVSDB: Debian's ovsdb-server (package openvswitch-common), database Bench of bench.schema.

def start_ovsdb(workdir, durable, args):
    db, sock, ctl = workdir / "bench.db", workdir / "db.sock", workdir / "ovsdb.ctl"
    subprocess.run([args.ovsdb_tool, "create", str(db), str(HERE / "bench.schema")], check=True)
    logs = [str(workdir / "ovsdb-server.log"), str(workdir / "ovsdb-server.stderr")]
    with open(logs[1], "wb") as err:
        proc = subprocess.Popen([args.ovsdb_server, f"--remote=punix:{sock}", f"--unixctl={ctl}", "--no-chdir",
                                 f"--pidfile={workdir / 'ovsdb-server.pid'}", f"--log-file={logs[0]}", str(db)],
                                stdin=subprocess.DEVNULL, stdout=err, stderr=err)
    wait_for_socket(proc, str(sock), "ovsdb-server", logs=logs)
    # Durability is per transaction: the driver appends {"op":"commit","durable":true} (--durable).
    return Server(proc, str(sock), [], logs)


def stop_ovsdb(server):
    stop_process(server.proc)


def ovsdb_version(args):
    out = subprocess.run([args.ovsdb_server, "--version"], capture_output=True, text=True).stdout
    return out.splitlines()[0] if out else "?"


# --- ncstore: ncstored on a fresh data directory with the rows' model; the driver connects to its
# application socket (libncstore-app). Durability is the server's: normal against OVSDB's
# non-durable (survives a crash of the process, not of the OS), full against durable (fsync).

def start_ncstore(workdir, durable, args):
    data = workdir / "data"
    logs = [str(workdir / "ncstored.log")]
    with open(logs[0], "wb") as out:
        proc = subprocess.Popen([args.ncstored, "--data-dir", str(data), "--port", "0", "--listen", "127.0.0.1",
                                 "--yang-dir", str(HERE / "yang"), "--durability", "full" if durable else "normal",
                                 "--log-level", "warning", "--history-max-commits", str(args.ncstore_history)],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    wait_for_socket(proc, str(data / "app.sock"), "ncstored", timeout=60, logs=logs)
    return Server(proc, str(data / "app.sock"), [], logs)


def ncstore_version(args):
    out = subprocess.run([args.ncstored, "--version"], capture_output=True, text=True).stdout
    return (out.splitlines()[0] if out else "?") + f" (commit history: {args.ncstore_history} commits)"


# The backends, in the order they are measured.
BACKENDS = {
    "ovsdb": Backend("ovsdb", start_ovsdb, stop_ovsdb, ovsdb_version,
                     ("non-durable (no commit op)", 'durable (commit "durable":true)')),
    "ncstore": Backend("ncstore", start_ncstore, stop_ovsdb, ncstore_version,
                       ("--durability normal", "--durability full")),
}


# --- Measurement.

def proc_cpu(pid):
    """On-CPU seconds of a live process: /proc/PID/stat utime + stime (ticks)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def children_cpu():
    """CPU seconds of this script's waited-for children (the driver and its client processes)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def machine_busy():
    """Busy CPU seconds of the whole machine so far (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / CLK_TCK


def fs_type(path):
    best, kind = "", "?"
    with open("/proc/mounts") as f:
        for line in f:
            dev, mnt, typ = line.split()[:3]
            if (str(path) + "/").startswith(mnt.rstrip("/") + "/") and len(mnt) >= len(best):
                best, kind = mnt, typ
    return kind


def wait_idle(args):
    """Waits (at most --idle-wait s) until the rest of the machine uses under --idle-cores cores
    over half a second: on a shared machine, others' builds would otherwise be in the figures."""
    deadline = time.monotonic() + args.idle_wait
    while True:
        b0, t0 = machine_busy(), time.monotonic()
        time.sleep(0.5)
        load = (machine_busy() - b0) / (time.monotonic() - t0)
        if load < args.idle_cores:
            return
        if time.monotonic() > deadline:
            log(f"machine still busy ({load:.2f} cores) after {args.idle_wait} s: measuring anyway")
            return
        time.sleep(2)


def run_once(args, backend, durable, clients, transactions):
    wait_idle(args)
    workdir = Path(tempfile.mkdtemp(prefix=f"l37-{backend.name}-", dir=args.tmp))
    try:
        server = backend.start(workdir, durable, args)
        try:
            out = workdir / "result.json"
            cmd = [args.driver, "--backend", backend.name, "--socket", server.socket, "--clients", str(clients),
                   "--transactions", str(transactions), "--warmup", str(args.warmup),
                   "--server-pid", str(server.proc.pid), "--json", str(out)] + server.driver_args
            if durable:
                cmd.append("--durable")
            ru0, busy0, srv0, t0 = children_cpu(), machine_busy(), proc_cpu(server.proc.pid), time.monotonic()
            rc = subprocess.run(cmd, stdin=subprocess.DEVNULL).returncode
            ru1, busy1, srv1, t1 = children_cpu(), machine_busy(), proc_cpu(server.proc.pid), time.monotonic()
            if not out.exists():
                raise RuntimeError(f"ncstore-localload exited with {rc} without results" + tail_logs(server.log_files))
            r = json.loads(out.read_text())
            if server.proc.poll() is not None:
                r["errors"] += 1
                r["first_error"] = r.get("first_error") or f"server exited with {server.proc.returncode}"
            # What else ran on the machine meanwhile (others' builds; kernel threads, e.g. the journal's
            # for fsync): busy CPU minus server and driver (its process and its clients), over the
            # driver's whole life (connect and warmup included).
            r["window_s"] = t1 - t0
            r["driver_process_cpu_s"] = ru1 - ru0
            r["others_cpu_s"] = max(0.0, (busy1 - busy0) - ((srv1 or 0) - (srv0 or 0)) - (ru1 - ru0))
            r["driver_rc"] = rc
            return r
        finally:
            backend.stop(server)
    finally:
        if args.keep:
            log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def describe_machine(args, backends):
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    try:
        debian = Path("/etc/debian_version").read_text().strip()
    except OSError:
        debian = "?"
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or "?"
    except OSError:
        commit = "?"
    tmp = Path(args.tmp or tempfile.gettempdir()).resolve()
    lines = [f"- CPU: {model}, {os.cpu_count()} cores; {mem_gb:.0f} GiB; kernel {platform.release()}; "
             f"Debian {debian}",
             f"- Temporary directories in {tmp} ({fs_type(tmp)})",
             f"- ncstore commit {commit} (working tree as built); driver {args.driver}"]
    for b in backends:
        lines.append(f"- {b.name}: {b.version(args)}")
    return lines


def med(runs, key, sub=None):
    vals = [(r[key][sub] if sub else r[key]) for r in runs]
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def summarize(runs):
    tps = [r["tx_per_s"] for r in runs]
    return {
        "tx_per_s": statistics.median(tps), "tx_min": min(tps), "tx_max": max(tps),
        "p50": med(runs, "latency_ms", "p50"), "p90": med(runs, "latency_ms", "p90"),
        "p99": med(runs, "latency_ms", "p99"), "max": med(runs, "latency_ms", "max"),
        "server_us": med(runs, "server_cpu_us_per_tx"), "client_us": med(runs, "client_cpu_us_per_tx"),
        "client_sys": statistics.median(r["client_cpu_sys_s"] / r["client_cpu_s"] if r["client_cpu_s"] else 0
                                        for r in runs),
        "others": statistics.median(r["others_cpu_s"] / r["window_s"] if r["window_s"] else 0 for r in runs),
        "others_max": max(r["others_cpu_s"] / r["window_s"] if r["window_s"] else 0 for r in runs),
        "errors": sum(r["errors"] for r in runs),
        "first_error": next((r["first_error"] for r in runs if r["errors"]), None),
    }


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def comparison(results, backends):
    """Every other backend against ovsdb, with issue 37's goals."""
    lines = []
    for b in backends:
        if b.name == "ovsdb":
            continue
        for (name, durable, shape), s in results.items():
            base = results.get(("ovsdb", durable, shape))
            if name != b.name or not base:
                continue
            ratio = s["tx_per_s"] / base["tx_per_s"] if base["tx_per_s"] else 0
            goal = 2.0 if durable else 1.0
            clients = int(shape.split("x")[0])
            checks = [f"{ratio:.2f}x ovsdb's tx/s (goal >= {goal:.1f}x: {'met' if ratio >= goal else 'NOT met'})",
                      f"server CPU {fmt(s['server_us'], 1)} vs {fmt(base['server_us'], 1)} us/tx (goal <= 20: "
                      f"{'met' if (s['server_us'] or 1e9) <= 20 else 'NOT met'})"]
            if clients == 50:
                checks.append(f"p99 {fmt(s['p99'])} ms (goal <= 20: {'met' if (s['p99'] or 1e9) <= 20 else 'NOT met'})")
            lines.append(f"| {b.name} | {'durable' if durable else 'non-durable'} | {shape} | " + "; ".join(checks)
                         + " |")
    if not lines:
        return []
    return ["", "## Against OVSDB (issue 37's goals)", "",
            "| backend | durability | shape | result |", "|---|---|---|---|"] + lines


# --- Extras (--extras): what an application costs ncstored, beyond its own commits.

def ncstore_server(args, workdir):
    """ncstored (durability normal) on a fresh data dir: (Server, port, admin password)."""
    server = start_ncstore(workdir, False, args)
    port_file = workdir / "data" / "port"
    log_text = ""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        log_text = Path(server.log_files[0]).read_text()
        m = re.search(r"^listening on [0-9.]+:(\d+)$", log_text, re.M)
        if m:
            password = re.search(r"^login: admin / password: (\S+)", log_text, re.M).group(1)
            return server, int(m.group(1)), password
        time.sleep(0.05)
    raise RuntimeError("ncstored did not print its port" + tail_logs(server.log_files))


def start_app(args, *cmd):
    """An ncstore-bench-app process, once it printed ready."""
    proc = subprocess.Popen([args.bench_app, *cmd], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    if line != "ready":
        proc.kill()
        raise RuntimeError(f"ncstore-bench-app {cmd[0]} did not start: {line!r}")
    return proc


def stop_app(proc):
    proc.terminate()
    out = proc.communicate(timeout=30)[0]
    return json.loads(out.strip().splitlines()[-1]) if out.strip() else {}


def driver_run(args, server, clients, transactions, workdir, name):
    out = workdir / f"{name}.json"
    subprocess.run([args.driver, "--backend", "ncstore", "--socket", server.socket, "--clients", str(clients),
                    "--transactions", str(transactions), "--warmup", str(args.warmup), "--server-pid",
                    str(server.proc.pid), "--json", str(out)], check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def extras(args):
    """Subscriber cost, pull against configuration, notifications: Markdown lines."""
    lines = []
    # 1000 single-entry local commits with 0, 1 and 10 verify+apply subscribers.
    rows = []
    for n in (0, 1, 10):
        per = []
        for _ in range(args.rounds):
            workdir = Path(tempfile.mkdtemp(prefix="ncstore-extras-", dir=args.tmp))
            server, _, _ = ncstore_server(args, workdir)
            try:
                subs = start_app(args, "subscribers", "--socket", server.socket, "--count", str(n)) if n else None
                r = driver_run(args, server, 1, 1000, workdir, f"subs{n}")
                seen = stop_app(subs) if subs else {}
                per.append((r, seen))
            finally:
                stop_ovsdb(server)
                shutil.rmtree(workdir, ignore_errors=True)
        p50 = statistics.median(r["latency_ms"]["p50"] for r, _ in per)
        p99 = statistics.median(r["latency_ms"]["p99"] for r, _ in per)
        cpu = statistics.median(r["server_cpu_us_per_tx"] for r, _ in per)
        errors = sum(r["errors"] for r, _ in per)
        applied = [s.get("applied") for _, s in per]
        rows.append((n, p50, p99, cpu, errors, applied))
        log(f"extras: {n} subscribers: p50 {p50:.3f} ms, p99 {p99:.3f} ms, server {cpu:.1f} us/commit")
    base = rows[0][1]
    lines += ["", "## Cost of subscribers (1 client, 1000 single-entry local commits)", "",
              "Each subscriber is a connection of `ncstore-bench-app subscribers` that verifies (accepts) and "
              "applies every change of /ncstore-bench-rows:rows. Goal: +1 subscriber <= +50 us p50.", "",
              "| subscribers | p50 ms | p99 ms | server CPU us/commit | p50 vs none | applied per subscriber "
              "(runs) | errors |", "|---|---|---|---|---|---|---|"]
    for n, p50, p99, cpu, errors, applied in rows:
        lines.append(f"| {n} | {p50:.3f} | {p99:.3f} | {cpu:.1f} | {(p50 - base) * 1000:+.0f} us | "
                     f"{', '.join(str(a // n) if a is not None and n else '-' for a in applied)} | {errors} |")

    # <get> of 1000 provider-supplied entries against the same entries from configuration.
    workdir = Path(tempfile.mkdtemp(prefix="ncstore-extras-", dir=args.tmp))
    server, port, password = ncstore_server(args, workdir)
    try:
        driver_run(args, server, 1, 1000, workdir, "load")  # rows c0-s0 .. c0-s999 (and the warmup's)
        provider = start_app(args, "provider", "--socket", server.socket, "--entries", "1000")
        filters = {"config": ("get-config", "<rows xmlns=\"urn:ncstore:bench:rows\"/>"),
                   "provider": ("get", "<state xmlns=\"urn:ncstore:bench:rows\"/>")}
        timings = {}
        for name, (op, flt) in filters.items():
            f = workdir / f"{name}.xml"
            f.write_text(flt)
            out = subprocess.run([args.client, "--port", str(port), "--user", "admin", "--password", password,
                                  "--repeat", str(20 * args.rounds), "--json", op, "--filter-subtree", str(f)],
                                 capture_output=True, text=True, check=True).stdout
            timings[name] = json.loads(out.strip().splitlines()[-1])
        pulls = stop_app(provider).get("pulls")
    finally:
        stop_ovsdb(server)
        shutil.rmtree(workdir, ignore_errors=True)
    c, p = timings["config"], timings["provider"]
    lines += ["", "## Pull: `<get>` of 1000 provider-supplied entries vs the same entries from configuration", "",
              f"ncstore-client (libnetconf2, one SSH session) sends {c['count']} reads of each, one after another; "
              f"the provider (`ncstore-bench-app provider`) builds its 1000 rows per pull; it was pulled {pulls} "
              "times in all (the client's own reads at login included).", "",
              "| read | p50 ms | p99 ms | reads/s |", "|---|---|---|---|",
              f"| get-config of /rows (configuration) | {c['lat_p50_s'] * 1000:.2f} | {c['lat_p99_s'] * 1000:.2f} | "
              f"{c['ops_per_s']:.1f} |",
              f"| get of /state (the provider) | {p['lat_p50_s'] * 1000:.2f} | {p['lat_p99_s'] * 1000:.2f} | "
              f"{p['ops_per_s']:.1f} |",
              f"| ratio provider / configuration | {p['lat_p50_s'] / c['lat_p50_s']:.2f}x | | |"]

    # 10,000 notifications from one application to one NETCONF subscriber.
    workdir = Path(tempfile.mkdtemp(prefix="ncstore-extras-", dir=args.tmp))
    server, port, password = ncstore_server(args, workdir)
    count = 10000
    try:
        sub = subprocess.Popen([args.client, "--port", str(port), "--user", "admin", "--password", password,
                                "subscribe"], stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)  # subscribed
        t0 = time.monotonic()
        sender = subprocess.Popen([args.bench_app, "notify", "--socket", server.socket, "--count", str(count)],
                                  stdout=subprocess.PIPE, text=True)
        seen = 0
        last = None
        deadline = t0 + 120
        for line in sub.stdout:
            if "<seq>" in line or "<tick" in line:
                seen += line.count("<seq>")
                if seen >= count:
                    last = time.monotonic()
                    break
            if time.monotonic() > deadline:
                break
        sent = json.loads(sender.communicate(timeout=60)[0].strip().splitlines()[-1])
        sub.kill()
        sub.wait()
    finally:
        stop_ovsdb(server)
        shutil.rmtree(workdir, ignore_errors=True)
    lines += ["", "## Notifications: one application to one NETCONF subscriber", "",
              f"`ncstore-bench-app notify` raises {count} notifications, each request waiting for its reply; "
              "`ncstore-client subscribe` (RFC 5277) prints what it receives. Goal: 10,000 notifications/s.", "",
              "| raised per s (application) | received | first raised to last received s | received per s |",
              "|---|---|---|---|",
              f"| {sent['per_s']:,.0f} | {seen} | {(last - t0) if last else float('nan'):.2f} | "
              f"{(seen / (last - t0)) if last else 0:,.0f} |"]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backends", default="ovsdb", help=f"comma-separated, of: {', '.join(BACKENDS)}")
    ap.add_argument("--shapes", default="50x1000,5x10000", help="CLIENTSxTRANSACTIONS, comma-separated")
    ap.add_argument("--durability", default="non-durable,durable", help="non-durable, durable or both")
    ap.add_argument("--rounds", type=int, default=3, help="runs per point (median)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed transactions per client before the barrier")
    ap.add_argument("--build", default=None, help="build directory with benchmarks/local/ncstore-localload")
    ap.add_argument("--driver", default=None, help="the ncstore-localload binary (default: from --build)")
    ap.add_argument("--ovsdb-server", default=shutil.which("ovsdb-server") or "/usr/sbin/ovsdb-server")
    ap.add_argument("--ovsdb-tool", default=shutil.which("ovsdb-tool") or "/usr/bin/ovsdb-tool")
    ap.add_argument("--ncstored", default=None, help="the ncstored binary (default: from --build)")
    ap.add_argument("--extras", action="store_true", help="also: the cost of subscribers, pull against "
                    "configuration, notifications (ncstore only)")
    ap.add_argument("--ncstore-history", type=int, default=1000,
                    help="ncstored --history-max-commits (its default; 0: no commit history)")
    ap.add_argument("--tmp", default=None, help="where the temporary directories go (on a disk, for durable)")
    ap.add_argument("--idle-wait", type=float, default=120, help="before each run, wait at most this long (s) "
                    "for the machine to be idle (0: do not wait)")
    ap.add_argument("--idle-cores", type=float, default=0.1, help="idle: other processes using under this many cores")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    ap.add_argument("--out", default=None, help="Markdown results (and OUT minus .md plus .json: every run)")
    args = ap.parse_args()

    if not args.driver:
        builds = [Path(args.build)] if args.build else [REPO / "build-bench", REPO / "build"]
        cands = [b / "benchmarks/local/ncstore-localload" for b in builds]
        args.driver = next((str(c) for c in cands if c.exists()), None)
        if not args.driver:
            sys.exit(f"ncstore-localload not found in {', '.join(map(str, cands))}: build it "
                     "(cmake --build BUILD --target ncstore-localload) or give --driver")
    build_dir = Path(args.driver).resolve().parents[2]
    if not args.ncstored:
        args.ncstored = str(build_dir / "netconfd" / "ncstored")
    args.bench_app = str(build_dir / "benchmarks" / "local" / "ncstore-bench-app")
    args.client = str(build_dir / "clients" / "ncstore-client")
    try:
        backends = [BACKENDS[n] for n in args.backends.split(",")]
    except KeyError as e:
        sys.exit(f"unknown backend {e} (known: {', '.join(BACKENDS)})")
    modes = {"non-durable": [False], "durable": [True], "both": [False, True]}
    durabilities = []
    for d in args.durability.split(","):
        if d not in modes:
            sys.exit(f"--durability: {d}? (non-durable, durable, both)")
        durabilities += [m for m in modes[d] if m not in durabilities]
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    if args.tmp:
        Path(args.tmp).mkdir(parents=True, exist_ok=True)
    tmp_fs = fs_type(Path(args.tmp or tempfile.gettempdir()).resolve())
    if tmp_fs in ("tmpfs", "ramfs") and True in durabilities:
        log(f"warning: temporary directories on {tmp_fs}: durable runs do not reach a disk (use --tmp)")

    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    runs = {}
    # Rounds outermost: a disturbance of the machine spreads over the points instead of hitting one.
    for rnd in range(args.rounds):
        for b in backends:
            for durable in durabilities:
                for clients, transactions in shapes:
                    key = (b.name, durable, f"{clients}x{transactions}")
                    r = run_once(args, b, durable, clients, transactions)
                    runs.setdefault(key, []).append(r)
                    log(f"round {rnd + 1}/{args.rounds} {b.name} {'durable' if durable else 'non-durable'} "
                        f"{clients}x{transactions}: {r['tx_per_s']:.0f} tx/s, p99 {r['latency_ms']['p99']:.2f} ms, "
                        f"server {r.get('server_cpu_us_per_tx') or 0:.1f} us/tx, driver "
                        f"{r['client_cpu_us_per_tx']:.1f} us/tx, others {r['others_cpu_s']:.2f} s"
                        + (f", {r['errors']} ERRORS: {r['first_error']}" if r["errors"] else ""))

    results = {k: summarize(v) for k, v in runs.items()}
    lines = ["# Single-row local transactions: " + " vs ".join(b.name for b in backends) + " (issue 37)", "",
             f"Taken {started} with:", "", "```", " ".join([sys.executable] + sys.argv), "```", ""]
    lines += describe_machine(args, backends)
    lines += ["", f"Each point: median of {args.rounds} runs, each on a fresh server and database (so every run "
              f"ends with clients x transactions + {args.warmup} x clients rows). Every client process has its own "
              "connection and sends one single-row insert per transaction, waiting for each reply; the clients "
              f"first connect and do {args.warmup} untimed transactions, then start together at a barrier. "
              "tx/s: successful transactions over the wall time from the barrier's release to the last reply "
              "(min-max of the runs). Latencies: every timed transaction, all clients together. Server CPU: the "
              "server's on-CPU time over the same interval (sum of /proc/PID/task/*/schedstat, or the "
              "/proc/PID/stat ticks when larger) per transaction. Driver CPU: the client processes' own CPU "
              "(getrusage) over their timed loops per transaction, and its share in the kernel (sys). Others: "
              "CPU used meanwhile by the rest of the machine (other processes, kernel threads such as the "
              "file system's journal), in cores, over the driver's whole life, median (max of the runs): near 0 "
              "unless something else ran.", "",
              "| backend | durability | clients x tx | tx/s (min-max) | p50 ms | p90 ms | p99 ms | max ms | "
              "server CPU us/tx | driver CPU us/tx (sys) | others, cores (max) | errors |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for b in backends:
        for durable in durabilities:
            for clients, transactions in shapes:
                s = results[(b.name, durable, f"{clients}x{transactions}")]
                lines.append(
                    f"| {b.name} | {b.durability[durable]} | {clients} x {transactions} | "
                    f"{s['tx_per_s']:,.0f} ({s['tx_min']:,.0f}-{s['tx_max']:,.0f}) | {fmt(s['p50'], 3)} | "
                    f"{fmt(s['p90'], 3)} | {fmt(s['p99'], 3)} | {fmt(s['max'])} | {fmt(s['server_us'], 1)} | "
                    f"{fmt(s['client_us'], 1)} ({s['client_sys'] * 100:.0f}% sys) | "
                    f"{s['others']:.2f} ({s['others_max']:.2f}) | "
                    f"{'**' + str(s['errors']) + '**' if s['errors'] else 0} |")
    errs = [(k, s["first_error"]) for k, s in results.items() if s["errors"]]
    if errs:
        lines += ["", "**Runs with errors** (first message of each point):", ""]
        lines += [f"- {k[0]} {'durable' if k[1] else 'non-durable'} {k[2]}: `{e}`" for k, e in errs]
    lines += comparison(results, backends)
    if args.extras:
        lines += extras(args)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
        raw = Path(args.out).with_suffix(".json")
        raw.write_text(json.dumps([{"backend": k[0], "durable": k[1], "shape": k[2], "runs": v}
                                   for k, v in runs.items()], indent=1) + "\n")
        log(f"wrote {args.out} and {raw}")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
