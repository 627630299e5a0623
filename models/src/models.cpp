#include "ncstore/models.hpp"

#include "ncstore/log.hpp"

#include <unistd.h>

#ifndef NCSTORE_SOURCE_YANG_DIR
#define NCSTORE_SOURCE_YANG_DIR ""
#endif
#ifndef NCSTORE_INSTALLED_YANG_DIR
#define NCSTORE_INSTALLED_YANG_DIR "/usr/share/ncstore/yang"
#endif
#ifndef NCSTORE_SOURCE_SERVER_YANG_DIR
#define NCSTORE_SOURCE_SERVER_YANG_DIR ""
#endif
#ifndef NCSTORE_IETF_YANG_DIR
#define NCSTORE_IETF_YANG_DIR "/usr/share/yuma/modules/ietf"
#endif

namespace ncstore {

namespace {

bool hasYang(const std::filesystem::path& dir) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        if (e.path().extension() == ".yang") {
            return true;
        }
    }
    return false;
}

/// The bundled models directory, when it holds modules. Subdirectories are not scanned: they
/// may hold other releases of the same modules.
std::vector<std::filesystem::path> modelDirs(const std::filesystem::path& root) {
    if (root.empty() || !hasYang(root)) {
        return {};
    }
    return {root};
}

void load(ly_ctx* ctx, const std::string& name, const char* revision, const char** features) {
    if (!ly_ctx_load_module(ctx, name.c_str(), revision, features)) {
        throw YangError("cannot load YANG module " + name, ctx);
    }
}

/// Deviations of the server from the protocol modules it implements, advertised like any
/// module of the context (capabilities, yang-library, get-schema).
constexpr const char* kDeviations = R"(module ncstore-deviations {
  yang-version 1.1;
  namespace "urn:ncstore:yang:ncstore-deviations";
  prefix ncsd;

  import ietf-netconf-monitoring {
    prefix ncm;
  }

  organization
    "ncstore";
  description
    "How ncstored deviates from the NETCONF protocol modules it implements.";

  revision 2026-11-30 {
    description
      "get-schema format as text.";
  }

  deviation "/ncm:get-schema/ncm:input/ncm:format" {
    description
      "Clients (ncclient among them) send the identity without a prefix, <format>yang</format>,
       in an element whose default namespace is not ietf-netconf-monitoring's; as an identityref
       the value cannot be resolved (RFC 7950 9.10.3) and the request fails. ncstored reads the
       value as text: yang and yin are served, with or without a prefix; any other value is
       answered with error-tag invalid-value.";
    deviate replace {
      type string;
    }
  }
}
)";

} // namespace

std::filesystem::path bundledModelsDir() {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec && exe.string().rfind("/usr/", 0) == 0) {
        const std::filesystem::path installed = NCSTORE_INSTALLED_YANG_DIR;
        return std::filesystem::is_directory(installed / "openroadm") ? installed / "openroadm" : installed;
    }
    return NCSTORE_SOURCE_YANG_DIR;
}

std::filesystem::path systemIetfDir() {
    return NCSTORE_IETF_YANG_DIR;
}

std::filesystem::path serverModulesDir() {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec && exe.string().rfind("/usr/", 0) == 0) {
        // The packages install under /usr whatever prefix the build had (packaging/CMakeLists.txt):
        // the modules are where the binary's own prefix put them, PREFIX/sbin -> PREFIX/share.
        const auto beside = exe.parent_path().parent_path() / "share/ncstore/yang/server";
        if (std::filesystem::is_directory(beside, ec)) {
            return beside;
        }
        return std::filesystem::path(NCSTORE_INSTALLED_YANG_DIR) / "server";
    }
    return NCSTORE_SOURCE_SERVER_YANG_DIR;
}

ModelOptions defaultModelOptions() {
    ModelOptions o;
    o.ietfDir = systemIetfDir();
    o.serverDir = serverModulesDir();
    o.bundledDir = bundledModelsDir();
    return o;
}

