// The libyang context of the edit engine's test module (tests/edit/yang: ordered-by-user lists
// and leaf-lists, a choice, a presence container, defaults) with ietf-interfaces, for the tests
// of every layer that works on edits. The including target defines NCSTORE_EDIT_TEST_YANG_DIR
// and NCSTORE_IETF_YANG_DIR.
#pragma once

#include "ncstore/yang.hpp"

#include <stdexcept>
#include <string>

namespace ncstore::test {

inline Context editTestContext() {
    ly_ctx* raw = nullptr;
    if (ly_ctx_new(NCSTORE_EDIT_TEST_YANG_DIR, LY_CTX_NO_YANGLIBRARY | LY_CTX_DISABLE_SEARCHDIR_CWD, &raw) !=
        LY_SUCCESS) {
        throw std::runtime_error("ly_ctx_new failed");
    }
    Context ctx{raw};
    ly_ctx_set_searchdir(raw, NCSTORE_IETF_YANG_DIR);
    const char* all[] = {"*", nullptr};
    for (const char* name : {"ietf-netconf", "ietf-interfaces", "iana-if-type", "edit-test"}) {
        if (!ly_ctx_load_module(raw, name, nullptr, all)) {
            throw YangError(std::string("cannot load ") + name, raw);
        }
    }
    return ctx;
}

} // namespace ncstore::test
