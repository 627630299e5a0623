#!/usr/bin/python3
"""Follow the Open ROADM inventory of an ncstored and keep one file per device up to date.

An application that must react to configuration changes, written as its developer would with
ncclient (Debian's python3-ncclient): it subscribes to the NETCONF stream (RFC 5277), filtered to
configuration changes (RFC 6470 netconf-config-change), starting with a replay of what is logged so
that nothing done while it was away is missed; for every change under /openroadm-devices it reads
the device that changed and writes DIR/<device-id>.xml, or removes the file when the device is
gone. A notification is sent once its change is durable, so the read that follows sees that state
or a later one: the files converge on the datastore.

  follow_devices.py --port 8830 --user admin --password PW --dir devices/ [--once] [--yang-push]

--once stops after the replay (the files then mirror the datastore as of the subscription).
--yang-push follows the data itself instead (RFC 8641): an on-change subscription to running's
/openroadm-devices sends the devices first (push-update), then each commit's changes as a YANG
Patch (push-change-update); a device created or replaced whole is written from the patch, one
changed inside is read again. Nothing is replayed: the first push-update is the starting point.
"""
import argparse
import os
import re
import sys
import urllib.parse

from ncclient import manager
from ncclient.xml_ import to_ele

NCN = "urn:ietf:params:xml:ns:yang:ietf-netconf-notifications"
INV = "urn:ncstore:yang:openroadm-inventory"
NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
# A target naming one device (or something inside it), in the XML encoding RFC 6470 uses.
DEVICE = re.compile(r"/[\w.-]+:openroadm-devices/[\w.-]+:openroadm-device\[[\w.-]+:device-id=(['\"])(.*?)\1\]")
ALL_DEVICES = re.compile(r"/[\w.-]+:openroadm-devices(?:$|[^/\[])")


def unescape(text):
    return (text.replace("&apos;", "'").replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
            .replace("&amp;", "&"))


def changed_devices(notification_xml):
    """(device ids, whether the whole container changed) of one netconf-config-change."""
    ids, everything = set(), False
    for target in re.findall(r"<target[^>]*>([^<]*)</target>", notification_xml):
        target = unescape(target)
        m = DEVICE.search(target)
        if m:
            ids.add(m.group(2))
        elif ALL_DEVICES.search(target):
            everything = True
    return ids, everything


def write_device(m, directory, device_id):
    """Reads one device from running and writes it, or removes its file when it is gone."""
    quoted = device_id.replace("&", "&amp;").replace("<", "&lt;")
    reply = m.get_config(source="running", filter=("subtree",
        f'<openroadm-devices xmlns="{INV}"><openroadm-device><device-id>{quoted}</device-id>'
        f'</openroadm-device></openroadm-devices>'))
    path = os.path.join(directory, device_id.replace("/", "%2F") + ".xml")
    devices = reply.data_ele.findall(f"{{{INV}}}openroadm-devices/{{{INV}}}openroadm-device")
    if devices:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(reply.data_xml)
        os.replace(tmp, path)
        return "written"
    if os.path.exists(path):
        os.remove(path)
        return "removed"
    return "absent"


def prune(directory, present):
    """Removes the files of the devices not in `present`."""
    for name in os.listdir(directory):
        if name.endswith(".xml") and name[:-4].replace("%2F", "/") not in present:
            os.remove(os.path.join(directory, name))


def resync(m, directory):
    """Every device file from scratch (after a change of the whole container)."""
    reply = m.get_config(source="running", filter=("subtree", f'<openroadm-devices xmlns="{INV}"/>'))
    present = {e.text for e in reply.data_ele.iter(f"{{{INV}}}device-id")}
    prune(directory, present)
    for device_id in present:
        write_device(m, directory, device_id)


SN = "urn:ietf:params:xml:ns:yang:ietf-subscribed-notifications"
YP = "urn:ietf:params:xml:ns:yang:ietf-yang-push"
# A YANG Patch target (RESTCONF path) naming one device, or something inside it (group 2).
PATCH_DEVICE = re.compile(r"^/[\w.-]+:openroadm-devices/openroadm-device=([^/]*)(.*)$")


