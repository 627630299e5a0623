// The server's context (models library): default models, and directories named more than once.
#include "ncstore/models.hpp"

#include <gtest/gtest.h>

using namespace ncstore;

namespace {

TEST(Models, DefaultContextHoldsInterfacesAndTheBundledInventory) {
    Context ctx = buildContext(defaultModelOptions());
    EXPECT_NE(ly_ctx_get_module_implemented(ctx.get(), "ietf-interfaces"), nullptr);
    EXPECT_NE(ly_ctx_get_module_implemented(ctx.get(), "iana-if-type"), nullptr);
    EXPECT_NE(ly_ctx_get_module_implemented(ctx.get(), "ncstore-openroadm-inventory"), nullptr);
}

TEST(Models, TheBundledDirectoryNamedAgainAsYangDirIsAccepted) {
    // The packaged config names the models directory that is also the bundled one.
    ModelOptions o = defaultModelOptions();
    o.yangDirs.push_back(bundledModelsDir());
    o.searchDirs.push_back(o.ietfDir);
    Context ctx = buildContext(o);
    EXPECT_NE(ly_ctx_get_module_implemented(ctx.get(), "ncstore-openroadm-inventory"), nullptr);
}

} // namespace