Context buildContext(const ModelOptions& options) {
    ly_ctx* raw = nullptr;
    // ietf-yang-library stays implemented: <get> and the capabilities need it.
    if (ly_ctx_new(nullptr, LY_CTX_DISABLE_SEARCHDIR_CWD, &raw) != LY_SUCCESS) {
        throw YangError("cannot create libyang context");
    }
    Context ctx{raw};

    std::vector<std::filesystem::path> loadAll = options.yangDirs;
    if (options.defaultModels) {
        for (const auto& d : modelDirs(options.bundledDir)) {
            loadAll.push_back(d);
        }
    }
    std::vector<std::filesystem::path> search = loadAll;
    search.insert(search.end(), options.searchDirs.begin(), options.searchDirs.end());
    // The IETF directory comes last: a user's directory may carry newer revisions.
    if (!options.serverDir.empty()) {
        search.push_back(options.serverDir);
    }
    search.push_back(options.ietfDir);
    for (const auto& d : search) {
        // The same directory named twice (bundled and --yang-dir, say) is already searched.
        const LY_ERR rc = ly_ctx_set_searchdir(ctx.get(), d.c_str());
        if (rc != LY_SUCCESS && rc != LY_EEXIST) {
            throw YangError("cannot add YANG search directory " + d.string(), ctx.get());
        }
    }

    // Exactly the features implemented: the <hello> advertises a capability per feature.
    const char* netconfFeatures[] = {"writable-running",
                                     "candidate",
                                     "confirmed-commit",
                                     "rollback-on-error",
                                     "validate",
                                     "startup",
                                     "xpath",
                                     nullptr};
    load(ctx.get(), "ietf-netconf", "2011-06-01", netconfFeatures);
    load(ctx.get(), "ietf-netconf-with-defaults", nullptr, nullptr);
    load(ctx.get(), "ietf-netconf-monitoring", nullptr, nullptr);
    // NMDA (RFC 8526): get-data and edit-data, with origin metadata (RFC 8342) and with-defaults.
    load(ctx.get(), "ietf-origin", "2018-02-14", nullptr);
    const char* nmdaFeatures[] = {"origin", "with-defaults", nullptr};
    load(ctx.get(), "ietf-netconf-nmda", "2019-01-07", nmdaFeatures);
    // NACM (RFC 8341): its configuration lives in running like any other data.
    load(ctx.get(), "ietf-netconf-acm", "2018-02-14", nullptr);
    if (lys_parse_mem(ctx.get(), kDeviations, LYS_IN_YANG, nullptr) != LY_SUCCESS) {
        throw YangError("cannot load the ncstore-deviations module", ctx.get());
    }
    // Notifications: RFC 5277's operation and stream list (yang/server), RFC 6470's events.
    if (!options.serverDir.empty()) {
        load(ctx.get(), "notifications", "2008-07-14", nullptr);
        load(ctx.get(), "nc-notifications", "2008-07-14", nullptr);
        load(ctx.get(), "ietf-netconf-notifications", nullptr, nullptr);
        // Dynamic subscriptions (RFC 8639) and YANG-Push (RFC 8641): exactly the features served.
        const char* snFeatures[] = {"encode-xml", "replay", "subtree", "xpath", nullptr};
        load(ctx.get(), "ietf-subscribed-notifications", "2019-09-09", snFeatures);
        const char* ypFeatures[] = {"on-change", nullptr};
        load(ctx.get(), "ietf-yang-push", "2019-09-09", ypFeatures);
        // The commit history (netconfd/changes/history): /commits, rollback, comments on writes.
        load(ctx.get(), "ncstore-commits", "2026-12-02", nullptr);
        // The dqlite cluster of --backend dqlite (netconfd/cluster): state data only.
        load(ctx.get(), "ncstore-cluster", "2026-12-03", nullptr);
        // The local application API (netconfd/app): its sessions' transport identity.
        load(ctx.get(), "ncstore-app", "2026-12-07", nullptr);
    }

    const char* allFeatures[] = {"*", nullptr};
    if (options.defaultModels) {
        load(ctx.get(), "iana-if-type", nullptr, nullptr);
        load(ctx.get(), "ietf-interfaces", "2014-05-08", allFeatures);
    }
    for (const auto& d : loadAll) {
        for (const auto& name : modulesInDir(d)) {
            NCS_LOG(debug) << "loading YANG module " << name << " from " << d.string();
            load(ctx.get(), name, nullptr, allFeatures);
        }
    }
    return ctx;
}

} // namespace ncstore
