// The server's libyang context: the NETCONF protocol modules with exactly the features the
// server implements (the advertised capabilities are derived from them), plus the data
// models served. ncstored and ncstore-db build it the same way, so a store written by the one
// loads in the other.
#pragma once

#include "ncstore/yang.hpp"

#include <filesystem>
#include <vector>

namespace ncstore {

struct ModelOptions {
    bool defaultModels = true;                     ///< ietf-interfaces, iana-if-type, bundled models
    std::vector<std::filesystem::path> yangDirs;   ///< every module loaded
    std::vector<std::filesystem::path> searchDirs; ///< imports only
    std::filesystem::path ietfDir;                 ///< IETF modules (Debian libyuma-base)
    std::filesystem::path serverDir;               ///< protocol modules shipped with ncstore (yang/server)
    std::filesystem::path bundledDir;              ///< the project's yang/ models; may be empty
};

/// Where the bundled models are: the installed data directory when this binary runs from /usr,
/// the source tree otherwise.
std::filesystem::path bundledModelsDir();
/// The IETF module directory compiled in.
std::filesystem::path systemIetfDir();
/// The protocol modules ncstore ships (RFC 5277's notifications, ...): installed or source tree.
std::filesystem::path serverModulesDir();

/// What ncstored loads when given no model option: the bundled models, ietf-interfaces and
/// iana-if-type, imports from the system IETF directory.
ModelOptions defaultModelOptions();

/// Builds the context. Throws YangError naming the module that failed.
Context buildContext(const ModelOptions& options);

} // namespace ncstore
