// The NETCONF operations of the server, one family per file of ops/. Each add...() registers its
// family's handlers in a Dispatcher (rpc/dispatcher.hpp); the handlers work on the Services they
// are given (services.hpp) and on nothing else. Server's constructor calls them
// (server/server.cpp, "operations"): a new family is a file here, its add function declared
// below, and one line there.
#pragma once

#include "services.hpp"

namespace ncstore::netconfd {

/// RFC 6241 7.1-7.4, 8.6: get, get-config, edit-config, copy-config, delete-config, validate.
void addConfigOperations(Dispatcher& d, const Services& svc);
/// RFC 6241 7.5, 7.6: lock, unlock.
void addLockOperations(Dispatcher& d, const Services& svc);
/// RFC 6241 8.3, 8.4: commit (confirmed or not), cancel-commit, discard-changes.
void addCommitOperations(Dispatcher& d, const Services& svc);
/// RFC 6241 7.8, 7.9: close-session, kill-session.
void addSessionOperations(Dispatcher& d, const Services& svc);
/// RFC 6022 3.1: get-schema.
void addMonitoringOperations(Dispatcher& d, const Services& svc);
/// RFC 8526: get-data, edit-data.
void addNmdaOperations(Dispatcher& d, const Services& svc);
/// ncstore-commits: rollback, compare.
void addHistoryOperations(Dispatcher& d, const Services& svc);

} // namespace ncstore::netconfd
