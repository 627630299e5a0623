// The operations on configuration datastores (RFC 6241 7.1-7.4, 8.6): get, get-config,
// edit-config, copy-config, delete-config, validate.
#include "rpcargs.hpp"
#include "server.hpp"

#include "editcontent.hpp"
#include "ncstore/log.hpp"
#include "readview.hpp"

#include "filter.hpp"

namespace ncstore::netconfd {

using namespace rpcargs;

namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t microsSince(Clock::time_point start) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
}

} // namespace

Tree Server::parseConfig(ParsedRpc& req, const lyd_node* anyxml, std::uint64_t& parseUs) const {
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
    Tree tree = parseEditContent(ctx_.get(), text);
    parseUs += microsSince(start);
    NCS_LOG(trace) << "parsed config: "
                   << (tree ? print(tree.get(), LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK) : "");
    return tree;
}

Reply Server::read(Request& r, bool config) {
    const lyd_node* rpc = r.op;
    return Reply::xml(readXml(r, config ? requireDatastore(rpc, "source") : ds::Datastore::Running, !config,
                              child(rpc, "filter"), withDefaultsFlag(rpc)));
}

std::string Server::readXml(const Request& r, ds::Datastore source, bool withState,
                            const lyd_node* filterNode, std::uint32_t wd) {
    const bool config = !withState;
    std::string xml;
    Tree nacmConfig; // <get>: running's /nacm goes out with its counters, in one element
    store_->read(source, [&](const lyd_node* tree) {
        const lyd_node* nacm = config ? nullptr : nacmTop(tree);
        xml = readableXml(tree, filterNode, wd, r.access, nacm);
        nacmConfig.reset();
        if (nacm) {
            lyd_node* copy = nullptr;
            if (lyd_dup_single(nacm, nullptr, LYD_DUP_RECURSIVE | LYD_DUP_WITH_FLAGS, &copy) != LY_SUCCESS) {
                throw YangError("copying the NACM configuration for <get>", ctx_.get());
            }
            nacmConfig.reset(copy);
        }
    });
    if (!config) {
        Tree state = stateData(filterNode);
        if (nacmConfig && !state) {
            state = std::move(nacmConfig);
        } else if (nacmConfig) {
            lyd_node* first = state.release();
            const LY_ERR rc = lyd_merge_siblings(&first, nacmConfig.get(), 0);
            state.reset(first);
            if (rc != LY_SUCCESS) {
                throw YangError("merging the NACM configuration and counters", ctx_.get());
            }
        }
        xml += readableXml(state.get(), filterNode, wd, r.access);
    }
    return xml;
}

Reply Server::opGet(Request& r) {
    return read(r, false);
}

Reply Server::opGetConfig(Request& r) {
    return read(r, true);
}

Reply Server::opEditConfig(Request& r) {
    const lyd_node* rpc = r.op;
    const auto target = requireDatastore(rpc, "target");
    ds::EditOptions options;
    options.defaultOperation = defaultOperation(rpc);
    const std::string testOption = valueOf(child(rpc, "test-option"));
    if (testOption == "set") {
        options.testOption = ds::TestOption::Set;
    } else if (testOption == "test-only") {
        options.testOption = ds::TestOption::TestOnly;
    }
    const std::string errorOption = valueOf(child(rpc, "error-option"));
    if (errorOption == "continue-on-error") {
        throw RpcError(ErrorTag::OperationNotSupported, ErrorType::Protocol,
                       "error-option continue-on-error is not supported")
            .withBadElement("error-option");
    }
    if (errorOption == "stop-on-error") {
        options.errorOption = ds::ErrorOption::StopOnError;
    }
    return applyEdit(r, target, options);
}

Reply Server::applyEdit(Request& r, ds::Datastore target, const ds::EditOptions& options) {
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
    const Tree edit = parseConfig(r.rpc, configNode, reply.parseUs);
    // Only an edit that names /nacm, or replaces at the top, can change running's /nacm.
    const bool mayChangeNacm =
        target == ds::Datastore::Running &&
        (options.defaultOperation == ds::DefaultOperation::Replace || nacmTop(edit.get()));
    WriteCheck check = writeCheck(r, mayChangeNacm, options.testOption != ds::TestOption::TestOnly);
    ds::WriteContext who = check.context(writer(r.session));
    who.comment = valueOf(child(rpc, "comment")); // ncstore-commits' augment: the history's comment
    ds::WriteTiming timing;
    if (edit) {
        timing = check.run(*store_, [&] { return store_->edit(who, target, edit.get(), options); });
    } else if (options.defaultOperation == ds::DefaultOperation::Replace &&
               options.testOption != ds::TestOption::TestOnly) {
        // An empty <config> replacing everything empties the datastore.
        timing = check.run(*store_, [&] { return store_->replace(who, target, nullptr); });
    }
    reply.write = timing;
    return reply;
}

