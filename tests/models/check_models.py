#!/usr/bin/python3
"""Checks of the project's YANG module and of ncstore-gen output, validated with yanglint.

Usage: check_models.py --repo DIR [--shared DIR] [--yanglint PATH] CHECK
One CHECK per ctest test (see CMakeLists.txt); exit status 0 = pass, 77 = skipped: the check
needs shared data (official Open ROADM models, CPS reference data) that is not there; see
tests/shared_data.py (--shared overrides $NCSTORE_SHARED_DIR and ../shared).
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import shared_data  # noqa: E402

NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
INV = "urn:ncstore:yang:openroadm-inventory"
ORD = "http://org/openroadm/device"
IFNS = "urn:ietf:params:xml:ns:yang:ietf-interfaces"
YUMA_IETF = "/usr/share/yuma/modules/ietf"

# The CPS benchmark device (innerNode.json): containers + list entries, leaves.
CPS_FRAGMENTS = 86
CPS_LEAVES = 116

A = None  # parsed arguments
TMP = None


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def gen(*argv):
    cmd = [sys.executable, os.path.join(A.repo, "clients", "generator", "ncstore-gen")] + list(argv)
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(r.returncode == 0, "%s failed (%d): %s" % (" ".join(argv), r.returncode, r.stderr))
    return r.stdout


def write(name, text):
    p = os.path.join(TMP, name)
    with open(p, "w", encoding="utf-8") as f:
        f.write(text)
    return p


def yanglint(args, expect_ok=True, allow_warnings=True):
    r = subprocess.run([A.yanglint] + args, capture_output=True, text=True)
    err = "\n".join(l for l in r.stderr.splitlines()
                    if allow_warnings is False or not l.startswith("libyang warn"))
    if expect_ok:
        check(r.returncode == 0 and not err.strip(),
              "yanglint %s: rc=%d\n%s" % (" ".join(args), r.returncode, r.stderr))
    return r


def inv_module():
    mods = sorted(glob.glob(os.path.join(A.repo, "yang", "openroadm", "*.yang")))
    check(mods, "no module in yang/openroadm")
    return mods


def edit_modules():
    """yanglint arguments for edit-config content of the module (nc:operation: ietf-netconf)."""
    return ["-p", YUMA_IETF] + inv_module() + [os.path.join(YUMA_IETF, "ietf-netconf@2011-06-01.yang")]


def roadm_modules(version):
    d = os.path.join(A.shared, "yang", "openroadm", version)
    return (["-p", d, "-p", os.path.join(A.shared, "yang", "ietf")],
            [os.path.join(d, "org-openroadm-device.yang"),
             os.path.join(d, "org-openroadm-interfaces.yang")])


def count_json(node):
    """(containers + list entries, leaves) of a JSON (RFC 7951) subtree, the node included."""
    inner, leaves = 0, 0
    if isinstance(node, dict):
        inner += 1
        for k, v in node.items():
            if k.startswith("@"):
                continue
            if isinstance(v, list) and v and not isinstance(v[0], dict):
                leaves += len(v)        # leaf-list
                continue
            i, l = count_json(v)
            inner, leaves = inner + i, leaves + l
    elif isinstance(node, list):
        for v in node:
            i, l = count_json(v)
            inner, leaves = inner + i, leaves + l
    else:
        leaves += 1
    return inner, leaves


def count_xml(elem):
    """(containers + list entries, leaves) of a subtree, the element included."""
    kids = list(elem)
    if not kids:
        return 0, 1
    inner, leaves = 1, 0
    for k in kids:
        i, l = count_xml(k)
        inner, leaves = inner + i, leaves + l
    return inner, leaves


def unwrap(payload, strip_ops=False, name="payload"):
    """<config> payload -> data file of its content (text level: identityref values carry
    prefixes that an XML library would not keep declared)."""
    root = ET.fromstring(payload)
    check(root.tag == "{%s}config" % NC, "payload root is %s, not nc:config" % root.tag)
    check(len(root) == 1, "one top-level element expected")
    text = re.sub(r"<!--.*?-->", "", payload, flags=re.S).strip()
    body = text[text.index(">") + 1:text.rindex("</config>")].strip()
    if strip_ops:
        body = re.sub(r' nc:operation="[a-z]+"', "", body)
    else:
        body = re.sub(r"^<([A-Za-z0-9_.-]+)", r'<\1 xmlns:nc="%s"' % NC, body, count=1)
    return [write("%s.xml" % name, body)]


def ops(payload):
    root = ET.fromstring(payload)
    return [(e.tag.split("}")[1], e.get("{%s}operation" % NC)) for e in root.iter()
            if e.get("{%s}operation" % NC)]


def normalized(obj):
    """JSON tree with every list sorted (system-ordered lists: order is not meaningful)."""
    if isinstance(obj, dict):
        return {k: normalized(v) for k, v in obj.items()}
    if isinstance(obj, list):
        items = [normalized(v) for v in obj]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    return obj


# ----------------------------------------------------------------------------------------------

def t_module():
    """The module compiles without a warning, and loads with nothing but libyang built-ins."""
    r = yanglint(inv_module(), allow_warnings=False)
    check(not r.stdout.strip(), "unexpected output: %s" % r.stdout)
    tree = yanglint(["-f", "tree"] + inv_module()).stdout
    for node in ("openroadm-devices", "openroadm-device* [device-id]", "org-openroadm-device",
                 "degree* [degree-number]", "circuit-packs* [index]", "connection-ports* [index]"):
        check(node in tree, "schema tree lacks %r" % node)
    check("+--ro" not in tree, "the inventory must be configuration only:\n" + tree)
    mod = open(inv_module()[0], encoding="utf-8").read()
    check("default " not in mod, "a default would add leaves to every stored device")


def t_inventory(fmt):
    doc = gen("inventory", "-n", "3", "-f", fmt)
    p = write("inv3." + fmt, doc)
    yanglint(["-t", "config"] + inv_module() + [p])
    # what libyang keeps of it: the same three devices, ids as CPS makes them
    out = json.loads(yanglint(["-t", "config", "-f", "json"] + inv_module() + [p]).stdout)
    devs = out["ncstore-openroadm-inventory:openroadm-devices"]["openroadm-device"]
    check([d["device-id"] for d in devs] == ["C201-7-1A-1", "C201-7-1A-2", "C201-7-1A-3"],
          "device ids: %s" % [d["device-id"] for d in devs])
    check(all(len(d["org-openroadm-device"]["degree"]) == 28 for d in devs), "28 degrees each")


def t_inventory_cps():
    """--model cps: the same devices in the CPS schema's namespace; parsed by libyang they are
    exactly the reference document built with the CPS recipe (openroadm-devices-3.json)."""
    y = os.path.join(A.shared, "yang", "cps-openroadm", "libyang")
    mod = os.path.join(y, "openroadm-devices-inventory-v2@2018-01-18.yang")
    ref = open(os.path.join(A.shared, "data", "cps-openroadm", "openroadm-devices-3.json"),
               encoding="utf-8").read()
    for fmt in ("xml", "json"):
        p = write("cps3." + fmt, gen("inventory", "--model", "cps", "-n", "3", "-f", fmt))
        out = yanglint(["-t", "get", "-f", "json", "-p", y, mod, p]).stdout
        check(out == ref, "CPS %s output differs from openroadm-devices-3.json" % fmt)


def device_example():
    return os.path.join(A.repo, "yang", "openroadm", "examples", "device-cps.json")


def t_inventory_counts():
    """A generated device has exactly the CPS counts: in the template (the module's example of
    the CPS device), in the generated XML and JSON, and in what libyang parses out of them (no
    default nodes added)."""
    doc = json.load(open(device_example(), encoding="utf-8"))
    src = doc["ncstore-openroadm-inventory:openroadm-devices"]["openroadm-device"][0]
    check(count_json(src) == (CPS_FRAGMENTS, CPS_LEAVES),
          "device-cps.json counts %s" % (count_json(src),))
    xml = gen("inventory", "-n", "2", "--start", "41")
    root = ET.fromstring(xml)
    devs = root.findall("{%s}openroadm-device" % INV)
    check(len(devs) == 2, "2 devices expected, got %d" % len(devs))
    for d in devs:
        check(count_xml(d) == (CPS_FRAGMENTS, CPS_LEAVES), "XML device counts %s" % (count_xml(d),))
    js = json.loads(gen("inventory", "-n", "2", "-f", "json"))
    for d in js["ncstore-openroadm-inventory:openroadm-devices"]["openroadm-device"]:
        check(count_json(d) == (CPS_FRAGMENTS, CPS_LEAVES), "JSON device counts %s"
              % (count_json(d),))
    p = write("cnt.xml", xml)
    parsed = json.loads(yanglint(["-t", "config", "-f", "json"] + inv_module() + [p]).stdout)
    for d in parsed["ncstore-openroadm-inventory:openroadm-devices"]["openroadm-device"]:
        check(count_json(d) == (CPS_FRAGMENTS, CPS_LEAVES), "libyang device counts %s"
              % (count_json(d),))
    # and a mutated template is noticed: one more degree -> different counts
    src["org-openroadm-device"]["degree"].append({"degree-number": 29, "max-wavelengths": 1})
    alt = write("alt.json", json.dumps(doc))
    d = ET.fromstring(gen("inventory", "--cps-device", alt))[0]
    check(count_xml(d) == (CPS_FRAGMENTS + 1, CPS_LEAVES + 2), "template not read at run time")


def t_inventory_edits():
    """Every inventory scenario payload parses as edit-config content, with the operations and
    keys the scenario needs; B1/B2 content is valid configuration once the operations are off."""
    base = edit_modules()
    n = 5
    expect = {  # scenario: (element carrying the operation, operation, count)
        "B1": None, "B2": ("openroadm-device", "replace", n), "B3": None,
        "B4a": ("openroadm-devices", "delete", 1),
        "B4b": ("org-openroadm-device", "delete", n),
        "B4c": ("openroadm-device", "delete", n),
        "B4d": ("degree", "delete", 28 * n),
        "B4e-remove": ("openroadm-device", "remove", n),
        "B4e-delete": ("openroadm-device", "delete", n),
    }
    for sc, exp in expect.items():
        pl = gen("inventory", "--scenario", sc, "-n", str(n))
        for f in unwrap(pl, name=sc):
            yanglint(["-t", "edit"] + base + [f])
        got = ops(pl)
        if exp is None:
            check(not got, "%s: no operation expected, got %s" % (sc, got[:3]))
        else:
            check(got == [(exp[0], exp[1])] * exp[2], "%s: operations %s..." % (sc, got[:3]))
        ids = [e.text for e in ET.fromstring(pl).iter("{%s}device-id" % INV)]
        if sc == "B4a":
            check(ids == [], "B4a names no device")
        elif sc.startswith("B4e"):
            check(len(ids) == n and not set(ids) & {"C201-7-1A-%d" % i for i in range(1, 100001)},
                  "B4e must name devices that do not exist: %s" % ids[:3])
        else:
            check(ids == ["C201-7-1A-%d" % i for i in range(1, n + 1)], "%s ids %s" % (sc, ids))
    # the same scenarios in JSON: operations as ietf-netconf:operation metadata (RFC 7952)
    for sc, exp in expect.items():
        js = gen("inventory", "--scenario", sc, "-n", str(n), "-f", "json")
        yanglint(["-t", "edit"] + base + [write(sc + ".json", js)])
        nops = js.count('"ietf-netconf:operation":"%s"' % exp[1]) if exp else js.count("@")
        check(nops == (exp[2] if exp else 0), "%s JSON: %d operations" % (sc, nops))
    for sc in ("B1", "B2"):
        for f in unwrap(gen("inventory", "--scenario", sc, "-n", str(n)), True, sc + "s"):
            yanglint(["-t", "config"] + inv_module() + [f])
    b1 = gen("inventory", "--scenario", "B1", "-n", "1")
    b2 = gen("inventory", "--scenario", "B2", "-n", "1")
    check("<max-wavelengths>128<" in b1 and "<max-wavelengths>128<" not in b2,
          "B2 must change the device content")
    b3 = ET.fromstring(gen("inventory", "--scenario", "B3", "-n", "2"))
    for d in b3.iter("{%s}openroadm-device" % INV):
        check(sorted(c.tag.split("}")[1] for c in d) == ["device-id", "ne-state", "status"],
              "B3 merges status and ne-state only")
    for sc, n_ in (("B5a", 1), ("B6", 300)):
        f = ET.fromstring(gen("inventory", "--scenario", sc, "-n", str(n_)))
        check(f.tag == "{%s}filter" % NC and f.get("type") == "subtree", sc + " is a subtree filter")
        keys = [e.text for e in f.iter("{%s}device-id" % INV)]
        check(len(keys) == n_ == len(set(keys)), "%s names %d keys" % (sc, len(keys)))
        check(all(len(list(d)) == 1 for d in f.iter("{%s}openroadm-device" % INV)),
              "filter entries carry only the key")


def t_interfaces():
    mods = ["-p", YUMA_IETF, os.path.join(YUMA_IETF, "ietf-interfaces@2014-05-08.yang"),
            os.path.join(YUMA_IETF, "iana-if-type@2014-05-08.yang")]
    for fmt in ("xml", "json"):
        p = write("if." + fmt, gen("interfaces", "-n", "16", "-f", fmt))
        out = json.loads(yanglint(["-t", "config", "-f", "json"] + mods + [p]).stdout)
        ents = out["ietf-interfaces:interfaces"]["interface"]
        check(len(ents) == 16, "16 entries")
        check(all(e["type"] == "iana-if-type:ethernetCsmacd" and e["enabled"] is True
                  for e in ents), "type/enabled: %s" % ents[0])
    netconf = os.path.join(YUMA_IETF, "ietf-netconf@2011-06-01.yang")
    for sc, op in (("B7-set", "create"), ("B7-delete", "delete")):
        pl = gen("interfaces", "--scenario", sc, "-n", "8")
        check(ops(pl) == [("interface", op)] * 8, "%s: %s" % (sc, ops(pl)))
        for f in unwrap(pl, name=sc):
            yanglint(["-t", "edit"] + mods + [netconf, f])
    lines = gen("interfaces", "--scenario", "B8", "--name", "x1", "--name", "x2",
                "--per-entry").splitlines()
    check(len(lines) == 2 and "<name>x1</name>" in lines[0] and "<name>x2</name>" in lines[1],
          "B8: one payload per entry, name given")


def t_roadm(version):
    paths, mods = roadm_modules(version)
    doc = gen("roadm", "--version", version, "-d", "2", "-s", "2", "-c", "96")
    p = write("roadm-%s.xml" % version, doc)
    out = json.loads(yanglint(["-t", "config", "-f", "json"] + paths + mods + [p]).stdout)
    dev = out["org-openroadm-device:org-openroadm-device"]
    check(len(dev["degree"]) == 2 and len(dev["shared-risk-group"]) == 2, "2 degrees, 2 SRGs")
    conns = dev["roadm-connections"]
    check(len(conns) == 96 and len({c["connection-name"] for c in conns}) == 96,
          "96 roadm-connections")
    ifs = {i["name"]: i for i in dev["interface"]}
    for c in conns:
        for end in (c["source"]["src-if"], c["destination"]["dst-if"]):
            check(ifs[end]["type"] ==
                  "org-openroadm-interfaces:networkMediaChannelConnectionTerminationPoint",
                  "connection ends are NMC-CTP interfaces")
    check(len(ifs) == 2 * 2 + 3 * 96, "OTS+OMS per degree, MC+2 NMC per connection")
    # JSON output validates as well
    pj = write("roadm-%s.json" % version,
               gen("roadm", "--version", version, "-d", "2", "-s", "2", "-c", "96", "-f", "json"))
    yanglint(["-t", "config"] + paths + mods + [pj])
    # strict validation is what makes this meaningful: a dangling leafref is refused
    bad = doc.replace("<dst-if>%s</dst-if>" % conns[0]["destination"]["dst-if"],
                      "<dst-if>no-such-interface</dst-if>", 1)
    check(bad != doc, "mutation not applied")
    r = yanglint(["-t", "config"] + paths + mods + [write("bad.xml", bad)], expect_ok=False)
    check(r.returncode != 0 and "leafref" in r.stderr, "dangling leafref accepted: %s" % r.stderr)


def t_roadm_edits(version):
    """base + B11-create = the whole device; B11-delete removes exactly what B11-create added;
    --per-entry payloads are the same connections one by one."""
    paths, mods = roadm_modules(version)
    g = ["--version", version, "-d", "4", "-s", "4", "-c", "40"]
    files = unwrap(gen("roadm", "--scenario", "base", *g), True, "base")
    create = gen("roadm", "--scenario", "B11-create", *g)
    check(set(op for _, op in ops(create)) == {"create"} and len(ops(create)) == 4 * 40,
          "B11-create: 3 interfaces + 1 connection created per connection")
    files += unwrap(create, True, "create")
    # merge the two trees (both one org-openroadm-device element) at text level
    parts = [open(f, encoding="utf-8").read() for f in files]
    both = parts[0][:parts[0].rindex("</")] + parts[1][parts[1].index(">") + 1:]
    merged = json.loads(yanglint(["-t", "config", "-f", "json"] + paths + mods +
                                 [write("merged.xml", both)]).stdout)
    whole = json.loads(yanglint(["-t", "config", "-f", "json"] + paths + mods +
                                [write("whole.xml", gen("roadm", *g))]).stdout)
    check(normalized(merged) == normalized(whole), "base + B11-create differs from the document")
    base_only = json.loads(yanglint(["-t", "config", "-f", "json"] + paths + mods +
                                    files[:1]).stdout)
    check("roadm-connections" not in base_only["org-openroadm-device:org-openroadm-device"],
          "base has no connection")
    # base alone is valid (B11 starting state)
    delete = gen("roadm", "--scenario", "B11-delete", *g)
    created = {(t, e.findtext("{%s}name" % ORD) or e.findtext("{%s}connection-name" % ORD))
               for t, e in ((el.tag, el) for el in ET.fromstring(create).iter())
               if e.get("{%s}operation" % NC)}
    deleted = {(t, e.findtext("{%s}name" % ORD) or e.findtext("{%s}connection-name" % ORD))
               for t, e in ((el.tag, el) for el in ET.fromstring(delete).iter())
               if e.get("{%s}operation" % NC) == "delete"}
    check(created == deleted and len(deleted) == 160, "B11-delete must name what B11-create made")
    one = gen("roadm", "--scenario", "B11-create", "--per-entry", *g).splitlines()
    check(len(one) == 40, "one payload per connection")
    each = set()
    for line in one:
        for el in ET.fromstring(line).iter():
            if el.get("{%s}operation" % NC):
                each.add((el.tag, el.findtext("{%s}name" % ORD) or
                          el.findtext("{%s}connection-name" % ORD)))
    check(each == created, "per-entry payloads differ from the bulk payload")
    k7 = gen("roadm", "--scenario", "B11-create", "--index", "7", *g).strip()
    check(k7 == one[6], "--index 7 is the 7th per-entry payload")


def t_examples():
    """The example files a user sends: edits parse as edit-config content, the created device
    is valid configuration, the deliberately broken edit is refused (leafref), filters are
    subtree filters on the module."""
    d = os.path.join(A.repo, "yang", "openroadm", "examples")
    base = edit_modules()
    files = sorted(glob.glob(os.path.join(d, "*.xml")))
    readme = open(os.path.join(A.repo, "yang", "openroadm", "README.md"), encoding="utf-8").read()
    check(len(files) >= 5, "examples missing")
    for f in files:
        name = os.path.basename(f)
        check(name in readme, "%s is not described in yang/openroadm/README.md" % name)
        text = open(f, encoding="utf-8").read()
        root = ET.fromstring(text)
        if root.tag == "{%s}filter" % NC:
            check(root.get("type") == "subtree", name + ": subtree filter")
            check(root[0].tag == "{%s}openroadm-devices" % INV, name + ": filter on the module")
            continue
        for x in unwrap(text, name=name):
            yanglint(["-t", "edit"] + base + [x])
    create = open(os.path.join(d, "device-create.xml"), encoding="utf-8").read()
    yanglint(["-t", "config"] + inv_module() + unwrap(create, True, "create"))
    # the broken edit applied to the created device: refused because of the leafref
    bad = unwrap(open(os.path.join(d, "degree-bad-port.xml"), encoding="utf-8").read(), True, "b")
    good = open(unwrap(create, True, "c2")[0], encoding="utf-8").read()
    badt = open(bad[0], encoding="utf-8").read()
    inner = badt[badt.index("<degree>"):badt.rindex("</org-openroadm-device>")]
    merged = good.replace("</org-openroadm-device>", inner + "</org-openroadm-device>")
    r = yanglint(["-t", "config"] + inv_module() + [write("bad-merged.xml", merged)],
                 expect_ok=False)
    check(r.returncode != 0 and "leafref" in r.stderr, "broken example accepted: " + r.stderr)
    fixed = merged.replace("<port-name>L9</port-name>", "<port-name>L1</port-name>")
    yanglint(["-t", "config"] + inv_module() + [write("fixed.xml", fixed)])
    # the generator's device template: a valid document of the module, described in the README
    check("device-cps.json" in readme, "device-cps.json is not described in yang/openroadm/README.md")
    yanglint(["-t", "config"] + inv_module() + [device_example()])


def t_generator_speed():
    """50,000 devices as XML in seconds (generous bound for a loaded CI machine)."""
    import time
    t0 = time.monotonic()
    gen("inventory", "-n", "50000", "-o", os.devnull)
    dt = time.monotonic() - t0
    print("50000 devices: %.2f s" % dt)
    check(dt < 30, "50,000 devices took %.1f s" % dt)


# What each check needs from the shared data directory (the others need only the repository).
NEEDS = {
    "inventory-cps": [("yang/cps-openroadm/libyang", "the ONAP CPS Open ROADM schema"),
                      ("data/cps-openroadm/openroadm-devices-3.json", "the ONAP CPS reference data")],
    "roadm-2.2.1": shared_data.openroadm("2.2.1"),
    "roadm-18.0.0": shared_data.openroadm("18.0.0"),
    "roadm-edits-2.2.1": shared_data.openroadm("2.2.1"),
    "roadm-edits-18.0.0": shared_data.openroadm("18.0.0"),
}

CHECKS = {
    "module": t_module,
    "inventory-xml": lambda: t_inventory("xml"),
    "inventory-json": lambda: t_inventory("json"),
    "inventory-counts": t_inventory_counts,
    "inventory-cps": t_inventory_cps,
    "inventory-edits": t_inventory_edits,
    "interfaces": t_interfaces,
    "examples": t_examples,
    "generator-speed": t_generator_speed,
    "roadm-2.2.1": lambda: t_roadm("2.2.1"),
    "roadm-18.0.0": lambda: t_roadm("18.0.0"),
    "roadm-edits-2.2.1": lambda: t_roadm_edits("2.2.1"),
    "roadm-edits-18.0.0": lambda: t_roadm_edits("18.0.0"),
}


def main():
    global A, TMP
    p = argparse.ArgumentParser()
    p.add_argument("--repo", required=True)
    p.add_argument("--shared", help="shared data directory (default: $NCSTORE_SHARED_DIR or ../shared)")
    p.add_argument("--yanglint", default="yanglint")
    p.add_argument("check", choices=sorted(CHECKS))
    A = p.parse_args()
    shared_data.require_or_exit(NEEDS.get(A.check, []), A.shared)
    A.shared = str(shared_data.shared_dir(A.shared))
    with tempfile.TemporaryDirectory(prefix="ncstore-models-") as d:
        TMP = d
        try:
            CHECKS[A.check]()
        except Fail as e:
            print("FAIL %s: %s" % (A.check, e))
            return 1
    print("ok %s" % A.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
