#!/usr/bin/python3
"""End to end: the files of yang/openroadm/examples sent as they are (python3-ncclient) to the
real ncstored with its default models, in the order yang/openroadm/README.md lists them, and
what a user then reads back.

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

EXAMPLES = os.path.join(base.SRC, "yang", "openroadm", "examples")
INV = "urn:ncstore:yang:openroadm-inventory"
DEV = "C201-7-1A-9001"


def example(name):
    with open(os.path.join(EXAMPLES, name), encoding="utf-8") as f:
        return f.read()


def q(path):
    return "/".join("{%s}%s" % (INV, p) for p in path.split("/"))


class Examples(base.ServerCase):
    @classmethod
    def server_args(cls):
        return []  # the default models: ietf-interfaces and yang/openroadm

    def get(self, filt):
        reply = self.m.get_config(source="running", filter=filt)
        return ET.fromstring(reply.data_xml)

    def devices(self):
        data = self.get(("subtree", '<openroadm-devices xmlns="%s"/>' % INV))
        return {d.findtext(q("device-id")): d for d in data.iter(q("openroadm-device"))}

    def refused(self, payload, tag, app_tag=None):
        before = ET.tostring(self.get(("subtree", '<openroadm-devices xmlns="%s"/>' % INV)))
        with self.assertRaises(RPCError) as cm:
            self.edit(payload)
        self.assertEqual(cm.exception.tag, tag, cm.exception.to_dict())
        if app_tag:
            self.assertEqual(cm.exception.app_tag, app_tag, cm.exception.to_dict())
        after = ET.tostring(self.get(("subtree", '<openroadm-devices xmlns="%s"/>' % INV)))
        self.assertEqual(after, before, "a refused edit changed the datastore")

    def test_1_create(self):
        self.edit(example("device-create.xml"))
        dev = self.devices()[DEV]
        self.assertEqual([d.findtext(q("degree-number")) for d in dev.iter(q("degree"))],
                         ["1", "2"])
        self.assertEqual(dev.findtext(q("status")), "success")
        self.refused(example("device-create.xml"), "data-exists")
        # a CPS-style device beside it (ncstore-gen), to show what the filters leave out
        self.edit(base.gen("inventory", "--scenario", "B1", "-n", "1"))
        self.assertEqual(set(self.devices()), {DEV, "C201-7-1A-1"})

    def test_2_merge_status(self):
        self.edit(example("device-merge-status.xml"))
        dev = self.devices()[DEV]
        self.assertEqual((dev.findtext(q("status")), dev.findtext(q("ne-state")),
                          dev.findtext(q("reason"))), ("fail", "jeopardy", "NE not reachable"))
        self.assertEqual(len(list(dev.iter(q("degree")))), 2, "merge must keep the degrees")

    def test_3_filters(self):
        data = self.get(example("device-filter.xml"))
        devs = list(data.iter(q("openroadm-device")))
        self.assertEqual([d.findtext(q("device-id")) for d in devs], [DEV])
        self.assertEqual(len(list(devs[0].iter(q("degree")))), 2, "whole subtree of the device")
        data = self.get(example("device-status-filter.xml"))
        devs = list(data.iter(q("openroadm-device")))
        self.assertEqual([d.findtext(q("device-id")) for d in devs], [DEV])
        self.assertEqual(sorted(c.tag.split("}")[1] for c in devs[0]),
                         ["device-id", "reason", "status"])

    def test_4_bad_port_refused(self):
        self.refused(example("degree-bad-port.xml"), "data-missing", "instance-required")

    def test_5_degree_delete(self):
        self.edit(example("degree-delete.xml"))
        dev = self.devices()[DEV]
        self.assertEqual([d.findtext(q("degree-number")) for d in dev.iter(q("degree"))], ["1"])
        self.refused(example("degree-delete.xml"), "data-missing")

    def test_6_device_delete(self):
        self.edit(example("device-delete.xml"))
        self.assertEqual(set(self.devices()), {"C201-7-1A-1"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
