// The rules a real Open ROADM 2.2.1 device enforces on its configuration beyond what the YANG
// models say (libyang already refuses dangling leafrefs: a roadm-connection naming an absent
// interface, an interface naming an absent circuit-pack or port, a circuit-pack deleted while an
// interface, degree or SRG still names it).
//
// Promises:
//  - check() refuses a change only for a violation the change introduces: a violation already
//    present before it (data loaded from elsewhere, rules made stricter) never blocks an
//    unrelated commit. Among several it reports first one about an item the change touched.
//  - Every violation carries the error-tag, a message naming the items involved, the
//    error-path of the offending node (an instance identifier of the new configuration, or of the
//    old one for a deletion) and an error-app-tag a client can test for.
//
// The rules (docs/roadm-device.md lists them with their app-tags):
//  1. A roadm-connection joins two different network media channel (NMC-CTP) interfaces, of the
//     same frequency and width when both have them.
//  2. On one degree, no two NMC-CTP interfaces overlap in spectrum (frequency +- width/2), nor do
//     two MC-TTP interfaces (min-freq..max-freq).
//  3. An interface that names a port names its circuit-pack too, and the port exists in it.
//  4. A circuit-pack in use (an interface sits on it) cannot be deleted unless it was
//     outOfService.
#pragma once

#include "device.hpp"

#include <optional>
#include <string>
#include <vector>

namespace ncstore::roadm {

struct Violation {
    std::string message, path, appTag;
    std::string tag = "invalid-value";
    std::string subject; ///< the item it is about (an interface or connection name), for ordering
    bool operator==(const Violation& o) const { return path == o.path && appTag == o.appTag; }
};

/// Every violation of rules 1-3 in `device`.
std::vector<Violation> violations(const Device& device);

/// The first violation the change from `before` to `after` introduces, or none.
std::optional<Violation> check(const Device& before, const Device& after);

} // namespace ncstore::roadm
