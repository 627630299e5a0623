// What the writing operations share (edit.hpp).
#include "edit.hpp"

#include "editcontent.hpp"
#include "rpcargs.hpp"

#include "ncstore/log.hpp"

#include <chrono>

namespace ncstore::netconfd::edit {

using namespace rpcargs;

namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t microsSince(Clock::time_point start) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
}

} // namespace

Tree parseConfig(const Services& svc, ParsedRpc& req, const lyd_node* anyxml, std::uint64_t& parseUs) {
    if (auto parsed = req.takeConfig(anyxml)) {
        // Parsed with the message (rpcparse.hpp): already what parseEditContent() gives.
        parseUs += parsed->parseUs;
        return std::move(parsed->tree);
    }
    if (isParsedSeparately(anyxml)) {
        throw RpcError(ErrorTag::OperationFailed, ErrorType::Application,
                       "the <config> content parsed with the message is no longer available");
    }
    const auto start = Clock::now();
    std::string text;
    const auto* any = reinterpret_cast<const lyd_node_any*>(anyxml);
    if (any->value_type == LYD_ANYDATA_DATATREE) {
        // lyd_any_value_str() drops empty non-presence containers, and with them an operation
        // on them (<interfaces nc:operation="delete"/>): keep them.
        if (any->value.tree) {
            text = print(any->value.tree, LYD_XML,
                         LYD_PRINT_WITHSIBLINGS | LYD_PRINT_KEEPEMPTYCONT | LYD_PRINT_SHRINK);
        }
    } else {
        char* raw = nullptr;
        if (lyd_any_value_str(anyxml, &raw) != LY_SUCCESS) {
            throw RpcError(ErrorTag::MalformedMessage, ErrorType::Rpc, "cannot read the <config> content");
        }
        const CString owned{raw};
        text = owned ? owned.get() : "";
    }
    if (text.empty()) {
        parseUs += microsSince(start);
        return nullptr;
    }
    NCS_LOG(trace) << "config content: " << text;
    Tree tree = parseEditContent(svc.ctx, text);
    parseUs += microsSince(start);
    NCS_LOG(trace) << "parsed config: "
                   << (tree ? print(tree.get(), LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK) : "");
    return tree;
}

Reply applyEdit(const Services& svc, Request& r, ds::Datastore target, const ds::EditOptions& options) {
    const lyd_node* rpc = r.op;
    const lyd_node* configNode = child(rpc, "config");
    if (!configNode) {
        if (child(rpc, "url")) {
            throw RpcError(ErrorTag::OperationNotSupported, ErrorType::Protocol,
                           "the :url capability is not supported");
        }
        throw RpcError(ErrorTag::MissingElement, ErrorType::Protocol,
                       std::string(rpc->schema->name) + " needs <config>")
            .withBadElement("config");
    }
    Reply reply;
    const Tree edit = parseConfig(svc, r.rpc, configNode, reply.parseUs);
    // Only an edit that names /nacm, or replaces at the top, can change running's /nacm.
    const bool mayChangeNacm =
        target == ds::Datastore::Running &&
        (options.defaultOperation == ds::DefaultOperation::Replace || nacmTop(edit.get()));
    WriteCheck check = writeCheck(svc, r, mayChangeNacm, options.testOption != ds::TestOption::TestOnly);
    ds::WriteContext who = check.context(writer(r.session));
    who.comment = valueOf(child(rpc, "comment")); // ncstore-commits' augment: the history's comment
    ds::WriteTiming timing;
    if (edit) {
        timing = check.run(svc.store, [&] { return svc.store.edit(who, target, edit.get(), options); });
    } else if (options.defaultOperation == ds::DefaultOperation::Replace &&
               options.testOption != ds::TestOption::TestOnly) {
        // An empty <config> replacing everything empties the datastore.
        timing = check.run(svc.store, [&] { return svc.store.replace(who, target, nullptr); });
    }
    reply.write = timing;
    return reply;
}

WriteCheck writeCheck(const Services& svc, const Request& r, bool mayChangeNacm, bool install) {
    const nacm::Access* limited = r.access && !r.access->permitsAllWrites() ? r.access : nullptr;
    return WriteCheck(svc.nacm, limited, mayChangeNacm, install);
}

void requireReadable(const Services& svc, const Request& r, ds::Datastore source) {
    if (!r.access || r.access->permitsAllReads()) {
        return;
    }
    // RFC 8341, <copy-config>: read access to the whole source datastore is needed.
    std::string denied;
    svc.store.read(source, [&](const lyd_node* tree) {
        std::vector<const lyd_node*> unreadable;
        r.access->unreadable(tree, unreadable);
        denied = unreadable.empty() ? "" : pathOf(unreadable.front());
    });
    if (!denied.empty()) {
        ++svc.nacm.counters().deniedDataWrites;
        throw RpcError::accessDenied("access denied: user '" + r.session.user + "' may not read all of the " +
                                         ds::toString(source) + " datastore it copies",
                                     denied);
    }
}

} // namespace ncstore::netconfd::edit
