// What the operation handlers (ops/) are given: the services they work with, and nothing of the
// server's own (its listener, its threads, the session loop).
//
// Promises: every reference outlives the dispatcher the handlers are registered in (Server owns
// them all and stops every session before it destroys any).
#pragma once

#include "dispatcher.hpp"

#include <cstddef>
#include <memory>

namespace ncstore::ds {
class Store;
}

namespace ncstore::netconfd {

class AccessControl;
class ReadPath;
class SessionTable;
class Stats;
namespace notify {
class Service;
}
namespace history {
class History;
}
namespace confirm {
class ConfirmedCommit;
}

struct Services {
    const ly_ctx* ctx;
    ds::Store& store;
    AccessControl& nacm;                ///< NACM: the policy in force, its counters
    notify::Service& notifications;     ///< the event bus and the replay log
    confirm::ConfirmedCommit& confirm;  ///< :confirmed-commit state
    history::History& history;          ///< the commit history
    const ReadPath& reads;              ///< every read reply goes through it
    SessionTable& sessions;             ///< the sessions there are (kill-session)
    Stats& stats;                       ///< the server's counters
    std::size_t notificationQueueBytes; ///< a subscriber's bound (--notification-queue-bytes)
};

/// The dispatcher entry of `ops`'s handler `fn`: `ops` lives as long as the entry does.
template <typename Ops>
Operation handler(const std::shared_ptr<Ops>& ops, Reply (Ops::*fn)(Request&), bool write = false) {
    return Operation{[ops, fn](Request& r) { return ((*ops).*fn)(r); }, write};
}

} // namespace ncstore::netconfd
