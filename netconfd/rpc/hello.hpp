// The NETCONF capability exchange (RFC 6241 section 8.1) and the capabilities the server
// advertises.
//
// Promises:
//  - serverCapabilities() is computed from the YANG context alone: a capability is listed
//    exactly when what it names is loaded and implemented (protocol capabilities from
//    ietf-netconf's enabled features, one module capability per YANG 1.0 module, YANG 1.1
//    modules through yang-library as RFC 7950 section 5.6.4 asks).
//  - parseClientHello() accepts only a well-formed <hello> in the base namespace that offers
//    base:1.0 or base:1.1 and carries no session-id; anything else is a HelloError (the caller
//    ends the session, RFC 6241 section 8.1).
#pragma once

#include "ncstore/xml.hpp"

#include <libyang/libyang.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ncstore::netconfd {

inline constexpr const char* kBase10 = "urn:ietf:params:netconf:base:1.0";
inline constexpr const char* kBase11 = "urn:ietf:params:netconf:base:1.1";
inline constexpr const char* kNetconfNs = "urn:ietf:params:xml:ns:netconf:base:1.0";

/// Every capability of the server's <hello>, in a stable order.
std::vector<std::string> serverCapabilities(const ly_ctx* ctx);

/// The server's <hello> message (unframed).
std::string serverHello(const std::vector<std::string>& capabilities, std::uint32_t sessionId);

class HelloError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct ClientHello {
    std::vector<std::string> capabilities;
    bool base11 = false; ///< both sides speak base:1.1: chunked framing from now on
};

/// Parses and checks the client's <hello>. Throws HelloError.
ClientHello parseClientHello(const ly_ctx* ctx, std::string_view message);

} // namespace ncstore::netconfd
