#!/usr/bin/python3
"""End-to-end: a real ncstored on a free loopback port with a temporary data dir; ncstore-client
edit-configs an ietf-interfaces entry over SSH, reads it back with get-config, gets the rpc-error
(and a non-zero exit) for a duplicate create; --timed stats mode works; --each-line sends one
request per line; clients/python/ncraw.py times a get-config without parsing it and reports
rpc-errors; subscribe replays and follows config changes.

usage: e2e_client.py NCSTORED NCSTORE_CLIENT
"""
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
IF = "urn:ietf:params:xml:ns:yang:ietf-interfaces"


def main():
    ncstored, client = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="ncstore-e2e-client-") as tmp:
        tmp = Path(tmp)
        data = tmp / "data"
        subprocess.run([ncstored, "--data-dir", str(data), "--add-user", "tester"], input="secret\n", text=True,
                       check=True)
        port_file = tmp / "port"
        server = subprocess.Popen([ncstored, "--data-dir", str(data), "--listen", "127.0.0.1", "--port", "0",
                                   "--print-port-file", str(port_file), "--log-level", "warning"])
        try:
            deadline = time.time() + 60
            while not (port_file.exists() and port_file.read_text().strip().isdigit()):
                if server.poll() is not None or time.time() > deadline:
                    sys.exit("ncstored did not start")
                time.sleep(0.02)
            base = [client, "--port", port_file.read_text().strip(), "--user", "tester", "--password", "secret",
                    "--schema-dir", str(tmp / "schemas")]
            edit = tmp / "edit.xml"
            edit.write_text(f'<config xmlns="{NC}" xmlns:nc="{NC}"><interfaces xmlns="{IF}"><interface '
                            f'nc:operation="create"><name>e2e0</name><type xmlns:ianaift="urn:ietf:params:xml:ns:yang:'
                            f'iana-if-type">ianaift:ethernetCsmacd</type><enabled>true</enabled></interface>'
                            f'</interfaces></config>')

            def run(*args, expect=0):
                p = subprocess.run(base + list(args), capture_output=True, text=True, timeout=120)
                print(f"$ ncstore-client {' '.join(args)} -> {p.returncode}\n{p.stdout}{p.stderr}")
                if p.returncode != expect:
                    sys.exit(f"expected exit code {expect}, got {p.returncode}")
                return p

            out = run("edit-config", "--target", "running", "--config", str(edit)).stdout
            assert out.strip() == "ok", out
            out = run("--time", "get-config", "--source", "running", "--filter-xpath",
                      "/ietf-interfaces:interfaces/interface[name='e2e0']").stdout
            assert "<name>e2e0</name>" in out and "round-trip:" in out, out
            err = run("edit-config", "--target", "running", "--config", str(edit), expect=1).stderr
            assert "data-exists" in err, err
            out = run("--sessions", "2", "--repeat", "5", "get-config", "--source", "running").stdout
            assert "count: 10" in out and "errors: 0" in out, out
            # subscribe: the replay of what happened so far (the server's own first-start write of the
            # NACM defaults, the create), one JSON line each, replayComplete, the live config change of
            # another session's edit, then --count ends it.
            events = subprocess.Popen(base + ["--json", "subscribe", "--start-time", "2000-01-01T00:00:00Z",
                                              "--filter-xpath", "/ietf-netconf-notifications:netconf-config-change",
                                              "--count", "4"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(2)
            edit2 = tmp / "edit2.xml"
            edit2.write_text(edit.read_text().replace("e2e0", "followed0"))
            run("edit-config", "--target", "running", "--config", str(edit2))
            out, err = events.communicate(timeout=120)
            print(f"$ ncstore-client --json subscribe ... -> {events.returncode}\n{out}{err}")
            lines = [json.loads(line) for line in out.splitlines() if line.strip()]
            assert events.returncode == 0 and len(lines) == 4, lines
            assert "nc-notifications:replayComplete" in lines[2]["event"], lines  # between replay and live
            changes = [ln["event"]["ietf-netconf-notifications:netconf-config-change"]
                       for ln in (lines[0], lines[1], lines[3])]
            assert "server" in changes[0]["changed-by"] and changes[0]["edit"][0]["target"] == "/ietf-netconf-acm:nacm"
            assert changes[1]["changed-by"]["username"] == "tester", changes[1]
            assert changes[1]["edit"][0]["target"] == "/ietf-interfaces:interfaces", changes[1]
            assert changes[2]["edit"] == [{"target": "/ietf-interfaces:interfaces/interface[name='followed0']",
                                           "operation": "create"}], changes[2]
            assert all(ln["eventTime"].endswith("Z") for ln in lines)

            lines = tmp / "lines.xml"
            lines.write_text("\n".join(edit.read_text().replace("e2e0", f"e2e{i}") for i in (1, 2)) + "\n")
            out = run("--each-line", "edit-config", "--target", "running", "--config", str(lines)).stdout
            assert "count: 2" in out and "errors: 0" in out, out
            out = run("get-config", "--source", "running").stdout
            assert "<name>e2e1</name>" in out and "<name>e2e2</name>" in out, out

            raw = [sys.executable, str(Path(__file__).resolve().parents[2] / "clients" / "python" / "ncraw.py"),
                   "--port", port_file.read_text().strip(), "--user", "tester", "--password", "secret",
                   "get-config", "-r", "2", "--filter"]
            flt = tmp / "filter.xml"
            flt.write_text(f'<filter xmlns="{NC}" type="subtree"><interfaces xmlns="{IF}"/></filter>')
            p = subprocess.run(raw + [str(flt)], capture_output=True, text=True, timeout=120)
            res = json.loads(p.stdout.strip().splitlines()[-1])
            assert p.returncode == 0 and res["errors"] == 0 and res["runs"] == 2, (p.stdout, p.stderr)
            assert res["reply_bytes"] > 3 * len("<name>e2e0</name>"), res
            flt.write_text(f'<filter xmlns="{NC}" type="xpath" select="/nope:x"/>')
            p = subprocess.run(raw + [str(flt)], capture_output=True, text=True, timeout=120)
            res = json.loads(p.stdout.strip().splitlines()[-1])
            assert res["errors"] == 2 and "invalid-value" in p.stderr, (p.stdout, p.stderr)
        finally:
            server.terminate()
            server.wait(timeout=60)
    print("e2e client test passed")


if __name__ == "__main__":
    main()
