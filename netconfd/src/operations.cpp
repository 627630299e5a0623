// The RFC 6241 / RFC 6022 operations: RPC tree in, reply out, through ncstore::ds::Store.
#include "editcontent.hpp"
#include "errors.hpp"
#include "rpcparse.hpp"
#include "server.hpp"
#include "session.hpp"

#include "ncstore/log.hpp"

#include "filter.hpp"

#include <nc_server.h>

#include <chrono>
#include <cstring>
#include <optional>

namespace ncstore::netconfd {

namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t microsSince(Clock::time_point start) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
}

/// The input child `name` of an RPC node, or nullptr.
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

/// The datastore named by the single child of a target/source container.
struct DatastoreRef {
    std::optional<ds::Datastore> ds;
    const lyd_node* config = nullptr; ///< inline <config> anyxml
    bool url = false;
};

DatastoreRef datastoreOf(const lyd_node* container) {
    DatastoreRef out;
    const lyd_node* c = lyd_child(container);
    if (!c || !c->schema) {
        throw RpcError("missing-element", ErrorType::Protocol, "no datastore given")
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
        throw RpcError("invalid-value", ErrorType::Protocol, "unknown datastore " + name)
            .withBadElement(name);
    }
    return out;
}

ds::Datastore requireDatastore(const lyd_node* rpc, const char* which) {
    const auto ref = datastoreOf(child(rpc, which));
    if (ref.url) {
        throw RpcError("operation-not-supported", ErrorType::Protocol,
                       "the :url capability is not supported");
    }
    if (!ref.ds) {
        throw RpcError("invalid-value", ErrorType::Protocol,
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
    throw RpcError("invalid-value", ErrorType::Protocol, "unsupported with-defaults mode " + wd)
        .withBadElement("with-defaults");
}

/// Applies the RPC's filter to `data` and prints the result (XML, without an enclosing element).
std::string filteredXml(const lyd_node* data, const lyd_node* filterNode, std::uint32_t wd) {
    if (!data) {
        return {};
    }
    if (!filterNode) {
        return print(data, LYD_XML, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK | wd);
    }
    // Printed straight from the data: no copy of what the filter selects (filter.hpp).
    return filter::applyXml(data, filterNode, wd);
}

/// An RPC reply carrying `xml` in the output anyxml `data` of `rpc`.
nc_server_reply* dataReply(const lyd_node* rpc, const std::string& content, LYD_ANYDATA_VALUETYPE type) {
    lyd_node* raw = nullptr;
    if (lyd_dup_single(rpc, nullptr, 0, &raw) != LY_SUCCESS) {
        throw YangError("cannot build the reply", LYD_CTX(rpc));
    }
    Tree out{raw};
    if (lyd_new_any(out.get(), nullptr, "data", content.c_str(), 0, type, 1, nullptr) != LY_SUCCESS) {
        throw YangError("cannot build the reply data", LYD_CTX(rpc));
    }
    nc_server_reply* reply = nc_server_reply_data(out.get(), NC_WD_EXPLICIT, NC_PARAMTYPE_FREE);
    if (!reply) {
        throw std::runtime_error("cannot build the reply");
    }
    out.release(); // the reply owns it now
    return reply;
}

nc_server_reply* okReply() {
    return nc_server_reply_ok();
}

// Where the last write of this thread spent its time; the handlers set it, dispatch() reads it.
thread_local ds::WriteTiming lastWriteTiming;
thread_local std::uint64_t lastWriteParseUs = 0;
void setLastTiming(const ds::WriteTiming& t, std::uint64_t parseUs) {
    lastWriteTiming = t;
    lastWriteParseUs = parseUs;
}
ds::WriteTiming lastTiming() {
    return lastWriteTiming;
}
std::uint64_t lastParseUs() {
    return lastWriteParseUs;
}

std::string datastoreForLog(const lyd_node* rpc) {
    for (const char* which : {"target", "source"}) {
        if (const lyd_node* c = child(rpc, which); c && lyd_child(c) && lyd_child(c)->schema) {
            return lyd_child(c)->schema->name;
        }
    }
    return "-";
}

} // namespace

nc_server_reply* Server::dispatch(lyd_node* rpc, nc_session* ncs) {
    const auto start = Clock::now();
    const ly_ctx* ctx = nc_session_get_ctx(ncs);
    const std::string op = rpc && rpc->schema ? rpc->schema->name : "?";
    auto session = findSession(nc_session_get_id(ncs));
    if (!session) {
        // Cannot happen: sessions are registered before their first poll.
        return nc_server_reply_err(nc_err(ctx, NC_ERR_OP_FAILED, NC_ERR_TYPE_APP));
    }
    Session& s = *session;
    // A <config> content parsed with this message and not taken by its handler (which failed
    // first) is freed with the reply, not when the session's thread parses its next message.
    struct DropParsedConfig {
        ~DropParsedConfig() { dropParsedConfig(); }
    } const dropUntaken;
    if (auto parseError = takeRpcParseError(rpc)) {
        // libnetconf2 could not parse this <rpc> (rpcparse.hpp): `rpc` is a stand-in.
        ++s.inBadRpcs;
        ++stats_.inBadRpcs;
        ++s.outRpcErrors;
        ++stats_.outRpcErrors;
        RpcError& e = *parseError;
        if (e.tag == "malformed-message" && nc_session_get_version(ncs) == 0) {
            // RFC 6241 Appendix A: malformed-message "MUST NOT be sent to old clients" (base:1.0).
            e.tag = "operation-failed";
        }
        NCS_LOG(debug) << "session " << s.id << " bad rpc: " << e.tag << ": " << e.what();
        return nc_server_reply_err(toNcErr(ctx, e));
    }
    ++s.inRpcs;
    ++stats_.inRpcs;

    nc_server_reply* reply = nullptr;
    std::string errorTag;
    std::uint64_t parseUs = 0;
    ds::WriteTiming timing;
    bool isWrite = false;
    auto fail = [&](const RpcError& e) {
        errorTag = e.tag;
        reply = nc_server_reply_err(toNcErr(ctx, e));
    };
    try {
        const std::string module = rpc->schema->module->name;
        if (module == "ietf-netconf") {
            if (op == "get") {
                reply = opGet(rpc, s, false);
            } else if (op == "get-config") {
                reply = opGet(rpc, s, true);
            } else if (op == "edit-config" || op == "copy-config" || op == "delete-config" ||
                       op == "commit") {
                isWrite = true;
                setLastTiming({}, 0);
                // The write handlers leave their timing in setLastTiming() (per thread).
                reply = op == "edit-config"   ? opEditConfig(rpc, s)
                        : op == "copy-config" ? opCopyConfig(rpc, s)
                        : op == "commit"      ? opCommit(s)
                                              : opDeleteConfig(rpc, s);
            } else if (op == "lock") {
                reply = opLock(rpc, s, true);
            } else if (op == "unlock") {
                reply = opLock(rpc, s, false);
            } else if (op == "close-session") {
                nc_session_set_term_reason(ncs, NC_SESSION_TERM_CLOSED);
                reply = okReply();
            } else if (op == "kill-session") {
                reply = opKillSession(rpc, s);
            } else if (op == "validate") {
                reply = opValidate(rpc, s);
            } else if (op == "discard-changes") {
                reply = opDiscardChanges(s);
            } else {
                throw RpcError("operation-not-supported", ErrorType::Protocol,
                               "operation " + op + " is not supported");
            }
        } else if (module == "ietf-netconf-monitoring" && op == "get-schema") {
            reply = opGetSchema(rpc);
        } else {
            throw RpcError("operation-not-supported", ErrorType::Protocol,
                           "operation " + module + ":" + op + " is not supported");
        }
    } catch (const RpcError& e) {
        fail(e);
    } catch (const ds::Error& e) {
        fail(fromDatastore(e));
    } catch (const filter::Error& e) {
        fail(RpcError("invalid-value", ErrorType::Protocol, std::string("invalid filter: ") + e.what())
                 .withBadElement("filter"));
    } catch (const std::exception& e) {
        NCS_LOG(error) << "session " << s.id << " " << op << ": " << e.what();
        fail(RpcError("operation-failed", ErrorType::Application, e.what()));
    } catch (...) {
        fail(RpcError("operation-failed", ErrorType::Application, "internal error"));
    }
    if (!reply) {
        // nc_server_reply_err failed (out of memory): libnetconf2 answers operation-failed itself.
        errorTag = "operation-failed";
    }
    if (!errorTag.empty()) {
        ++s.outRpcErrors;
        ++stats_.outRpcErrors;
    }
    const auto us = microsSince(start);
    if (isWrite) {
        timing = lastTiming();
        parseUs = lastParseUs();
    }
    stats_.record(op, us, !errorTag.empty(), parseUs, isWrite ? &timing : nullptr);
    NCS_LOG(debug) << "session " << s.id << " " << op << " " << datastoreForLog(rpc) << " " << us << "us"
                   << (errorTag.empty() ? "" : " error " + errorTag)
                   << (isWrite ? " (parse " + std::to_string(parseUs) + "us apply " +
                                     std::to_string(timing.applyUs) + "us validate " +
                                     std::to_string(timing.validateUs) + "us serialize " +
                                     std::to_string(timing.serializeUs) + "us commit-wait " +
                                     std::to_string(timing.commitWaitUs) + "us)" +
                                     (timing.wholeTreeValidation ? " validated whole-tree" : "")
                               : "");
    return reply;
}

void Server::checkWritable(ds::Datastore target, const Session& s) const {
    const auto holder = locks_.holder(target);
    if (holder != 0 && holder != s.id) {
        throw RpcError("in-use", ErrorType::Protocol,
                       std::string("the ") + ds::toString(target) + " datastore is locked by session " +
                           std::to_string(holder));
    }
}

Tree Server::parseConfig(const lyd_node* anyxml, std::uint64_t& parseUs) const {
    if (auto parsed = takeParsedConfig(anyxml)) {
        // Parsed with the message (rpcparse.hpp): already what parseEditContent() gives.
        parseUs += parsed->parseUs;
        return std::move(parsed->tree);
    }
    if (isParsedSeparately(anyxml)) {
        throw RpcError("operation-failed", ErrorType::Application,
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
            throw RpcError("malformed-message", ErrorType::Rpc, "cannot read the <config> content");
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

nc_server_reply* Server::opGet(const lyd_node* rpc, Session& /*s*/, bool config) {
    const std::uint32_t wd = withDefaultsFlag(rpc);
    const lyd_node* filterNode = child(rpc, "filter");
    ds::Datastore source = ds::Datastore::Running;
    if (config) {
        source = requireDatastore(rpc, "source");
    }
    std::string xml;
    store_->read(source, [&](const lyd_node* tree) { xml = filteredXml(tree, filterNode, wd); });
    if (!config) {
        const Tree state = stateData();
        xml += filteredXml(state.get(), filterNode, wd);
    }
    return dataReply(rpc, xml, LYD_ANYDATA_XML);
}

nc_server_reply* Server::opEditConfig(const lyd_node* rpc, Session& s) {
    const auto target = requireDatastore(rpc, "target");
    ds::EditOptions options;
    const std::string defaultOp = valueOf(child(rpc, "default-operation"));
    if (defaultOp == "replace") {
        options.defaultOperation = ds::DefaultOperation::Replace;
    } else if (defaultOp == "none") {
        options.defaultOperation = ds::DefaultOperation::None;
    }
    const std::string testOption = valueOf(child(rpc, "test-option"));
    if (testOption == "set") {
        options.testOption = ds::TestOption::Set;
    } else if (testOption == "test-only") {
        options.testOption = ds::TestOption::TestOnly;
    }
    const std::string errorOption = valueOf(child(rpc, "error-option"));
    if (errorOption == "continue-on-error") {
        throw RpcError("operation-not-supported", ErrorType::Protocol,
                       "error-option continue-on-error is not supported")
            .withBadElement("error-option");
    }
    if (errorOption == "stop-on-error") {
        options.errorOption = ds::ErrorOption::StopOnError;
    }
    const lyd_node* configNode = child(rpc, "config");
    if (!configNode) {
        if (child(rpc, "url")) {
            throw RpcError("operation-not-supported", ErrorType::Protocol,
                           "the :url capability is not supported");
        }
        throw RpcError("missing-element", ErrorType::Protocol, "edit-config needs <config>")
            .withBadElement("config");
    }
    checkWritable(target, s);
    std::uint64_t parseUs = 0;
    const Tree edit = parseConfig(configNode, parseUs);
    setLastTiming({}, parseUs);
    ds::WriteTiming timing;
    if (edit) {
        timing = store_->edit(target, edit.get(), options);
    } else if (options.defaultOperation == ds::DefaultOperation::Replace &&
               options.testOption != ds::TestOption::TestOnly) {
        // An empty <config> replacing everything empties the datastore.
        timing = store_->replace(target, nullptr);
    }
    if (target == ds::Datastore::Candidate && options.testOption != ds::TestOption::TestOnly) {
        locks_.candidateEditedBy(s.id);
    }
    setLastTiming(timing, parseUs);
    return okReply();
}

nc_server_reply* Server::opCopyConfig(const lyd_node* rpc, Session& s) {
    const auto target = requireDatastore(rpc, "target");
    const auto source = datastoreOf(child(rpc, "source"));
    if (source.url) {
        throw RpcError("operation-not-supported", ErrorType::Protocol,
                       "the :url capability is not supported");
    }
    checkWritable(target, s);
    std::uint64_t parseUs = 0;
    ds::WriteTiming timing;
    setLastTiming({}, 0);
    if (source.config) {
        const Tree config = parseConfig(source.config, parseUs);
        timing = store_->replace(target, config.get());
    } else if (*source.ds != target) {
        timing = store_->copy(*source.ds, target);
    }
    if (target == ds::Datastore::Candidate) {
        locks_.candidateEditedBy(s.id);
    }
    setLastTiming(timing, parseUs);
    return okReply();
}

nc_server_reply* Server::opDeleteConfig(const lyd_node* rpc, Session& s) {
    setLastTiming({}, 0);
    const auto target = requireDatastore(rpc, "target");
    if (target == ds::Datastore::Running) {
        throw RpcError("operation-not-supported", ErrorType::Protocol,
                       "the running datastore cannot be deleted")
            .withBadElement("running");
    }
    checkWritable(target, s);
    const auto timing = store_->clear(target);
    if (target == ds::Datastore::Candidate) {
        locks_.candidateEditedBy(s.id);
    }
    setLastTiming(timing, 0);
    return okReply();
}

nc_server_reply* Server::opLock(const lyd_node* rpc, Session& s, bool lock) {
    const auto target = requireDatastore(rpc, "target");
    if (lock) {
        const bool dirty = target == ds::Datastore::Candidate && store_->candidateModified();
        const auto outcome = locks_.lock(target, s.id, dirty);
        switch (outcome.result) {
        case LockTable::LockResult::Granted:
            NCS_LOG(info) << "session " << s.id << " locked " << ds::toString(target);
            return okReply();
        case LockTable::LockResult::HeldByOther:
            throw RpcError("lock-denied", ErrorType::Protocol,
                           "Lock failed, lock is already held by session " + std::to_string(outcome.holder))
                .withSessionId(outcome.holder);
        case LockTable::LockResult::CandidateModified:
            throw RpcError("lock-denied", ErrorType::Protocol,
                           "the candidate datastore has uncommitted changes made by another session")
                .withSessionId(0);
        }
    }
    switch (locks_.unlock(target, s.id)) {
    case LockTable::UnlockResult::Released:
        NCS_LOG(info) << "session " << s.id << " unlocked " << ds::toString(target);
        if (target == ds::Datastore::Candidate && store_->candidateModified()) {
            // Changes made under the lock and not committed go with it (RFC 6241 8.3.5.2).
            store_->discardChanges();
            locks_.candidateClean();
        }
        return okReply();
    case LockTable::UnlockResult::NotLocked:
        throw RpcError("operation-failed", ErrorType::Protocol,
                       std::string("the ") + ds::toString(target) + " datastore is not locked");
    case LockTable::UnlockResult::HeldByOther:
        break;
    }
    throw RpcError("operation-failed", ErrorType::Protocol,
                   std::string("the ") + ds::toString(target) + " lock is held by session " +
                       std::to_string(locks_.holder(target)));
}

nc_server_reply* Server::opKillSession(const lyd_node* rpc, Session& s) {
    const std::string idText = valueOf(child(rpc, "session-id"));
    std::uint32_t id = 0;
    try {
        id = static_cast<std::uint32_t>(std::stoul(idText));
    } catch (const std::exception&) {
        throw RpcError("invalid-value", ErrorType::Protocol, "bad session-id " + idText)
            .withBadElement("session-id");
    }
    if (id == s.id) {
        throw RpcError("invalid-value", ErrorType::Protocol,
                       "a session cannot kill itself; use <close-session>")
            .withBadElement("session-id");
    }
    auto target = findSession(id);
    if (!target) {
        throw RpcError("invalid-value", ErrorType::Protocol, "no session " + std::to_string(id))
            .withBadElement("session-id");
    }
    NCS_LOG(info) << "session " << s.id << " kills session " << id;
    // Locks go at once, so that the killer can take them right after the reply.
    for (auto ds : locks_.releaseAll(id)) {
        if (ds == ds::Datastore::Candidate) {
            store_->discardChanges();
            locks_.candidateClean();
        }
    }
    target->killedBy = s.id;
    target->killRequested = true;
    target->wake();
    std::unique_lock lock(sessionsMutex_);
    // An RPC in flight on the target finishes first; do not wait for it forever.
    sessionsCv_.wait_for(lock, std::chrono::seconds(5), [&] { return sessions_.count(id) == 0; });
    return okReply();
}

nc_server_reply* Server::opValidate(const lyd_node* rpc, Session& /*s*/) {
    const auto source = datastoreOf(child(rpc, "source"));
    if (source.url) {
        throw RpcError("operation-not-supported", ErrorType::Protocol,
                       "the :url capability is not supported");
    }
    if (source.config) {
        std::uint64_t parseUs = 0;
        const Tree config = parseConfig(source.config, parseUs);
        store_->validate(config.get());
    } else {
        store_->validate(*source.ds);
    }
    return okReply();
}

nc_server_reply* Server::opCommit(Session& s) {
    setLastTiming({}, 0);
    checkWritable(ds::Datastore::Running, s);
    checkWritable(ds::Datastore::Candidate, s);
    const auto timing = store_->commit();
    locks_.candidateClean();
    setLastTiming(timing, 0);
    return okReply();
}

nc_server_reply* Server::opDiscardChanges(Session& s) {
    checkWritable(ds::Datastore::Candidate, s);
    store_->discardChanges();
    locks_.candidateClean();
    return okReply();
}

nc_server_reply* Server::opGetSchema(const lyd_node* rpc) {
    const std::string identifier = valueOf(child(rpc, "identifier"));
    const std::string version = valueOf(child(rpc, "version"));
    std::string format = valueOf(child(rpc, "format"));
    if (const auto colon = format.find(':'); colon != std::string::npos) {
        format = format.substr(colon + 1);
    }
    LYS_OUTFORMAT outFormat = LYS_OUT_YANG;
    if (format == "yin") {
        outFormat = LYS_OUT_YIN;
    } else if (!format.empty() && format != "yang") {
        throw RpcError("invalid-value", ErrorType::Application,
                       "schema format " + format + " is not supported")
            .withBadElement("format");
    }
    const lys_module* module = version.empty()
                                   ? ly_ctx_get_module_latest(ctx_.get(), identifier.c_str())
                                   : ly_ctx_get_module(ctx_.get(), identifier.c_str(), version.c_str());
    char* raw = nullptr;
    if (module) {
        if (lys_print_mem(&raw, module, outFormat, 0) != LY_SUCCESS) {
            throw YangError("cannot print module " + identifier, ctx_.get());
        }
    } else {
        const lysp_submodule* sub =
            ly_ctx_get_submodule(ctx_.get(), identifier.c_str(), version.empty() ? nullptr : version.c_str());
        if (!sub) {
            throw RpcError("invalid-value", ErrorType::Application,
                           "no schema " + identifier + (version.empty() ? "" : "@" + version))
                .withBadElement("identifier");
        }
        ly_out* out = nullptr;
        if (ly_out_new_memory(&raw, 0, &out) != LY_SUCCESS) {
            throw YangError("cannot print submodule " + identifier, ctx_.get());
        }
        const LY_ERR printed = lys_print_submodule(out, sub, outFormat, 0, 0);
        ly_out_free(out, nullptr, 0);
        if (printed != LY_SUCCESS) {
            const CString partial{raw};
            throw YangError("cannot print submodule " + identifier, ctx_.get());
        }
    }
    const CString text{raw};
    return dataReply(rpc, text ? text.get() : "", LYD_ANYDATA_STRING);
}

} // namespace ncstore::netconfd
