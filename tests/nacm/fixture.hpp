// Shared by the NACM engine tests: one libyang context with ietf-netconf-acm, ietf-netconf,
// ietf-netconf-monitoring, ietf-interfaces, the bundled Open ROADM inventory model and the test
// models of RFC 8341 appendix A (acme-*), plus parse helpers.
#pragma once

#include "nacm.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace nacmtest {

inline ncstore::Context makeTestContext() {
    ncstore::Context ctx =
        ncstore::makeContext({{NACM_TEST_YANG_DIR, NCSTORE_OPENROADM_YANG_DIR}, {IETF_YANG_DIR}});
    const char* all[] = {"*", nullptr};
    for (const char* m :
         {"ietf-netconf-acm", "ietf-netconf", "ietf-netconf-monitoring", "ietf-interfaces", "iana-if-type"}) {
        if (!ly_ctx_load_module(ctx.get(), m, nullptr, all)) {
            throw ncstore::YangError(std::string("cannot load ") + m, ctx.get());
        }
    }
    return ctx;
}

/// The one context of the test binary (building it takes a while).
inline const ly_ctx* ctx() {
    static const ncstore::Context context = makeTestContext();
    return context.get();
}

/// A validated data document (config and state), defaults added.
inline ncstore::Tree data(const std::string& xml) {
    return ncstore::parseData(ctx(), xml, LYD_XML, LYD_PARSE_STRICT, LYD_VALIDATE_PRESENT);
}

/// `body` inside <nacm xmlns=...>, parsed and validated as configuration (defaults added, as
/// running has them).
inline ncstore::Tree nacmConfig(const std::string& body) {
    return ncstore::parseData(
        ctx(), "<nacm xmlns=\"urn:ietf:params:xml:ns:yang:ietf-netconf-acm\">" + body + "</nacm>", LYD_XML,
        LYD_PARSE_STRICT | LYD_PARSE_NO_STATE, LYD_VALIDATE_PRESENT | LYD_VALIDATE_NO_STATE);
}

inline std::shared_ptr<const ncstore::nacm::Policy> policy(const std::string& body) {
    ncstore::Tree config = nacmConfig(body);
    return ncstore::nacm::Policy::compile(config.get(), ctx());
}

/// The node at `path` in `tree` (test failure when absent).
inline const lyd_node* at(const ncstore::Tree& tree, const std::string& path) {
    lyd_node* node = nullptr;
    if (lyd_find_path(tree.get(), path.c_str(), 0, &node) != LY_SUCCESS || !node) {
        ADD_FAILURE() << "no node " << path;
        return nullptr;
    }
    return node;
}

/// Data paths of every node of a forest.
inline std::set<std::string> pathsOf(const lyd_node* forest) {
    std::set<std::string> out;
    for (const lyd_node* top = forest ? lyd_first_sibling(forest) : nullptr; top; top = top->next) {
        const lyd_node* n;
        LYD_TREE_DFS_BEGIN(top, n) {
            out.insert(ncstore::pathOf(n));
            LYD_TREE_DFS_END(top, n);
        }
    }
    return out;
}

} // namespace nacmtest
