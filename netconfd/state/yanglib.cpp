// ietf-yang-library (RFC 8525) state data.
#include "providers.hpp"

#include <string>

namespace ncstore::netconfd {

namespace {

class YangLibraryState final : public StateProvider {
public:
    std::vector<Top> tops() const override {
        return {{"ietf-yang-library", "yang-library"}, {"ietf-yang-library", "modules-state"}};
    }
    Tree state(const ly_ctx* ctx) const override;
};

Tree YangLibraryState::state(const ly_ctx* ctx) const {
    // ietf-yang-library: the same content-id as the yang-library capability of the <hello>
    lyd_node* yanglib = nullptr;
    if (ly_ctx_get_yanglib_data(ctx, &yanglib, "%u", ly_ctx_get_change_count(ctx)) != LY_SUCCESS) {
        throw YangError("cannot build ietf-yang-library data", ctx);
    }
    Tree lib{yanglib};
    // RFC 8525 (yang-library 1.1): the datastores, all with the one schema libyang lists (NMDA,
    // RFC 8342: intended and operational are running as applied, see ops/nmda.cpp).
    for (const char* name : {"running", "candidate", "startup", "intended", "operational"}) {
        const std::string path =
            std::string("/ietf-yang-library:yang-library/datastore[name='ietf-datastores:") + name +
            "']/schema";
        if (lyd_new_path(lib.get(), ctx, path.c_str(), "complete", 0, nullptr) != LY_SUCCESS) {
            throw YangError("cannot list the datastores in ietf-yang-library", ctx);
        }
    }
    return lib;
}

} // namespace

std::shared_ptr<const StateProvider> makeYangLibraryState() {
    return std::make_shared<YangLibraryState>();
}

} // namespace ncstore::netconfd
