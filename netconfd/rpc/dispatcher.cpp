// Serving one RPC: the table lookup, the NACM exec check, the error mapping and the statistics
// around every handler.
#include "dispatcher.hpp"
#include "rpcargs.hpp"
#include "sessionaccess.hpp"
#include "stats.hpp"

#include "ncstore/log.hpp"

#include "filter.hpp"

#include <chrono>

namespace ncstore::netconfd {

void Dispatcher::add(std::string module, std::string name, Operation op) {
    auto entry = std::make_shared<const Operation>(std::move(op));
    std::unique_lock lock(mutex_);
    table_.insert_or_assign({std::move(module), std::move(name)}, std::move(entry));
}

bool Dispatcher::remove(const std::string& module, const std::string& name) {
    std::unique_lock lock(mutex_);
    return table_.erase({module, name}) > 0;
}

std::shared_ptr<const Operation> Dispatcher::find(const lysc_node* schema) const {
    if (!schema) {
        return nullptr;
    }
    std::shared_lock lock(mutex_);
    const auto it = table_.find(std::pair<std::string, std::string>(schema->module->name, schema->name));
    return it == table_.end() ? nullptr : it->second;
}

Reply Dispatcher::dispatch(ParsedRpc& parsed, Session& s) const {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const lyd_node* rpc = parsed.op.get();
    const std::string name = rpc && rpc->schema ? rpc->schema->name : "?";
    ++s.inRpcs;
    ++stats_.inRpcs;

    const std::shared_ptr<const Operation> operation = find(rpc ? rpc->schema : nullptr);
    Reply reply;
    try {
        // Held for the whole RPC: a policy change meanwhile applies from the next one.
        const std::shared_ptr<const nacm::Access> access = s.access.current();
        const nacm::Access* limited = access->permitsAll() ? nullptr : access.get();
        const std::string module = rpc && rpc->schema ? rpc->schema->module->name : "?";
        if (limited && rpc && rpc->schema && !limited->exec(rpc->schema)) {
            ++nacm_.counters().deniedOperations;
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
    } catch (const filter::Stopped& e) {
        reply = Reply::error(RpcError(e.tag, ErrorType::Application, e.what()));
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
