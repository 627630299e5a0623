// Serving one RPC: the table lookup, the error mapping and the statistics around every handler.
#include "dispatch.hpp"
#include "rpcargs.hpp"
#include "server.hpp"

#include "ncstore/log.hpp"

#include "filter.hpp"

#include <chrono>

namespace ncstore::netconfd {

void Server::registerOperations() {
    auto op = [this](Reply (Server::*handler)(Request&), bool write = false) {
        return Operation{[this, handler](Request& r) { return (this->*handler)(r); }, write};
    };
    const std::string nc = "ietf-netconf";
    dispatch_.add(nc, "get", op(&Server::opGet));
    dispatch_.add(nc, "get-config", op(&Server::opGetConfig));
    dispatch_.add(nc, "edit-config", op(&Server::opEditConfig, true));
    dispatch_.add(nc, "copy-config", op(&Server::opCopyConfig, true));
    dispatch_.add(nc, "delete-config", op(&Server::opDeleteConfig, true));
    dispatch_.add(nc, "validate", op(&Server::opValidate));
    dispatch_.add(nc, "commit", op(&Server::opCommit, true));
    dispatch_.add(nc, "cancel-commit", op(&Server::opCancelCommit, true));
    dispatch_.add(nc, "discard-changes", op(&Server::opDiscardChanges));
    dispatch_.add(nc, "lock", op(&Server::opLock));
    dispatch_.add(nc, "unlock", op(&Server::opUnlock));
    dispatch_.add(nc, "close-session", op(&Server::opCloseSession));
    dispatch_.add(nc, "kill-session", op(&Server::opKillSession));
    dispatch_.add("ietf-netconf-monitoring", "get-schema", op(&Server::opGetSchema));
    dispatch_.add("ietf-netconf-nmda", "get-data", op(&Server::opGetData));
    dispatch_.add("ietf-netconf-nmda", "edit-data", op(&Server::opEditData, true));
    dispatch_.add("notifications", "create-subscription", op(&Server::opCreateSubscription));
    const std::string sn = "ietf-subscribed-notifications";
    dispatch_.add(sn, "establish-subscription", op(&Server::opEstablishSubscription));
    dispatch_.add(sn, "modify-subscription", op(&Server::opModifySubscription));
    dispatch_.add(sn, "delete-subscription", op(&Server::opDeleteSubscription));
    dispatch_.add(sn, "kill-subscription", op(&Server::opKillSubscription));
    dispatch_.add("ncstore-commits", "rollback", op(&Server::opRollback, true));
    dispatch_.add("ncstore-commits", "compare", op(&Server::opCompare));
}

Reply Server::dispatch(ParsedRpc& parsed, Session& s) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const lyd_node* rpc = parsed.op.get();
    const std::string name = rpc && rpc->schema ? rpc->schema->name : "?";
    ++s.inRpcs;
    ++stats_.inRpcs;

    const Operation* operation = dispatch_.find(rpc ? rpc->schema : nullptr);
    Reply reply;
    try {
        // Held for the whole RPC: a policy change meanwhile applies from the next one.
        const std::shared_ptr<const nacm::Access> access = s.access.current();
        const nacm::Access* limited = access->permitsAll() ? nullptr : access.get();
        const std::string module = rpc && rpc->schema ? rpc->schema->module->name : "?";
        if (limited && rpc && rpc->schema && !limited->exec(rpc->schema)) {
            ++nacm_->counters().deniedOperations;
            NCS_LOG(info) << "NACM: session " << s.id << " of " << s.user << ": " << module << ":" << name
                          << " denied";
            throw RpcError::accessDenied("access denied: user '" + s.user + "' may not execute " + module +
                                             ":" + name,
                                         {}, ErrorType::Protocol);
        }
        if (!operation) {
            throw RpcError::operationNotSupported("operation " + module + ":" + name + " is not supported");
        }
        Request request{parsed, rpc, s, limited};
        reply = operation->handler(request);
    } catch (const RpcError& e) {
        reply = Reply::error(e);
    } catch (const ds::Error& e) {
        reply = Reply::error(fromDatastore(e));
    } catch (const filter::Error& e) {
        reply = Reply::error(RpcError::invalidValue(std::string("invalid filter: ") + e.what(), "filter"));
    } catch (const std::exception& e) {
        NCS_LOG(error) << "session " << s.id << " " << name << ": " << e.what();
        reply = Reply::error(RpcError::operationFailed(e.what()));
    } catch (...) {
        reply = Reply::error(RpcError::operationFailed("internal error"));
    }
    const bool failed = reply.kind == Reply::Kind::Error;
    const bool isWrite = operation && operation->write;
    const auto us = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
    const ds::WriteTiming timing = reply.write.value_or(ds::WriteTiming{});
    stats_.record(name, us, failed, reply.parseUs, isWrite ? &timing : nullptr);
    NCS_LOG(debug) << "session " << s.id << " " << name << " " << rpcargs::datastoreForLog(rpc) << " " << us
                   << "us" << (failed ? std::string(" error ") + toString(reply.errors.front().tag) : "")
                   << (isWrite ? " (parse " + std::to_string(reply.parseUs) + "us lock-wait " +
                                     std::to_string(timing.lockWaitUs) + "us apply " +
                                     std::to_string(timing.applyUs) + "us validate " +
                                     std::to_string(timing.validateUs) + "us serialize " +
                                     std::to_string(timing.serializeUs) + "us commit-wait " +
                                     std::to_string(timing.commitWaitUs) + "us)" +
                                     (timing.wholeTreeValidation ? " validated whole-tree" : "")
                               : "");
    return reply;
}

} // namespace ncstore::netconfd
