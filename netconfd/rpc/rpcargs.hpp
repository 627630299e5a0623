// Reading the input parameters of a parsed RPC (RFC 6241 operations), shared by the handlers.
//
// Promises: every function either returns what the RPC says or throws the RpcError RFC 6241
// prescribes for a missing or unusable parameter; none keeps state.
#pragma once

#include "errors.hpp"

#include "ncstore/datastore.hpp"

#include <libyang/libyang.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace ncstore::netconfd::rpcargs {

/// The input child `name` of an RPC node, or nullptr.
const lyd_node* child(const lyd_node* parent, const char* name);

/// The value of a term node, "" for nullptr.
std::string valueOf(const lyd_node* node);

/// The yang:date-and-time child `name` of `parent` (nullptr: none), or nullopt when absent;
/// invalid-value when it is not a time.
std::optional<std::chrono::system_clock::time_point> timeOf(const lyd_node* parent, const char* name);

/// The datastore named by the single child of a target/source container.
struct DatastoreRef {
    std::optional<ds::Datastore> ds;
    const lyd_node* config = nullptr; ///< inline <config> anyxml
    bool url = false;
};
DatastoreRef datastoreOf(const lyd_node* container);

/// The datastore of the `which` parameter ("target", "source"); an inline config or url refused.
ds::Datastore requireDatastore(const lyd_node* rpc, const char* which);

/// The default-operation parameter (edit-config, edit-data; merge when absent).
ds::DefaultOperation defaultOperation(const lyd_node* rpc);

/// The libyang print flag of the with-defaults parameter (RFC 6243; explicit when absent).
std::uint32_t withDefaultsFlag(const lyd_node* rpc);

/// The target or source datastore's name, for the log ("-" when there is none).
std::string datastoreForLog(const lyd_node* rpc);

} // namespace ncstore::netconfd::rpcargs
