// The RPC dispatch table: {module, operation} -> handler.
//
// Promises: an operation is served exactly when it has an entry; everything else the context
// can parse is refused with operation-not-supported. Before any handler runs, NACM decides
// whether the session's user may execute the operation (RFC 8341 3.4.4): if not, access-denied
// (error-type protocol), one denied-operations, and the handler does not run. The table is filled once,
// before the first session, and only read afterwards (no lock).
#pragma once

#include "reply.hpp"
#include "rpcparse.hpp"
#include "session.hpp"

#include "ncstore/datastore.hpp"

#include <libyang/libyang.h>

#include <functional>
#include <map>
#include <string>
#include <utility>

namespace ncstore::netconfd {

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

class DispatchTable {
public:
    void add(std::string module, std::string name, Operation op) {
        table_.insert_or_assign({std::move(module), std::move(name)}, std::move(op));
    }
    /// The entry of the operation `schema` (an RPC or action node), or nullptr.
    const Operation* find(const lysc_node* schema) const {
        if (!schema) {
            return nullptr;
        }
        const auto it = table_.find({schema->module->name, schema->name});
        return it == table_.end() ? nullptr : &it->second;
    }

private:
    std::map<std::pair<std::string, std::string>, Operation> table_;
};

} // namespace ncstore::netconfd
