// The server's libyang context: the NETCONF protocol modules with exactly the features the
// server implements (libnetconf2 derives the advertised capabilities from them), plus the data
// models served.
#pragma once

#include "ncstore/yang.hpp"

#include <filesystem>
#include <vector>

namespace ncstore::netconfd {

struct ModelOptions {
    bool defaultModels = true;                     ///< ietf-interfaces, iana-if-type, bundled models
    std::vector<std::filesystem::path> yangDirs;   ///< every module loaded
    std::vector<std::filesystem::path> searchDirs; ///< imports only
    std::filesystem::path ietfDir;                 ///< IETF modules (Debian libyuma-base)
    std::filesystem::path bundledDir;              ///< the project's yang/ models; may be empty
};

/// Where the bundled models are: the installed data directory when this binary runs from /usr,
/// the source tree otherwise.
std::filesystem::path bundledModelsDir();
/// The IETF module directory compiled in.
std::filesystem::path systemIetfDir();

/// Builds the context. Throws YangError naming the module that failed.
Context buildContext(const ModelOptions& options);

} // namespace ncstore::netconfd
