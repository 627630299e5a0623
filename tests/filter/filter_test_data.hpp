// The datastore content the filter tests (and tests/fuzz/fuzz_filter) filter: three interfaces and
// the list-heavy module of tests/filter/yang (keys, two-key lists, leaf-lists, defaults, an
// ordered-by-user list, a top-level leaf).
#pragma once

#include <string>

namespace ncstore::test {

inline std::string filterTestData() {
    return "<interfaces xmlns=\"urn:ietf:params:xml:ns:yang:ietf-interfaces\" "
           "xmlns:ia=\"urn:ietf:params:xml:ns:yang:iana-if-type\">"
           "<interface><name>eth0</name><description>uplink</description><type>ia:ethernetCsmacd</type>"
           "</interface>"
           "<interface><name>eth1</name><type>ia:softwareLoopback</type><enabled>false</enabled></interface>"
           "<interface><name>lo</name><type>ia:softwareLoopback</type></interface>"
           "</interfaces>"
           "<devices xmlns=\"urn:ncstore:test:filter\">"
           "<device><id>d1</id><status>up</status><weight>1.5</weight>"
           "<info><vendor>acme</vendor><model>x1</model></info><tag>red</tag><tag>blue</tag></device>"
           "<device><id>d2</id><status>down</status><mtu>9000</mtu><tag>blue</tag></device>"
           "<device><id>d3</id><status>up</status><info><vendor>other</vendor></info></device>"
           "<link><a>x</a><b>1</b><cost>10</cost></link>"
           "<link><a>x</a><b>2</b><cost>20</cost></link>"
           "<link><a>y</a><b>1</b><cost>30</cost></link>"
           "<ordered><name>c</name><v>3</v></ordered>"
           "<ordered><name>a</name><v>1</v></ordered>"
           "<ordered><name>b</name><v>2</v></ordered>"
           "</devices>"
           "<hostname xmlns=\"urn:ncstore:test:filter\">r1</hostname>";
}

} // namespace ncstore::test
