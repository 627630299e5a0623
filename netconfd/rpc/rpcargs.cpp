#include "rpcargs.hpp"

#include "events.hpp"

#include <cstring>

namespace ncstore::netconfd::rpcargs {

const lyd_node* child(const lyd_node* parent, const char* name) {
    for (const lyd_node* c = lyd_child(parent); c; c = c->next) {
        if (c->schema && std::strcmp(c->schema->name, name) == 0) {
            return c;
        }
    }
    return nullptr;
}

std::string valueOf(const lyd_node* node) {
    const char* v = node ? lyd_get_value(node) : nullptr;
    return v ? v : "";
}

std::optional<std::chrono::system_clock::time_point> timeOf(const lyd_node* parent, const char* name) {
    const lyd_node* node = parent ? child(parent, name) : nullptr;
    if (!node) {
        return std::nullopt;
    }
    auto t = notify::parseDateAndTime(valueOf(node));
    if (!t) {
        throw RpcError::invalidValue(std::string("bad ") + name + " " + valueOf(node), name);
    }
    return t;
}

ds::DefaultOperation defaultOperation(const lyd_node* rpc) {
    const std::string op = valueOf(child(rpc, "default-operation"));
    if (op == "replace") {
        return ds::DefaultOperation::Replace;
    }
    return op == "none" ? ds::DefaultOperation::None : ds::DefaultOperation::Merge;
}

DatastoreRef datastoreOf(const lyd_node* container) {
    DatastoreRef out;
    const lyd_node* c = lyd_child(container);
    if (!c || !c->schema) {
        throw RpcError(ErrorTag::MissingElement, ErrorType::Protocol, "no datastore given")
            .withBadElement(container && container->schema ? container->schema->name : "target");
    }
    const std::string name = c->schema->name;
    if (name == "running") {
        out.ds = ds::Datastore::Running;
    } else if (name == "candidate") {
        out.ds = ds::Datastore::Candidate;
    } else if (name == "startup") {
        out.ds = ds::Datastore::Startup;
    } else if (name == "config") {
        out.config = c;
    } else if (name == "url") {
        out.url = true;
    } else {
        throw RpcError(ErrorTag::InvalidValue, ErrorType::Protocol, "unknown datastore " + name)
            .withBadElement(name);
    }
    return out;
}

ds::Datastore requireDatastore(const lyd_node* rpc, const char* which) {
    const auto ref = datastoreOf(child(rpc, which));
    if (ref.url) {
        throw RpcError(ErrorTag::OperationNotSupported, ErrorType::Protocol,
                       "the :url capability is not supported");
    }
    if (!ref.ds) {
        throw RpcError(ErrorTag::InvalidValue, ErrorType::Protocol,
                       std::string("a datastore is required as ") + which)
            .withBadElement(which);
    }
    return *ref.ds;
}

std::uint32_t withDefaultsFlag(const lyd_node* rpc) {
    const std::string wd = valueOf(child(rpc, "with-defaults"));
    if (wd.empty() || wd == "explicit") {
        return LYD_PRINT_WD_EXPLICIT;
    }
    if (wd == "report-all") {
        return LYD_PRINT_WD_ALL;
    }
    if (wd == "report-all-tagged") {
        return LYD_PRINT_WD_ALL_TAG;
    }
    if (wd == "trim") {
        return LYD_PRINT_WD_TRIM;
    }
    throw RpcError(ErrorTag::InvalidValue, ErrorType::Protocol, "unsupported with-defaults mode " + wd)
        .withBadElement("with-defaults");
}

std::string datastoreForLog(const lyd_node* rpc) {
    for (const char* which : {"target", "source"}) {
        if (const lyd_node* c = child(rpc, which); c && lyd_child(c) && lyd_child(c)->schema) {
            return lyd_child(c)->schema->name;
        }
    }
    return "-";
}

} // namespace ncstore::netconfd::rpcargs
