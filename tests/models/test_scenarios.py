#!/usr/bin/python3
"""End to end: the ncstore-gen payloads of every benchmark scenario (docs/BENCHMARKS.md), at a
small N, sent to the real ncstored with its default models, and the datastore each one leaves.

Environment: NCSTORED (required), NCSTORE_SOURCE_DIR (see test_official_models.py). Needs
nothing outside the repository.
"""

import os
import sys
import unittest
import xml.etree.ElementTree as ET

from ncclient.operations.rpc import RPCError

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_official_models as base  # noqa: E402
from check_models import count_xml as counts  # noqa: E402

INV = "urn:ncstore:yang:openroadm-inventory"
IFNS = "urn:ietf:params:xml:ns:yang:ietf-interfaces"
ALL = ("subtree", '<openroadm-devices xmlns="%s"/>' % INV)
N = 20


def q(path, ns=INV):
    return "/".join("{%s}%s" % (ns, p) for p in path.split("/"))


def dev_id(i):
    return "C201-7-1A-%d" % i


class Scenarios(base.ServerCase):
    @classmethod
    def server_args(cls):
        return []

    def get(self, filt=ALL):
        return ET.fromstring(self.m.get_config(source="running", filter=filt).data_xml)

    def devices(self):
        return {d.findtext(q("device-id")): d for d in self.get().iter(q("openroadm-device"))}

    def inv(self, *args):
        return base.gen("inventory", *args)

    def refused(self, payload, tag):
        before = ET.tostring(self.get())
        with self.assertRaises(RPCError) as cm:
            self.edit(payload)
        self.assertEqual(cm.exception.tag, tag, cm.exception.to_dict())
        self.assertEqual(ET.tostring(self.get()), before, "a refused edit changed the datastore")

    def test_1_B1_store(self):
        self.edit(self.inv("--scenario", "B1", "-n", str(N)))
        devs = self.devices()
        self.assertEqual(set(devs), {dev_id(i) for i in range(1, N + 1)})
        for d in devs.values():
            self.assertEqual(counts(d), (86, 116), "a stored device is the CPS device")
        self.refused(self.inv("--scenario", "B1", "-n", "1", "--operation", "create"),
                     "data-exists")

    def test_2_B2_replace(self):
        self.edit(self.inv("--scenario", "B2", "-n", "5"))
        devs = self.devices()
        for i in range(1, N + 1):
            mw = {e.text for e in devs[dev_id(i)].iter(q("max-wavelengths"))}
            self.assertEqual(mw, {"96"} if i <= 5 else {"128"}, dev_id(i))
            self.assertEqual(counts(devs[dev_id(i)]), (86, 116))

    def test_3_B3_merge(self):
        self.edit(self.inv("--scenario", "B3", "-n", "5", "--start", "3"))
        devs = self.devices()
        for i in range(1, N + 1):
            d = devs[dev_id(i)]
            want = ("fail", "jeopardy") if 3 <= i <= 7 else ("success", "inservice")
            self.assertEqual((d.findtext(q("status")), d.findtext(q("ne-state"))), want)
            self.assertEqual(counts(d), (86, 116), "merge keeps the rest of the device")

    def test_4_B5a_B6_filters(self):
        one = list(self.get(self.inv("--scenario", "B5a", "--start", "9"))
                   .iter(q("openroadm-device")))
        self.assertEqual([d.findtext(q("device-id")) for d in one], [dev_id(9)])
        self.assertEqual(counts(one[0]), (86, 116))
        some = self.get(self.inv("--scenario", "B6", "-n", "8", "--start", "11"))
        self.assertEqual([d.findtext(q("device-id")) for d in some.iter(q("openroadm-device"))],
                         [dev_id(i) for i in range(11, 19)])

    def test_5_B4c_B4d_B4e_deletes(self):
        self.edit(self.inv("--scenario", "B4d", "-n", "3", "--start", "4"))
        self.edit(self.inv("--scenario", "B4c", "-n", "3", "--start", "7"))
        devs = self.devices()
        self.assertEqual(set(devs), {dev_id(i) for i in range(1, N + 1)} -
                         {dev_id(i) for i in (7, 8, 9)})
        for i in (4, 5, 6):
            self.assertEqual(list(devs[dev_id(i)].iter(q("degree"))), [])
        self.assertEqual(counts(devs[dev_id(10)]), (86, 116))
        # B4e: entries that do not exist
        self.refused(self.inv("--scenario", "B4e-delete", "-n", "5"), "data-missing")
        before = ET.tostring(self.get())
        self.edit(self.inv("--scenario", "B4e-remove", "-n", "5"))
        self.assertEqual(ET.tostring(self.get()), before)

    def test_6_B7_B8_interfaces(self):
        itf = ("subtree", '<interfaces xmlns="%s"/>' % IFNS)

        def names():
            return {e.findtext(q("name", IFNS)) for e in self.get(itf).iter(q("interface", IFNS))}

        self.edit(base.gen("interfaces", "--scenario", "B7-set", "-n", "64"))
        self.assertEqual(names(), {"eth%d" % i for i in range(1, 65)})
        got = self.get(base.gen("interfaces", "--scenario", "B7-get"))
        self.assertEqual(len(list(got.iter(q("interface", IFNS)))), 64)
        for line in base.gen("interfaces", "--scenario", "B8", "--prefix", "p1-", "-n", "5",
                             "--per-entry").splitlines():
            self.edit(line)
        self.assertEqual(len(names()), 69)
        self.edit(base.gen("interfaces", "--scenario", "B7-delete", "-n", "64"))
        self.assertEqual(names(), {"p1-%d" % i for i in range(1, 6)})


    def test_7_B4b_B4a_container_deletes(self):
        # delete of a (non-presence) container: org-openroadm-device of 3 devices, then the top
        self.edit(self.inv("--scenario", "B4b", "-n", "3", "--start", "1"))
        devs = self.devices()
        for i in (1, 2, 3):
            self.assertEqual(list(devs[dev_id(i)].iter(q("degree"))), [],
                             "B4b: org-openroadm-device of %s not deleted" % dev_id(i))
            self.assertIsNone(devs[dev_id(i)].find(q("org-openroadm-device")))
        self.assertEqual(counts(devs[dev_id(10)]), (86, 116), "other devices untouched")
        self.edit(self.inv("--scenario", "B4a"))
        self.assertEqual(self.devices(), {}, "B4a: openroadm-devices not deleted")


if __name__ == "__main__":
    unittest.main(verbosity=2)
