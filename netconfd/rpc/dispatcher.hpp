// The RPC dispatcher: {module, operation} -> handler, changeable while the server runs.
//
// Promises:
//  - An operation is served exactly when it has an entry; everything else the context can parse
//    is refused with operation-not-supported.
//  - Entries may be added and removed at any time, from any thread (an application registers
//    its own RPCs, a module's operations come and go with it): lookups take a shared lock for
//    the time of a map search only, never while a handler runs. A handler that is removed while
//    it serves an RPC finishes that RPC (the lookup holds it); the next lookup no longer finds it.
//  - Before any handler runs, NACM decides whether the session's user may execute the operation
//    (RFC 8341 3.4.4): if not, access-denied (error-type protocol), one denied-operations, and
//    the handler does not run.
//  - Whatever a handler throws becomes the rpc-error of its reply (RpcError as it is, ds::Error
//    and filter::Error mapped to their tags, anything else operation-failed); every RPC is
//    counted in the statistics with its time (and a write's split of it).
#pragma once

#include "reply.hpp"
#include "rpcparse.hpp"
#include "session.hpp"

#include "ncstore/datastore.hpp"

#include <libyang/libyang.h>

#include <functional>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <utility>

namespace ncstore::netconfd {

class AccessControl;
class Stats;

/// One RPC being served.
struct Request {
    ParsedRpc& rpc;     ///< the parsed message (a handler may take its parsed <config>)
    const lyd_node* op; ///< the operation node
    Session& session;
    /// NACM: what the session's user may do, for this RPC; nullptr when nothing can be denied
    /// (NACM off, the recovery session, a user whose rules permit everything): then no read or
    /// write is checked at all.
    const nacm::Access* access = nullptr;
};

/// Who writes, for the store (its lock checks and change sets).
inline ds::WriteContext writer(const Session& s) {
    return {s.id, s.user, nullptr, s.host};
}

struct Operation {
    std::function<Reply(Request&)> handler;
    /// A write of a datastore: its timing split goes to the statistics.
    bool write = false;
};

class Dispatcher {
public:
    /// `nacm` decides and counts denied operations; `stats` counts every RPC. Both outlive it.
    Dispatcher(AccessControl& nacm, Stats& stats) : nacm_(nacm), stats_(stats) {}

    /// Adds (or replaces) the handler of module:name. Any thread, any time.
    void add(std::string module, std::string name, Operation op);
    /// Removes the entry of module:name; false when there was none. Any thread, any time.
    bool remove(const std::string& module, const std::string& name);
    /// The entry of the operation `schema` (an RPC or action node), or nullptr.
    std::shared_ptr<const Operation> find(const lysc_node* schema) const;

    /// Runs one parsed message for session `s` and returns its reply (never throws).
    Reply dispatch(ParsedRpc& request, Session& s) const;

private:
    AccessControl& nacm_;
    Stats& stats_;
    mutable std::shared_mutex mutex_;
    std::map<std::pair<std::string, std::string>, std::shared_ptr<const Operation>, std::less<>> table_;
};

} // namespace ncstore::netconfd
