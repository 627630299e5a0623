// What the fuzz targets over the YANG models share: quiet logs and the bundled examples.
#pragma once

#include "fuzz_support.hpp"
#include "inlineconfig.hpp"

#include "ncstore/log.hpp"

#include <libyang/libyang.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ncstore::fuzz {

/// For LLVMFuzzerInitialize: libyang keeps its last error for the code that reads it but logs
/// nothing, and the project's own log shows only what is fatal (noise at millions of inputs).
inline void quietLogs() {
    ly_log_options(LY_LOSTORE_LAST);
    log::setup("fatal");
}

/// The content of the <config> of an edit-config example (yang/openroadm/examples), as a document
/// of its own: namespace prefixes declared on <config> stay declared.
inline std::string exampleConfig(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        throw std::runtime_error("cannot read " + path);
    }
    std::ostringstream text;
    text << in.rdbuf();
    std::string file = text.str();
    // The file starts with a comment; the scanner reads <rpc> as the message's first element.
    const auto config = file.find("<config");
    if (config == std::string::npos) {
        throw std::runtime_error("no <config> in " + path);
    }
    const std::string rpc = "<rpc xmlns=\"urn:ietf:params:xml:ns:netconf:base:1.0\" message-id=\"1\">"
                            "<edit-config><target><running/></target>" +
                            file.substr(config) + "</edit-config></rpc>";
    const auto found = netconfd::findInlineConfig(rpc);
    if (!found) {
        throw std::runtime_error("the inline <config> scanner finds nothing in " + path);
    }
    return found->document;
}

} // namespace ncstore::fuzz