Reply Server::opCopyConfig(Request& r) {
    const lyd_node* rpc = r.op;
    const auto target = requireDatastore(rpc, "target");
    const auto source = datastoreOf(child(rpc, "source"));
    if (source.url) {
        throw RpcError(ErrorTag::OperationNotSupported, ErrorType::Protocol,
                       "the :url capability is not supported");
    }
    Reply reply;
    WriteCheck check = writeCheck(r, target == ds::Datastore::Running);
    const ds::WriteContext who = check.context(writer(r.session));
    ds::WriteTiming timing;
    if (source.config) {
        const Tree config = parseConfig(r.rpc, source.config, reply.parseUs);
        timing = check.run(*store_, [&] { return store_->replace(who, target, config.get()); });
    } else if (*source.ds != target) {
        requireReadable(r, *source.ds);
        timing = check.run(*store_, [&] { return store_->copy(who, *source.ds, target); });
    }
    reply.write = timing;
    return reply;
}

Reply Server::opDeleteConfig(Request& r) {
    const lyd_node* rpc = r.op;
    const auto target = requireDatastore(rpc, "target");
    if (target == ds::Datastore::Running) {
        throw RpcError(ErrorTag::OperationNotSupported, ErrorType::Protocol,
                       "the running datastore cannot be deleted")
            .withBadElement("running");
    }
    WriteCheck check = writeCheck(r, false);
    const ds::WriteContext who = check.context(writer(r.session));
    const auto timing = check.run(*store_, [&] { return store_->clear(who, target); });
    Reply reply;
    reply.write = timing;
    return reply;
}

Reply Server::opValidate(Request& r) {
    const lyd_node* rpc = r.op;
    const auto source = datastoreOf(child(rpc, "source"));
    if (source.url) {
        throw RpcError(ErrorTag::OperationNotSupported, ErrorType::Protocol,
                       "the :url capability is not supported");
    }
    // What a commit or copy to running would refuse: YANG, and a NACM configuration that does
    // not compile (WriteCheck).
    std::vector<nacm::Problem> problems;
    if (source.config) {
        std::uint64_t parseUs = 0;
        const Tree config = parseConfig(r.rpc, source.config, parseUs);
        store_->validate(config.get());
        problems = nacm::Policy::validate(config.get(), ctx_.get());
    } else {
        store_->validate(*source.ds);
        store_->read(*source.ds, [&](const lyd_node* tree) {
            problems = nacm::Policy::validate(nacmTop(tree), ctx_.get());
        });
    }
    if (!problems.empty()) {
        throw RpcError::invalidValue(nacm::ConfigError(problems).what(), {}, ErrorType::Application)
            .withPath(problems.front().path);
    }
    return Reply::ok();
}

WriteCheck Server::writeCheck(const Request& r, bool mayChangeNacm, bool install) {
    const nacm::Access* limited = r.access && !r.access->permitsAllWrites() ? r.access : nullptr;
    return WriteCheck(*nacm_, limited, mayChangeNacm, install);
}

void Server::requireReadable(const Request& r, ds::Datastore source) const {
    if (!r.access || r.access->permitsAllReads()) {
        return;
    }
    // RFC 8341, <copy-config>: read access to the whole source datastore is needed.
    std::string denied;
    store_->read(source, [&](const lyd_node* tree) {
        std::vector<const lyd_node*> unreadable;
        r.access->unreadable(tree, unreadable);
        denied = unreadable.empty() ? "" : pathOf(unreadable.front());
    });
    if (!denied.empty()) {
        ++nacm_->counters().deniedDataWrites;
        throw RpcError::accessDenied("access denied: user '" + r.session.user + "' may not read all of the " +
                                         ds::toString(source) + " datastore it copies",
                                     denied);
    }
}

} // namespace ncstore::netconfd