def write_value(directory, device):
    """Writes a device element a push-change-update carried whole."""
    from lxml import etree
    device_id = device.findtext(f"{{{INV}}}device-id")
    path = os.path.join(directory, device_id.replace("/", "%2F") + ".xml")
    with open(path + ".tmp", "w") as f:
        f.write(f'<data xmlns="{NC}"><openroadm-devices xmlns="{INV}">{etree.tostring(device).decode()}'
                "</openroadm-devices></data>")
    os.replace(path + ".tmp", path)
    return device_id


def follow_yang_push(m, a):
    """The --yang-push loop: push-update, then push-change-updates."""
    from lxml import etree
    reply = m.dispatch(to_ele(f'<establish-subscription xmlns="{SN}" xmlns:yp="{YP}" '
                              'xmlns:ds="urn:ietf:params:xml:ns:yang:ietf-datastores">'
                              '<yp:datastore>ds:running</yp:datastore><yp:datastore-subtree-filter>'
                              f'<openroadm-devices xmlns="{INV}"/></yp:datastore-subtree-filter>'
                              '<yp:on-change/></establish-subscription>'))
    print("subscription " + re.search(r"<(?:\w+:)?id[^>]*>(\d+)<", reply.xml).group(1), flush=True)
    while True:
        n = m.take_notification(block=True, timeout=None)
        if n is None:
            continue
        root = etree.fromstring(n.notification_xml.encode())
        update = root.find(f"{{{YP}}}push-update")
        if update is not None:
            # The devices as they are now: the files are made to match.
            devices = update.findall(f"{{{YP}}}datastore-contents/{{{INV}}}openroadm-devices/{{{INV}}}openroadm-device")
            prune(a.dir, {write_value(a.dir, d) for d in devices})
            print("sync complete", flush=True)
            if a.once:
                return 0
            continue
        for edit in root.iter(f"{{{YP}}}edit"):
            target, op = edit.findtext(f"{{{YP}}}target"), edit.findtext(f"{{{YP}}}operation")
            found = PATCH_DEVICE.match(target)
            if not found:
                resync(m, a.dir)  # the whole container changed
                print("all devices resynchronized", flush=True)
                continue
            device_id, inside = urllib.parse.unquote(found.group(1)), found.group(2)
            value = edit.find(f"{{{YP}}}value/{{{INV}}}openroadm-device")
            if not inside and op in ("create", "replace", "insert") and value is not None:
                print(f"{write_value(a.dir, value)}: written", flush=True)
            else:
                print(f"{device_id}: {write_device(m, a.dir, device_id)}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8830)
    ap.add_argument("--user", required=True)
    ap.add_argument("--password", required=True)
    ap.add_argument("--dir", required=True, help="where the device files go")
    ap.add_argument("--once", action="store_true", help="stop after the replay (or the first push-update)")
    ap.add_argument("--yang-push", action="store_true", help="follow the data on change (RFC 8641)")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    with manager.connect(host=a.host, port=a.port, username=a.user, password=a.password, hostkey_verify=False,
                         look_for_keys=False, allow_agent=False) as m:
        if a.yang_push:
            return follow_yang_push(m, a)
        # Replay from the oldest logged event, then live; only configuration changes.
        m.create_subscription(start_time="1970-01-01T00:00:00Z",
                              filter=("subtree", f'<netconf-config-change xmlns="{NCN}"/>'))
        # The session answers RPCs while subscribed (RFC 5277 interleave): reads go on it too.
        resync(m, a.dir)
        while True:
            n = m.take_notification(block=True, timeout=None)
            if n is None:
                continue
            xml = n.notification_xml
            if "replayComplete" in xml:
                print("replay complete", flush=True)
                if a.once:
                    return 0
                continue
            ids, everything = changed_devices(xml)
            if everything:
                resync(m, a.dir)
                print("all devices resynchronized", flush=True)
            for device_id in sorted(ids):
                print(f"{device_id}: {write_device(m, a.dir, device_id)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
